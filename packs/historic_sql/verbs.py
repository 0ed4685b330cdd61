"""Verbs of the historic_sql pack: ingest, status, work units, submit, usage, patterns, probe."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import Field

from khive.context import Context
from khive.errors import InvalidArgs, KhiveError, NotFound, OpError, quoted
from khive.verbs import Params, Verb, Visibility
from packs.historic_sql import evidence, history, ingest, pages, results
from packs.historic_sql.bucketize import EXECUTION_BANDS, band, workload_tier
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.digest import frequency_tier
from packs.historic_sql.providers import describe, digest_units
from packs.historic_sql.schemas import PatternsOutput, UsageOutput, parse_output
from packs.historic_sql.stage import read_run_file, runs_dir, sync_ids


class IngestParams(Params):
    connection: str
    window_days: int | None = Field(default=None, ge=1, le=3650, description="override historicSql.windowDays")
    provider: Literal["deterministic", "agent", "sampling"] | None = Field(
        default=None, description="override historicSql.provider")


async def ingest_verb(params: IngestParams, ctx: Context) -> dict[str, Any]:
    """Read query history, stage per-table usage, digest the changed tables, project usage and patterns (operator)."""
    # async: progress and MCP sampling need the event loop; its steps run through ctx.run_blocking (ADR 0027)
    return await ingest.ingest(ctx, params.connection, window_days=params.window_days, provider=params.provider)


class ConnectionParams(Params):
    connection: str


def status(params: ConnectionParams, ctx: Context) -> dict[str, Any]:
    """The latest ingest's manifest summary, its pending work units and the run history."""
    ctx.runtime.connection(params.connection)
    manifest = ingest.latest_manifest(ctx, params.connection)
    units = evidence.pending(ctx.runtime.files, params.connection, manifest)
    keep = ("syncId", "dialect", "window", "counts", "parseStats", "readerFindings", "unknownTables")
    return {"connectionId": params.connection, **{k: manifest.get(k) for k in keep},
            "warnings": manifest.get("warnings", [])[:50], "pendingUnits": [u.id for u in units],
            "history": sync_ids(ctx.runtime.project, params.connection)}


class UnitsParams(Params):
    connection: str | None = Field(default=None, description="only this connection's units")
    limit: int = Field(default=20, ge=1, le=500)


def _connections(ctx: Context, only: str | None) -> list[str]:
    if only is not None:
        ctx.runtime.connection(only)
        return [only]
    return [name for name in sorted(ctx.runtime.config.connections) if sync_ids(ctx.runtime.project, name)]


def units(params: UnitsParams, ctx: Context) -> dict[str, Any]:
    """Pending work units with their inputs and the JSON schema of the output historic_sql.submit expects."""
    listed: list[dict[str, Any]] = []
    total = 0
    for connection in _connections(ctx, params.connection):
        ids = sync_ids(ctx.runtime.project, connection)
        if not ids:
            continue
        manifest = ingest.latest_manifest(ctx, connection)
        pending = evidence.pending(ctx.runtime.files, connection, manifest)
        total += len(pending)
        catalog = Catalog.from_project(ctx.runtime.project, connection)
        run = runs_dir(ctx.runtime.project, connection) / ids[-1]
        for unit in pending[: max(0, params.limit - len(listed))]:
            listed.append(describe(ctx, unit, run, catalog))
    return {"units": listed, "total": total,
            "next": "historic_sql.submit(unit=<unit>, output={...matching outputSchema...})" if listed else None}


class SubmitParams(Params):
    unit: str = Field(description="a unit id from historic_sql.units()")
    output: dict[str, Any] = Field(description="the digest, matching the unit's outputSchema")


