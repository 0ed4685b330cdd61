"""Run one agent-supplied statement read-only: the parser gate, a row-limit wrapper, a read-only session.

Shared by every verb that executes SQL (``sql.execute``, ``sl.query``) so the layers cannot drift apart.
The connection's ``statement_timeout_s`` is a ceiling: an agent's ``timeout_s`` can lower it, never
raise it (ADR 0028). The driver is leased from the connection's pool.
Parsing (the gate, the wrapper) and the query run in worker threads: the callers are async handlers,
whose event loop serves every other agent meanwhile (ADR 0027).

Over MCP (``wire``) the statement must also suit the session it runs in (ADR 0032): not on a
PostgreSQL role that is a superuser or may read server files or run programs (unless the connection
says ``allowPrivilegedRole: true``), and no bare call that a user overload of a built-in could catch.
What runs starts with ``/* khive:query */``, so query history can leave khive's own traffic out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

from khive.connections.driver import Driver, QueryResult
from khive.connections.pg_session import SessionFacts
from khive.connections.sqlgate import GateDecision, check_sql, wrap_with_limit
from khive.connections.types import QUERY_SQL_MARK
from khive.errors import KhiveError, OpError
from khive.sink import MAX_SAVE_BYTES
from khive.threads import run_blocking
from khive.values import ANSWER_ROW_BYTES, DEFAULT_SHOWN, Shown

if TYPE_CHECKING:
    from khive.connections.config import ConnectionConfig
    from khive.connections.pool import DriverPools


class Connections(Protocol):
    """What a read-only run needs of the runtime (``khive.services.Services`` has both)."""

    def connection(self, name: str) -> ConnectionConfig: ...

    @property
    def drivers(self) -> DriverPools: ...


TIMEOUT_DOC = "seconds the statement may run; at most (and by default) the connection's statement_timeout_s"
SAVED_RESULT_BYTES = MAX_SAVE_BYTES  # a result written to a file (save_to) may be as large as a saved file
MAX_RESULT_BYTES = MAX_SAVE_BYTES
MAX_BYTES_DOC = (f"bytes of JSON the rows may take; rows past it are left out and the result says truncated"
                 f" (default {DEFAULT_SHOWN.result_bytes}, with save_to {SAVED_RESULT_BYTES}); text values are cut"
                 f" after {DEFAULT_SHOWN.text_chars} characters, binary ones after {DEFAULT_SHOWN.binary_bytes} bytes")


@dataclass(frozen=True)
class RowAllowance:
    """What a verb's rows may hold, and why, when a request's share made it less than asked or the default."""

    shown: Shown
    lowered_by_share: str = ""

    def notes(self, truncated: bool) -> list[str]:
        """The share's note, only when rows were left out (else it changed nothing)."""
        return [self.lowered_by_share] if truncated and self.lowered_by_share else []


def result_shown(max_bytes: int | None, saving: bool, share: int | None = None, http: bool = False) -> RowAllowance:
    """What a verb's rows may hold: ``max_bytes`` when asked, else the default for the answer or for a file.

    ``share``: the op's part of an MCP answer's rows (``Context.row_share``). It lowers the default, and over
    HTTP an explicit ``max_bytes`` too: an answer over 1 MiB never reaches the Python SDK's HTTP client."""
    if saving:  # the answer holds where the file is, not the rows
        return RowAllowance(replace(DEFAULT_SHOWN, result_bytes=max_bytes or SAVED_RESULT_BYTES))
    wanted = max_bytes or DEFAULT_SHOWN.result_bytes
    if share is None or wanted <= share or (max_bytes is not None and not http):
        return RowAllowance(replace(DEFAULT_SHOWN, result_bytes=wanted))
    why = (f"max_bytes was {share}, not {wanted}: the ops of one MCP request share {ANSWER_ROW_BYTES} bytes of "
           f"rows (an answer over 1 MiB does not reach MCP clients over HTTP); ask in fewer ops, or save_to "
           f"writes up to {SAVED_RESULT_BYTES} bytes to a file")
    return RowAllowance(replace(DEFAULT_SHOWN, result_bytes=share), why)


@dataclass(frozen=True)
class StatementTimeout:
    """The timeout a statement runs with, and which limit it is."""

    seconds: float
    source: Literal["request", "connection"]  # the agent's timeout_s, or the connection's statement_timeout_s
    note: str = ""  # set when the agent asked for more than the connection allows

    def to_dict(self) -> dict[str, float | str]:
        return {"seconds": self.seconds, "source": self.source}


