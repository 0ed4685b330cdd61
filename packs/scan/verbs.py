"""Verbs of the scan pack: connections, runs, tables, entity details, diffs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from khive.context import Context
from khive.errors import NotFound, quoted
from khive.limits import OptionalQueryText
from khive.verbs import NoParams, Params, Verb, Visibility
from packs.scan import results
from packs.scan.artifacts import cached_run_tables, latest_sync, read_report, sync_ids
from packs.scan.diff import diff_runs
from packs.scan.index import TABLE
from packs.scan.redaction import clean_columns
from packs.scan.runner import run_scan
from packs.scan.shardread import ShardCache, read_shard_tables
from packs.scan.sqlverbs import SQL_VERBS


def _shard_cache(ctx: Context) -> ShardCache:
    return ctx.runtime.pack_state("scan.shards", ShardCache)


def _run_tables(ctx: Context, connection: str, sync: str) -> dict[str, dict[str, Any]]:
    return cached_run_tables(ctx.runtime, connection, sync)


def _require_scan(ctx: Context, connection: str) -> str:
    ctx.runtime.connection(connection)
    sync = latest_sync(ctx.runtime.project, connection)
    if sync is None:
        raise NotFound(f"connection {quoted(connection)} has not been scanned yet; run `khive scan {connection}`",
                       code="scan_missing", details={"connection": connection})
    return sync


def connections(params: NoParams, ctx: Context) -> dict[str, Any]:
    """List configured connections with driver, description, last scan, table count and what the last scan
    redacted or left out (counts per kind, never a value)."""
    out = []
    for name, config in sorted(ctx.runtime.config.connections.items()):
        sync = latest_sync(ctx.runtime.project, name)
        report = read_report(ctx.runtime.project, name, sync) if sync else None
        out.append({"id": name, "driver": config.driver, "description": config.description,
                    "lastScan": sync, "tables": report["counts"]["tables"] + report["counts"]["views"]
                    if report else None, "protection": _protection(report) if report else None})
    return {"connections": out}


def _protection(report: dict[str, Any]) -> dict[str, Any]:
    """A scan report's redaction counts (reports from before ADR 0035 have none: ``recorded`` says so)."""
    excluded = report.get("excluded") or {}
    skipped = report.get("skippedColumns") or {}
    return {"recorded": "redactions" in report, "redactions": report.get("redactions") or {},
            "secretColumns": int(skipped.get("secret-name") or 0),
            "serverObjectsLeftOut": int(excluded.get("internalCount") or 0)}


class ConnectionParams(Params):
    connection: str


async def run(params: ConnectionParams, ctx: Context) -> dict[str, Any]:
    """Scan a live database into raw-sources/ artifacts and _schema/ shards (operator)."""
    # async: it reports progress between steps, and each step runs through ctx.run_blocking (ADR 0027)
    transport = ctx.transport
    return await run_scan(ctx, params.connection, trigger=transport)


def status(params: ConnectionParams, ctx: Context) -> dict[str, Any]:
    """The latest scan's report and the run history of a connection."""
    sync = _require_scan(ctx, params.connection)
    report = read_report(ctx.runtime.project, params.connection, sync)
    return {"latest": report, "history": sync_ids(ctx.runtime.project, params.connection)}


class TablesParams(Params):
    connection: str
    schema_: str | None = Field(default=None, alias="schema", description="only this schema")
    query: OptionalQueryText = Field(default=None, description="rank tables by relevance to these words")
    limit: int = Field(default=200, ge=1, le=10_000)


def _shard_tables(ctx: Context, connection: str, sync: str) -> dict[str, dict[str, Any]]:
    return read_shard_tables(ctx.runtime.files, connection, sync, lambda: _run_tables(ctx, connection, sync),
                             _shard_cache(ctx))


def tables(params: TablesParams, ctx: Context) -> dict[str, Any]:
    """Tables of the latest scan: name, kind, comment, row estimate, column count."""
    sync = _require_scan(ctx, params.connection)
    entries = _shard_tables(ctx, params.connection, sync)
    live = _run_tables(ctx, params.connection, sync)  # row estimates are live figures: the run has them, not the shard
    rows = [{"id": key, "db": entry["db"], "name": entry["name"], "kind": entry.get("kind"),
             "comment": entry.get("description") or entry.get("comment"),
             "estimatedRows": (live.get(key) or {}).get("estimatedRows"), "columns": len(entry.get("columns") or [])}
            for key, entry in sorted(entries.items())
            if not entry.get("droppedInSync") and (params.schema_ is None or entry["db"] == params.schema_)]
    if params.query:
        hits = ctx.runtime.index.search(params.query, kinds=[TABLE], connection=params.connection,
                                        limit=params.limit)
        order = {hit.title: (rank, hit.score) for rank, hit in enumerate(hits)}
        rows = [dict(row, score=order[row["id"]][1]) for row in rows if row["id"] in order]
        rows.sort(key=lambda row: order[row["id"]][0])
    return {"tables": rows[: params.limit], "count": len(rows)}


class EntityParams(Params):
    connection: str
    table: str = Field(description="table name or schema.table")
    column: str | None = None


