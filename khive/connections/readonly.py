"""Run one agent-supplied statement read-only: the parser gate, a row-limit wrapper, a read-only session.

Shared by every verb that executes SQL (``sql.execute``, ``sl.query``) so the layers cannot drift apart.
The connection's ``statement_timeout_s`` is a ceiling: an agent's ``timeout_s`` can lower it, never
raise it (ADR 0028). The driver is leased from the connection's pool.
Parsing (the gate, the wrapper) and the query run in worker threads: the callers are async handlers,
whose event loop serves every other agent meanwhile (ADR 0027).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from khive.connections.driver import QueryResult
from khive.connections.sqlgate import GateDecision, check_sql, wrap_with_limit
from khive.errors import KhiveError, OpError
from khive.threads import run_blocking
from khive.values import DEFAULT_BYTES_SHOWN

if TYPE_CHECKING:
    from khive.connections.config import ConnectionConfig
    from khive.runtime import Runtime


TIMEOUT_DOC = "seconds the statement may run; at most (and by default) the connection's statement_timeout_s"


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
    sql: str  # what ran: the statement rebuilt from its parse tree, wrapped in the row limit
    decision: GateDecision
    timeout: StatementTimeout


async def run_read_only(runtime: Runtime, connection: str, sql: str, *, limit: int, timeout_s: float | None,
                        bytes_shown: int = DEFAULT_BYTES_SHOWN) -> ReadOnlyRun:
    """``bytes_shown``: how much of each binary value the rows show (khive/values.py)."""
    config = runtime.connection(connection)
    timeout = statement_timeout(timeout_s, connection, config)
    decision = await run_blocking(check_sql, sql, config.driver, allow_functions=config.allow_functions,
                                  timeout_s=timeout.seconds)
    if not decision.allowed:
        raise OpError(f"refused: {decision.reason}", code="sql_refused",
                      details={"reason": decision.reason, "statement_kind": decision.statement_kind,
                               "gate_code": decision.code, "sql": sql})
    pool = runtime.drivers.pool(connection)

    def run() -> tuple[QueryResult, str]:
        wrapped = wrap_with_limit(sql, config.driver, limit)
        for attempt in (1, 2):
            with pool.lease(timeout.seconds) as lease:  # waiting for a driver is bounded by the same timeout
                try:
                    return lease.driver.execute(wrapped, limit=limit, timeout_s=timeout.seconds,
                                                bytes_shown=bytes_shown), wrapped
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


def _name_the_limit(exc: KhiveError, timeout: StatementTimeout) -> None:
    which = ("the connection's statement_timeout_s (raise it in khive.yaml to allow longer statements)"
             if timeout.source == "connection" else "this request's timeout_s")
    exc.message = f"{exc.message}; the limit was {which}"
    exc.args = (exc.message,)
    exc.details["timeout_source"] = timeout.source