def statement_timeout(requested: float | None, connection: str, config: ConnectionConfig) -> StatementTimeout:
    """min(the agent's timeout_s, the connection's statement_timeout_s); the connection's when none is asked."""
    ceiling = config.statement_timeout_s
    if requested is None:
        return StatementTimeout(ceiling, "connection")
    if requested <= ceiling:
        return StatementTimeout(requested, "request")
    return StatementTimeout(ceiling, "connection",
                            f"timeout_s={requested:g} is above connection {connection!r}'s statement_timeout_s "
                            f"({ceiling:g}s), which is a ceiling: the statement ran with {ceiling:g}s")


@dataclass(frozen=True)
class ReadOnlyRun:
    result: QueryResult
    sql: str  # what ran: the statement rebuilt from its parse tree, wrapped in the row limit (less the marker)
    decision: GateDecision
    timeout: StatementTimeout


async def run_read_only(runtime: Connections, connection: str, sql: str, *, limit: int, timeout_s: float | None,
                        shown: Shown = DEFAULT_SHOWN, wire: bool) -> ReadOnlyRun:
    """``wire``: the statement came over MCP (an agent's), not from the operator's CLI. ``shown``: how much of
    the rows and of each value reach the caller (khive/values.py)."""
    config = runtime.connection(connection)
    timeout = statement_timeout(timeout_s, connection, config)
    decision = await run_blocking(lambda: check_sql(sql, config.driver, wire=wire,
                                                    allow_functions=config.allow_functions, timeout_s=timeout.seconds))
    _refuse_unless_allowed(decision, sql)
    pool = runtime.drivers.pool(connection)

    def suits_session(driver: Driver) -> None:
        facts: SessionFacts | None = getattr(driver, "session_facts", lambda: None)()
        if facts is None:
            return
        if facts.privileges and not config.allowPrivilegedRole:
            raise _privileged(connection, facts)
        if facts.shadowed:
            _refuse_unless_allowed(check_sql(sql, config.driver, wire=True, allow_functions=config.allow_functions,
                                             timeout_s=timeout.seconds, shadowed=facts.shadowed), sql)

    def run() -> tuple[QueryResult, str]:
        wrapped = wrap_with_limit(sql, config.driver, limit)
        marked = f"{QUERY_SQL_MARK} {wrapped}"
        for attempt in (1, 2):
            with pool.lease(timeout.seconds) as lease:  # waiting for a driver is bounded by the same timeout
                try:
                    if wire:
                        suits_session(lease.driver)
                    return lease.driver.execute(marked, limit=limit, timeout_s=timeout.seconds,
                                                shown=shown), wrapped
                except KhiveError as exc:
                    if exc.code == "connection_failed" and lease.reused and attempt == 1:
                        lease.discard = True  # it went stale while idle (a server restart, an idle timeout)
                        pool.drop_idle()  # and so did the drivers idle beside it
                        continue  # a read-only statement: safe to run once more on a fresh connection
                    if exc.code == "statement_timeout":
                        _name_the_limit(exc, timeout)
                    raise
        raise AssertionError("unreachable: the second attempt returns or raises")

    result, wrapped = await run_blocking(run)
    return ReadOnlyRun(result, wrapped, decision, timeout)


def _refuse_unless_allowed(decision: GateDecision, sql: str) -> None:
    if not decision.allowed:
        raise OpError(f"refused: {decision.reason}", code="sql_refused",
                      details={"reason": decision.reason, "statement_kind": decision.statement_kind,
                               "gate_code": decision.code, "sql": sql})


def _privileged(connection: str, facts: SessionFacts) -> OpError:
    held = " and ".join(facts.privileges)
    fix = (f"connect agents as a role with SELECT on the analytics schemas only (README: Security model), or "
           f"set connections.{connection}.allowPrivilegedRole: true in khive.yaml")
    return OpError(f"connection {connection!r} connects as role {facts.role!r}, which holds {held}: such a role can "
                   f"read the server's files or run programs through SQL the gate cannot see, so agents' SQL does "
                   f"not run on it; fix: {fix}", code="privileged_role",
                   details={"connection": connection, "role": facts.role, "privileges": list(facts.privileges),
                            "fix": fix})


def _name_the_limit(exc: KhiveError, timeout: StatementTimeout) -> None:
    which = ("the connection's statement_timeout_s (raise it in khive.yaml to allow longer statements)"
             if timeout.source == "connection" else "this request's timeout_s")
    exc.message = f"{exc.message}; the limit was {which}"
    exc.args = (exc.message,)
    exc.details["timeout_source"] = timeout.source