def submit(params: SubmitParams, ctx: Context) -> dict[str, Any]:
    """Store an agent's digest of one work unit (validated), then project it into shards, sources and pages."""
    connection, kind, target, prefix = evidence.parse_unit(params.unit)
    ctx.runtime.connection(connection)
    manifest = ingest.latest_manifest(ctx, connection)
    unit = next((u for u in evidence.pending(ctx.runtime.files, connection, manifest) if u.id == params.unit), None)
    if unit is None:
        current = manifest.get("patternsHash") if kind == "patterns" else manifest.get("tables", {}).get(target)
        why = ("its input is not in the latest ingest" if current is None else
               "it was already digested" if current.startswith(prefix) else
               "the latest ingest staged a newer input for it")
        raise OpError(f"unit {quoted(params.unit)} is not pending: {why}; "
                      "list the current ones with historic_sql.units()",
                      code="unit_not_pending", details={"unit": params.unit})
    output = parse_output(kind, params.output)
    assert isinstance(output, UsageOutput | PatternsOutput)
    settings = ingest.settings_for(ctx, connection)
    evidence.store(ctx.runtime.files, unit, output, "agent", author=ctx.principal, redactor=ctx.runtime.redactor)
    projected = ingest.project(ctx, connection, manifest, settings)
    remaining = evidence.pending(ctx.runtime.files, connection, manifest)
    return {"unit": unit.id, "stored": True, "projection": projected, "pendingUnits": len(remaining)}


class DigestParams(Params):
    connection: str
    provider: Literal["deterministic", "sampling"] = "sampling"


async def digest_verb(params: DigestParams, ctx: Context) -> dict[str, Any]:
    """Digest the pending work units of the latest ingest with your own LLM (MCP sampling), then project them."""
    # async: it waits on the caller's MCP sampling; its reads and writes run through ctx.run_blocking (ADR 0027)
    ctx.runtime.connection(params.connection)
    manifest = await ctx.run_blocking(ingest.latest_manifest, ctx, params.connection)
    pending = await ctx.run_blocking(evidence.pending, ctx.runtime.files, params.connection, manifest)
    catalog = await ctx.run_blocking(Catalog.from_project, ctx.runtime.project, params.connection)
    run = runs_dir(ctx.runtime.project, params.connection) / manifest["syncId"]
    settings = ingest.settings_for(ctx, params.connection)
    done = await digest_units(ctx, params.connection, run, pending, params.provider, catalog, settings)
    projected = await ctx.run_blocking(ingest.project, ctx, params.connection, manifest, settings)
    remaining = await ctx.run_blocking(evidence.pending, ctx.runtime.files, params.connection, manifest)
    return {"connectionId": params.connection, "syncId": manifest["syncId"], "workUnits": len(pending), **done,
            "pendingUnits": [u.id for u in remaining], "projection": projected}


class UsageParams(Params):
    connection: str
    table: str = Field(description="schema.table, or a table name that is unique in the connection")


def usage(params: UsageParams, ctx: Context) -> dict[str, Any]:
    """One table's usage digest plus its staged bands and exact totals from the latest ingest."""
    ctx.runtime.connection(params.connection)
    manifest = ingest.latest_manifest(ctx, params.connection)
    tables = manifest.get("tables", {})
    key = _table_key(params.table, tables)
    stored = evidence.read_usage(ctx.runtime.files, params.connection, key)
    run = runs_dir(ctx.runtime.project, params.connection) / manifest["syncId"]
    staged = orjson.loads(read_run_file(ctx.runtime.project, run, manifest["tableFiles"][key]))
    current = stored is not None and stored.get("contentHash") == tables[key]
    return {"connectionId": params.connection, "syncId": manifest["syncId"], "table": key,
            "usage": stored["output"] if stored else None, "provider": stored["provider"] if stored else None,
            "current": current, "stats": staged["stats"], "totals": manifest.get("tableTotals", {}).get(key),
            "columnsByClause": staged["columnsByClause"], "observedJoins": staged["observedJoins"],
            "topTemplates": staged["topTemplates"]}


def _table_key(name: str, tables: dict[str, Any]) -> str:
    if name in tables:
        return name
    lowered = name.lower()
    matches = [k for k in tables if k.lower() == lowered or k.rsplit(".", 1)[-1].lower() == lowered]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InvalidArgs(f"table {name!r} is ambiguous: {', '.join(sorted(matches))}; qualify it with the schema",
                          details={"matches": sorted(matches)})
    raise NotFound(f"table {quoted(name)} has no usage in the latest ingest (it was not queried, or not resolved); "
                   "tables with usage: " + ", ".join(sorted(tables)[:20]), code="table_not_found")