def entity(params: EntityParams, ctx: Context) -> dict[str, Any]:
    """Everything known about a table (or one column): columns, keys, FKs in and out, samples, usage."""
    sync = _require_scan(ctx, params.connection)
    artifacts = _run_tables(ctx, params.connection, sync)
    shards = _shard_tables(ctx, params.connection, sync)
    key = _resolve_table(params.table, artifacts)
    table = artifacts[key]
    columns = clean_columns(table["columns"], ctx.runtime.redactor)  # runs from before redaction, too
    shard = shards.get(key, {})
    incoming = [{"from": f"{other['db']}.{other['name']}", "columns": fk["columns"], "refColumns": fk["refColumns"]}
                for other in artifacts.values() for fk in other.get("foreignKeys", [])
                if f"{fk['refDb']}.{fk['refTable']}" == key]
    inferred_in = [rel for other in artifacts.values() for rel in other.get("inferredRelationships", [])
                   if f"{rel['toDb']}.{rel['toTable']}" == key]
    result = {
        "connectionId": params.connection, "syncId": sync, "id": key,
        "tableRef": {"catalog": table.get("catalog"), "db": table["db"], "name": table["name"]},
        "kind": table.get("kind"), "comment": table.get("comment"), "description": shard.get("description"),
        "estimatedRows": table.get("estimatedRows"),
        "primaryKey": [c["name"] for c in table["columns"] if c.get("primaryKey")],
        "columns": columns,
        "foreignKeys": {"out": table.get("foreignKeys", []), "in": incoming},
        "inferredRelationships": {"out": table.get("inferredRelationships", []), "in": inferred_in},
        "usage": shard.get("usage"),
    }
    if params.column is None:
        return result
    column = next((c for c in columns if c["name"].lower() == params.column.lower()), None)
    if column is None:
        names = ", ".join(c["name"] for c in table["columns"])
        raise NotFound(f"table {key} has no column {quoted(params.column)}; columns: {names}", code="column_not_found")
    shard_column: dict[str, Any] = next((c for c in shard.get("columns") or [] if c.get("name") == column["name"]),
                                        {})
    extra = {k: v for k, v in shard_column.items() if k not in column}
    return {**{k: result[k] for k in ("connectionId", "syncId", "id", "tableRef", "usage")},
            "column": {**column, **extra},
            "foreignKeys": [fk for fk in table.get("foreignKeys", []) if column["name"] in fk["columns"]],
            "referencedBy": [ref for ref in incoming if column["name"] in ref["refColumns"]]}


def _resolve_table(name: str, artifacts: dict[str, dict[str, Any]]) -> str:
    if name in artifacts:
        return name
    lowered = name.lower()
    matches = [key for key in artifacts if key.lower() == lowered or key.split(".", 1)[1].lower() == lowered]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise NotFound(f"table {name!r} is ambiguous: {', '.join(sorted(matches))}; qualify it with the schema",
                       code="table_ambiguous", details={"matches": sorted(matches)})
    import difflib

    close = difflib.get_close_matches(lowered, [k.lower() for k in artifacts], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise NotFound(f"no table {quoted(name)} in the latest scan{hint}",
                   code="table_not_found", details={"closest": close})


class DiffParams(Params):
    connection: str
    from_: str | None = Field(default=None, alias="from", description="sync id (default: the one before `to`)")
    to: str | None = Field(default=None, description="sync id (default: the latest)")


def diff(params: DiffParams, ctx: Context) -> dict[str, Any]:
    """Tables and columns added, modified, deleted and unchanged between two scans."""
    _require_scan(ctx, params.connection)
    history = sync_ids(ctx.runtime.project, params.connection)
    to = params.to or history[-1]
    for sync in (to, params.from_):
        if sync is not None and sync not in history:
            raise NotFound(f"no scan {quoted(sync)} for {params.connection}; scans: {', '.join(history)}",
                           code="scan_missing")
    before_id = params.from_ or (history[history.index(to) - 1] if history.index(to) > 0 else None)
    before = _run_tables(ctx, params.connection, before_id) if before_id else {}
    after = _run_tables(ctx, params.connection, to)
    return {"from": before_id, "to": to, "diffSummary": diff_runs(before, after)}


VERBS = (
    Verb("scan.connections", NoParams, connections, connections.__doc__ or "", result=results.ConnectionsResult),
    Verb("scan.run", ConnectionParams, run, run.__doc__ or "", visibility=Visibility.OPERATOR,
         write_keys=lambda p: [f"scan:{p.connection}"], write_key_rule="scan:<connection>", read_only=False,
         result=results.ScanRunResult),
    Verb("scan.status", ConnectionParams, status, status.__doc__ or "", result=results.StatusResult),
    Verb("scan.tables", TablesParams, tables, tables.__doc__ or "", result=results.TablesResult),
    Verb("scan.entity", EntityParams, entity, entity.__doc__ or "", result=results.EntityResult),
    Verb("scan.diff", DiffParams, diff, diff.__doc__ or "", result=results.DiffResult),
    *SQL_VERBS,
)
