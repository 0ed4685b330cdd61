"""``sql.execute`` and ``sql.validate``: read-only SQL behind the parser gate, a read-only session and a limit."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from khive import sink
from khive.connections.config import DriverName
from khive.connections.readonly import MAX_BYTES_DOC, MAX_RESULT_BYTES, TIMEOUT_DOC, result_shown, run_read_only
from khive.connections.sqlgate import check_sql
from khive.context import Context
from khive.transports import MCP_HTTP
from khive.verbs import Params, Verb
from packs.scan.results import ExecuteResult, ValidateResult

Dialect = DriverName  # driver names are sqlglot dialect names


class ExecuteParams(Params):
    connection: str
    sql: str = Field(min_length=1)
    limit: int = Field(default=100, ge=1, le=100_000)
    timeout_s: float | None = Field(default=None, gt=0, le=3600, description=TIMEOUT_DOC)
    max_bytes: int | None = Field(default=None, ge=1024, le=MAX_RESULT_BYTES, description=MAX_BYTES_DOC)
    save_to: str | None = Field(default=None, description=sink.SAVE_TO_DOC)


async def execute(params: ExecuteParams, ctx: Context) -> dict[str, Any]:
    """Run one read-only statement (SELECT / WITH / VALUES / EXPLAIN); rows limited, values as docs/values.md says."""
    # async: the database wait is awaited (run_read_only parses and runs in worker threads; ADR 0027)
    allowance = result_shown(params.max_bytes, bool(params.save_to), ctx.row_share, ctx.transport == MCP_HTTP)
    ran = await run_read_only(ctx.runtime, params.connection, params.sql, limit=params.limit,
                              timeout_s=params.timeout_s, shown=allowance.shown,
                              wire=ctx.on_wire)
    result, wrapped, decision = ran.result, ran.sql, ran.decision
    answer = {"connectionId": params.connection, "columns": result.columns, "rows": result.rows,
              "rowCount": result.row_count, "truncated": result.truncated, "elapsedMs": result.elapsed_ms,
              "sql": wrapped, "tables": list(decision.tables), "timeout": ran.timeout.to_dict(),
              "notes": [note for note in (ran.timeout.note, *result.notes) if note] + allowance.notes(result.truncated)}
    if params.save_to:
        return await ctx.run_blocking(sink.save_table, ctx.runtime.files, params.save_to, answer,
                                      author=ctx.principal)
    return answer


class ValidateParams(Params):
    sql: str = Field(min_length=1)
    dialect: Dialect = "postgres"


def validate(params: ValidateParams, ctx: Context) -> dict[str, Any]:
    """Check whether sql.execute would accept a statement, and why not."""
    decision = check_sql(params.sql, params.dialect, wire=ctx.on_wire)
    return {"allowed": decision.allowed, "reason": decision.reason, "statementKind": decision.statement_kind,
            "code": decision.code, "functions": list(decision.functions), "tables": list(decision.tables)}


SQL_VERBS = (
    Verb("sql.execute", ExecuteParams, execute, execute.__doc__ or "", write_keys=lambda p: sink.write_key(p.save_to),
         write_key_rule="export:exports/<save_to> (only with save_to)", result=ExecuteResult),
    Verb("sql.validate", ValidateParams, validate, validate.__doc__ or "", result=ValidateResult),
)