class PatternsParams(Params):
    connection: str | None = None
    include_stale: bool = False


def patterns(params: PatternsParams, ctx: Context) -> dict[str, Any]:
    """Cross-table pattern pages (wiki historic-sql/<slug>), busiest first: title, tables, how often they are
    read together (exact executions and users of the latest ingest, and the frequency tier: absolute and
    within the connection's workload), templates, staleness; include_stale adds stale and archived pages."""
    out = []
    for connection in _connections(ctx, params.connection):
        manifest = ingest.latest_manifest(ctx, connection) if sync_ids(ctx.runtime.project, connection) else {}
        busiest = busiest_table(manifest)
        for slug, page in sorted(pages.existing_pages(ctx.runtime.files, connection).items()):
            stale = page.front.get("stale_since")
            if (stale or page.archived) and not params.include_stale:
                continue
            out.append({"slug": slug, "page": page.key, "connection": connection,
                        "title": page.front.get("title"), "summary": page.front.get("summary"),
                        "tablesInvolved": page.tables, **pattern_figures(manifest, page.tables, busiest),
                        "templates": len(page.templates), "slRefs": page.front.get("sl_refs", []),
                        "staleSince": str(stale) if stale else None, "archived": page.archived})
    out.sort(key=lambda p: (p["staleSince"] is not None, -(p["executions"] or 0), p["connection"], p["slug"]))
    return {"patterns": out, "count": len(out)}


def busiest_table(manifest: dict[str, Any]) -> int:
    """The executions of the connection's busiest table in the latest ingest (0 without one)."""
    return max((int(t.get("executions") or 0) for t in (manifest.get("tableTotals") or {}).values()), default=0)


def pattern_figures(manifest: dict[str, Any], tables: list[str], busiest: int) -> dict[str, Any]:
    """Executions and distinct users of the templates that read exactly ``tables`` (the latest ingest), with
    the frequency tier: the higher of the absolute one and the share of the connection's busiest table
    (``busiest``: ``busiest_table(manifest)``, worked out once for all of a connection's pages)."""
    found = (manifest.get("tableSetTotals") or {}).get(",".join(sorted(tables)))
    if not found:
        return {"executions": None, "distinctUsers": None, "frequencyTier": None}
    absolute = band(found["executions"], EXECUTION_BANDS)
    tier = frequency_tier(absolute, workload_tier(found["executions"], busiest))
    return {"executions": found["executions"], "distinctUsers": found["distinctUsers"], "frequencyTier": tier}


def probe(params: ConnectionParams, ctx: Context) -> dict[str, Any]:
    """The query-history setup of a connection, checked against the database (pg_stat_statements, BigQuery's
    JOBS_BY_PROJECT, Snowflake's QUERY_HISTORY): findings with severity and fix; status ok only when the
    history was actually read."""
    connection = ctx.runtime.connection(params.connection)
    settings = ingest.settings_for(ctx, params.connection)
    findings: list[dict[str, Any]] = []
    if not settings.enabled:
        findings.append({"severity": "info", "code": "not_enabled", "message": "historic_sql is off for this "
                         "connection", "fix": f"connections.{params.connection}.historicSql.enabled: true"})
    log = history.query_log(ctx.runtime, params.connection, settings)
    if log is not None:
        ok = log.is_file()
        findings.append({"severity": "info" if ok else "error", "code": "query_log" if ok else "query_log_missing",
                         "message": f"query log {log}" + ("" if ok else " does not exist"),
                         "fix": "" if ok else "point historicSql.queryLog at the exported JSONL/CSV log"})
    elif connection.driver == "postgres":
        findings += _postgres_probe(ctx, params.connection, settings)
    elif connection.driver in ("bigquery", "snowflake"):
        findings += _warehouse_probe(ctx, params.connection, settings)
    elif connection.driver in ("sqlite", "duckdb", "mysql"):
        findings.append({"severity": "warning", "code": "no_history_source",
                         "message": f"khive reads no query history from {connection.driver} itself",
                         "fix": f"set connections.{params.connection}.historicSql.queryLog to a query log file"})
    worst = next((s for s in ("error", "warning") if any(f["severity"] == s for f in findings)), "ok")
    return {"connectionId": params.connection, "driver": connection.driver, "status": worst, "findings": findings}


