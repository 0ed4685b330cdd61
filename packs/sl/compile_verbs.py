"""``sl.compile`` and ``sl.query``: measures by dimensions over a connection's sources, compiled and run.

Sources are read from ``semantic-layer/<connection>/*.yaml`` on every call (they are small and an
agent may just have edited one); reading and compiling run in a worker thread, off the event loop.
``sl.query`` runs the compiled statement exactly as ``sql.execute`` runs an agent's: the read-only
gate, a row limit, a read-only driver session in a worker thread. ``sl.compile`` is a plain function
(the dispatcher runs it in a worker); ``sl.query`` is an orchestrator whose compile step goes
through ``ctx.run_blocking`` (ADR 0027).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from khive import sink
from khive.connections.readonly import MAX_BYTES_DOC, MAX_RESULT_BYTES, TIMEOUT_DOC, result_shown, run_read_only
from khive.context import Context
from khive.errors import NotFound
from khive.transports import MCP_HTTP
from khive.verbs import Params, Verb
from packs.sl.compiler import AdHocMeasure, Compiled, CompileError, compile_query
from packs.sl.models import Source
from packs.sl.results import CompileResult, QueryResult
from packs.sl.store import SL_ROOT, list_sources
from packs.sl.validate import parse_source

if TYPE_CHECKING:
    from khive.services import Services


Include = Literal["sql", "plan"]
MAX_ITEMS = 100  # measures, dimensions, filters, ...: each one is planned and parsed; no query needs more


def load_sources(runtime: Services, connection: str) -> tuple[dict[str, Source], list[str]]:
    """The connection's sources by name, and a note for every file that did not load (it is skipped)."""
    runtime.connection(connection)  # unknown connection: connection_not_found
    found = list_sources(runtime.files, connection)
    if not found:
        raise NotFound(f"no semantic-layer sources for connection {connection!r}: write "
                       f"{SL_ROOT}/{connection}/<source>.yaml", code="sources_not_found",
                       details={"connection": connection})
    sources: dict[str, Source] = {}
    problems: list[str] = []
    for _, _, path in found:
        try:
            source = parse_source(runtime.files.read_text(path) or "", path)
        except ValueError as exc:  # located: file, line, field and fix
            problems.append(f"{path} skipped: {exc}")
            continue
        if source.name in sources:
            problems.append(f"{path} skipped: source {source.name!r} is already defined by another file")
            continue
        sources[source.name] = source
    return sources, problems


class CompileParams(Params):
    connection: str
    measures: list[str | AdHocMeasure] = Field(
        min_length=1, max_length=MAX_ITEMS,
        description="source.measure names (unqualified when unique) or {name, agg, expr, source}")
    dimensions: list[str] = Field(default_factory=list, max_length=MAX_ITEMS,
                                  description="source.column names to group by")
    filters: list[str] = Field(default_factory=list, max_length=MAX_ITEMS,
                               description="SQL predicates over source.column names")
    segments: list[str] = Field(default_factory=list, max_length=MAX_ITEMS,
                                description="source.segment names (named filters)")
    time_grain: Literal["day", "week", "month", "quarter", "year"] | None = None
    order_by: list[str] = Field(default_factory=list, max_length=MAX_ITEMS,
                                description="measure or dimension names, optional ' desc'")
    via: list[str] = Field(default_factory=list, max_length=MAX_ITEMS,
                           description="sources or join roles the join path must go through, "
                                       "e.g. [\"customer\"] for payment -> customer -> store")
    limit: int | None = Field(default=None, ge=1, description="LIMIT of the compiled query")
    include: list[Include] = Field(default_factory=lambda: list[Include](["sql"]), description="sql and/or plan")


def _compile(params: CompileParams, ctx: Context) -> tuple[Compiled, list[str], str]:
    dialect = ctx.runtime.connection(params.connection).driver
    sources, problems = load_sources(ctx.runtime, params.connection)
    try:
        compiled = compile_query(sources, measures=params.measures, dimensions=params.dimensions,
                                 filters=params.filters, segments=params.segments, time_grain=params.time_grain,
                                 order_by=params.order_by, limit=params.limit, dialect=dialect, via=params.via)
    except CompileError as exc:
        if not problems:
            raise
        raise CompileError(f"{exc.message} (note: {len(problems)} source file(s) did not load: {'; '.join(problems)})",
                           code=exc.code, details={**exc.details, "skipped_files": problems}) from exc
    return compiled, problems, dialect


def _shaped(params: CompileParams, compiled: Compiled, problems: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"connectionId": params.connection}
    if "sql" in params.include:
        result["sql"] = compiled.sql
    if "plan" in params.include:
        result["plan"] = compiled.plan
    result["notes"] = [*problems, *compiled.notes]
    return result


def sl_compile(params: CompileParams, ctx: Context) -> dict[str, Any]:
    """Compile measures by dimensions to SQL for a connection; include=["sql", "plan"] adds the join plan."""
    compiled, problems, _ = _compile(params, ctx)
    return _shaped(params, compiled, problems)


class QueryParams(CompileParams):
    max_rows: int = Field(default=1000, ge=1, le=100_000, description="rows returned; more are flagged truncated")
    timeout_s: float | None = Field(default=None, gt=0, le=3600, description=TIMEOUT_DOC)
    max_bytes: int | None = Field(default=None, ge=1024, le=MAX_RESULT_BYTES, description=MAX_BYTES_DOC)
    save_to: str | None = Field(default=None, description=sink.SAVE_TO_DOC)


async def sl_query(params: QueryParams, ctx: Context) -> dict[str, Any]:
    """Compile measures by dimensions and run the SQL read-only; returns columns, rows, truncated and the SQL."""
    compiled, problems, _ = await ctx.run_blocking(_compile, params, ctx)
    allowance = result_shown(params.max_bytes, bool(params.save_to), ctx.row_share, ctx.transport == MCP_HTTP)
    ran = await run_read_only(ctx.runtime, params.connection, compiled.sql, limit=params.max_rows,
                              timeout_s=params.timeout_s, shown=allowance.shown,
                              wire=ctx.on_wire)
    result, shaped = ran.result, _shaped(params, compiled, problems)
    shaped["notes"] += [note for note in (ran.timeout.note, *result.notes) if note] + allowance.notes(result.truncated)
    answer = {**shaped, "columns": result.columns, "rows": result.rows, "rowCount": result.row_count,
              "truncated": result.truncated, "elapsedMs": result.elapsed_ms, "timeout": ran.timeout.to_dict()}
    if params.save_to:
        return await ctx.run_blocking(sink.save_table, ctx.runtime.files, params.save_to, answer,
                                      author=ctx.principal)
    return answer


COMPILE_VERBS = (
    Verb("sl.compile", CompileParams, sl_compile, sl_compile.__doc__ or "", result=CompileResult),
    Verb("sl.query", QueryParams, sl_query, sl_query.__doc__ or "", write_keys=lambda p: sink.write_key(p.save_to),
         write_key_rule="export:exports/<save_to> (only with save_to)", result=QueryResult),
)
