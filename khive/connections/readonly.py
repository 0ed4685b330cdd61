"""Run one agent-supplied statement read-only: the parser gate, a row-limit wrapper, a read-only session.

Shared by every verb that executes SQL (``sql.execute``, ``sl.query``) so the layers cannot drift apart.
Parsing (the gate, the wrapper) and the query run in worker threads: the callers are async handlers,
whose event loop serves every other agent meanwhile (ADR 0027).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from khive.connections.driver import QueryResult
from khive.connections.sqlgate import GateDecision, check_sql, wrap_with_limit
from khive.errors import OpError
from khive.threads import run_blocking

if TYPE_CHECKING:
    from khive.runtime import Runtime


@dataclass(frozen=True)
class ReadOnlyRun:
    result: QueryResult
    sql: str  # what ran: the statement rebuilt from its parse tree, wrapped in the row limit
    decision: GateDecision


async def run_read_only(runtime: Runtime, connection: str, sql: str, *, limit: int, timeout_s: float
                        ) -> ReadOnlyRun:
    config = runtime.connection(connection)
    decision = await run_blocking(check_sql, sql, config.driver, allow_functions=config.allow_functions,
                                  timeout_s=timeout_s)
    if not decision.allowed:
        raise OpError(f"refused: {decision.reason}", code="sql_refused",
                      details={"reason": decision.reason, "statement_kind": decision.statement_kind,
                               "gate_code": decision.code, "sql": sql})

    def run() -> tuple[QueryResult, str]:
        wrapped = wrap_with_limit(sql, config.driver, limit)
        driver = runtime.open_driver(connection)
        try:
            return driver.execute(wrapped, limit=limit, timeout_s=timeout_s), wrapped
        finally:
            driver.close()

    result, wrapped = await run_blocking(run)
    return ReadOnlyRun(result, wrapped, decision)