def _postgres_probe(ctx: Context, name: str, settings: HistoricSqlConfig) -> list[dict[str, Any]]:
    from packs.historic_sql.readers.postgres import connect, connection_failed
    from packs.historic_sql.readers.postgres import probe as pg_probe

    connection = ctx.runtime.connection(name)
    try:
        with connect(history.dsn(ctx.runtime, name, connection, settings), connection.statement_timeout_s,
                     connection=name) as conn:
            found, _ = pg_probe(conn)
    except KhiveError as exc:
        if exc.code != "connection_failed":
            raise
        return [connection_failed(exc).model_dump(mode="json")]
    findings = [f.model_dump(mode="json") for f in found]
    if settings.url is None and not {f["code"] for f in findings} & {"insufficient_privilege", "extension_unavailable"}:
        findings.append({"severity": "warning", "code": "shared_role",
                         "message": f"connection {name!r} reads history with the role agents' SQL runs as, and that "
                                    "role can read every role's statements (passwords in DDL included)",
                         "fix": f"give the history reader its own role: connections.{name}.historicSql.url: "
                                "env:<VAR> (GRANT pg_read_all_stats TO it), and keep url's role to SELECT on the "
                                "analytics schemas"})
    return findings


def _warehouse_probe(ctx: Context, name: str, settings: HistoricSqlConfig) -> list[dict[str, Any]]:
    connection = ctx.runtime.connection(name)
    with history.warehouse_runner(ctx.runtime, name) as runner:
        if connection.driver == "bigquery":
            from packs.historic_sql.readers.bigquery import probe as bigquery_probe

            found = bigquery_probe(runner, settings, project=connection.project, region=connection.region or "us")
        else:
            from packs.historic_sql.readers.snowflake import probe as snowflake_probe

            found = snowflake_probe(runner, settings, database=connection.database)
    return [f.model_dump(mode="json") for f in found]


def _unit_key(params: SubmitParams) -> list[str]:
    return [f"historic_sql:unit:{params.unit.rsplit('@', 1)[0]}"]


VERBS = (
    Verb("historic_sql.ingest", IngestParams, ingest_verb, ingest_verb.__doc__ or "", visibility=Visibility.OPERATOR,
         write_keys=lambda p: [f"historic_sql:{p.connection}"], write_key_rule="historic_sql:<connection>",
         read_only=False, result=results.IngestResult),
    Verb("historic_sql.status", ConnectionParams, status, status.__doc__ or "", result=results.StatusResult),
    Verb("historic_sql.units", UnitsParams, units, units.__doc__ or "", result=results.UnitsResult),
    Verb("historic_sql.submit", SubmitParams, submit, submit.__doc__ or "", write_keys=_unit_key,
         write_key_rule="historic_sql:unit:<connection>/<table or patterns>", read_only=False,
         result=results.SubmitResult),
    Verb("historic_sql.digest", DigestParams, digest_verb, digest_verb.__doc__ or "",
         write_keys=lambda p: [f"historic_sql:{p.connection}"], write_key_rule="historic_sql:<connection>",
         read_only=False, result=results.DigestResult),
    Verb("historic_sql.usage", UsageParams, usage, usage.__doc__ or "", result=results.UsageResult),
    Verb("historic_sql.patterns", PatternsParams, patterns, patterns.__doc__ or "", result=results.PatternsResult),
    Verb("historic_sql.probe", ConnectionParams, probe, probe.__doc__ or "", result=results.ProbeResult),
)
