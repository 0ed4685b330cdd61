"""One ingest, the pack's whole flow in order (each step's module named):

    read        the connection's history, aggregated by template (history.py -> readers/); a query log's
                texts are normalized on the way (normalize.py, in a pool: prime.py), and filtered (filters.py)
    parse       tables, column uses and joins of every template, resolved against the scan (parse.py, analyze.py)
    bucketize   per table, stable bands instead of numbers; the pattern input (bucketize.py)
    stage       one run under raw-sources/<connection>/historic-sql/<syncId>/, atomically (stage.py)
    digest      each staged input without a digest of the same content is a work unit (evidence.py); the
                provider digests it (providers.py: deterministic digest.py, or the client's LLM)
    project     the digests into the shards, the SL sources (projection.py) and the pattern pages (pages.py)

Everything up to staging is deterministic and LLM-free. An unchanged rerun stages byte-identical files,
has no work units, digests nothing and rewrites no file. The stores that make reruns cheap are one object
(``Caches``, caches.py), handed to the steps that use them. The ingest is an orchestrator (ADR 0027): it
reports progress and may wait on MCP sampling on the event loop, and runs every step that reads, parses or
writes through ``ctx.run_blocking``.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from datetime import UTC, date, datetime
from typing import Any

from khive.context import Context
from khive.errors import NotFound, OpError, quoted
from khive.project.runs import new_sync_id, prune_runs, sync_time
from packs.historic_sql import evidence, history, pages, projection
from packs.historic_sql.bucketize import bucketize
from packs.historic_sql.caches import Caches
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.config import HistoricSqlConfig, connection_settings
from packs.historic_sql.filters import iso
from packs.historic_sql.parse import parse_batch
from packs.historic_sql.parsed import frozen_until_exit
from packs.historic_sql.prime import Primer
from packs.historic_sql.providers import digest_units
from packs.historic_sql.stage import previous_manifest, read_manifest, runs_dir, stage, sync_ids, vanished

STEPS = 5
_MARKER_RE = re.compile(r"__redacted_(\w+?)__")


def settings_for(ctx: Context, connection: str) -> HistoricSqlConfig:
    """The connection's historicSql block; its redactionPatterns extend the project's ``redaction.patterns``."""
    settings = connection_settings(connection, ctx.runtime.connection(connection).historicSql)
    patterns = ctx.runtime.redactor.extended(settings.redactionPatterns).patterns
    return settings.model_copy(update={"redactionPatterns": list(patterns)})


async def ingest(ctx: Context, connection: str, *, window_days: int | None = None,
                 provider: str | None = None) -> dict[str, Any]:
    with frozen_until_exit():  # the records each step builds stay to the end: out of the collector's sight
        return await _ingest(ctx, connection, window_days=window_days, provider=provider)


async def _ingest(ctx: Context, connection: str, *, window_days: int | None, provider: str | None) -> dict[str, Any]:
    runtime = ctx.runtime
    settings = settings_for(ctx, connection)
    if not settings.enabled:
        raise OpError(f"historic_sql is not enabled for connection {connection!r}; set "
                      f"connections.{connection}.historicSql.enabled: true in khive.yaml (reading query history "
                      "needs privileges, so it is opt-in)", code="historic_sql_disabled",
                      details={"connection": connection})
    if window_days is not None:
        settings = settings.model_copy(update={"windowDays": window_days})
    chosen = provider or settings.provider
    catalog = await ctx.run_blocking(Catalog.from_project, runtime.project, connection)
    if not len(catalog):
        raise NotFound(f"connection {quoted(connection)} has no scan to resolve table names against; run "
                       f"`khive scan {connection}` first", code="scan_missing", details={"connection": connection})
    caches = Caches(runtime.project, connection)
    timings: dict[str, float] = {}
    fetched_at = iso(datetime.now(UTC))
    started = clock = time.perf_counter()

    # read (and normalize)
    await ctx.progress(0, STEPS, f"{connection}: reading query history")
    search = history.search_path(runtime.connection(connection), settings)
    workers = min(settings.concurrency, os.cpu_count() or 1)  # parsing is CPU-bound: no more than the cores
    dialect = history.DIALECTS[runtime.connection(connection).driver]
    primer = Primer(caches, dialect, settings.redactionPatterns, workers, analysis=(catalog, search))
    read = await ctx.run_blocking(history.read_history, runtime, connection, settings, primer=primer,
                                  log_cache=caches.log_aggregates())
    errors = [f for f in read.findings if f.severity == "error"]
    if errors and not read.templates:
        raise OpError(f"cannot read the query history of {connection!r}: {errors[0].message}; fix: {errors[0].fix}",
                      code="history_unavailable",
                      details={"findings": [f.model_dump(mode="json") for f in read.findings]})
    timings["readMs"] = _ms(clock)

    # parse (what the normalizer resolved on the way is not parsed again)
    await ctx.progress(1, STEPS, f"{connection}: parsing {len(read.templates)} templates")
    clock = time.perf_counter()

    def parse() -> Any:
        with caches.parsed() as cache:
            return parse_batch(read.templates, catalog, search_path=search, cache=cache, concurrency=workers,
                               known=primer.analyses)

    batch = await ctx.run_blocking(parse)
    timings["parseMs"] = _ms(clock)

    # bucketize and stage
    await ctx.progress(2, STEPS, f"{connection}: staging")
    clock = time.perf_counter()
    sync_id = new_sync_id()
    previous = await ctx.run_blocking(previous_manifest, runtime.project, connection, before=sync_id)

    def staged() -> Any:
        bucketed = bucketize(read.templates, batch.parsed, min_pattern_users=settings.patternMinUsers)
        return stage(runtime.project, connection, sync_id, dialect=dialect, templates=read.templates, batch=batch,
                     bucketed=bucketed, findings=read.findings, previous=previous, fetched_at=fetched_at)

    run = await ctx.run_blocking(staged)
    pruned: list[str] = []
    if run.unchanged:  # the latest run says the same: it stays the latest, and nothing is written
        sync_id = run.manifest["syncId"]
    else:
        pruned = await ctx.run_blocking(prune_runs, runs_dir(runtime.project, connection),
                                        runtime.config.runs.keep_last)
    timings["stageMs"] = _ms(clock)

    # digest the work units
    units = await ctx.run_blocking(evidence.pending, runtime.files, connection, run.manifest)
    await ctx.progress(3, STEPS, f"{connection}: {len(units)} work units ({chosen})")
    clock = time.perf_counter()
    digested = await digest_units(ctx, connection, run.path, units, chosen, catalog, settings,
                                  wait_for_session=True)
    timings["digestMs"] = _ms(clock)

    # project
    await ctx.progress(4, STEPS, f"{connection}: projecting usage and patterns")
    clock = time.perf_counter()
    projected = await ctx.run_blocking(project, ctx, connection, run.manifest, settings)
    timings["projectMs"] = _ms(clock)
    timings["totalMs"] = _ms(started)
    await ctx.progress(5, STEPS, f"{connection}: ingest {sync_id} done")
    remaining = await ctx.run_blocking(evidence.pending, runtime.files, connection, run.manifest)
    return {"connectionId": connection, "syncId": sync_id, **({"unchangedSince": sync_id} if run.unchanged else {}),
            **({"prunedRuns": pruned} if pruned else {}),
            "provider": chosen, "counts": run.manifest["counts"],
            "workUnits": len(units), "digests": digested["digests"], "rejected": digested["rejected"],
            "pendingUnits": [u.id for u in remaining], "vanishedTables": vanished(previous, run.manifest),
            "projection": projected, "warnings": run.manifest["warnings"][:50],
            "findings": [f.model_dump(mode="json") for f in read.findings], "parseStats": batch.stats,
            "normalizeStats": primer.stats, "readStats": dict(read.stats or {}),
            "redactions": redactions(read.templates), "timings": timings}


def redactions(templates: Any) -> dict[str, int]:
    """Markers in the templates' stored SQL, per kind (khive/redact.py): one per distinct template, never a value."""
    found: Counter[str] = Counter()
    for template in templates:
        if "__redacted_" in template.canonicalSql:
            found.update(match.replace("_", "-") for match in _MARKER_RE.findall(template.canonicalSql))
    return dict(sorted(found.items()))


def project(ctx: Context, connection: str, manifest: dict[str, Any], settings: HistoricSqlConfig) -> dict[str, Any]:
    """Passes A and B over the latest digests (Pass C, the index, follows the files by itself). The memo holds
    the files merged last time, as they were left: skipped while they and their inputs are the same."""
    files, author = ctx.runtime.files, ctx.principal
    today = _day(manifest["syncId"])
    usages = evidence.current_usage(files, connection, manifest, ctx.runtime.redactor)
    present = set(manifest.get("tables", {}))
    memo = Caches(ctx.runtime.project, connection).projection()
    stale = projection.Stale(manifest.get("staleTables") or {}, fallback=sync_time(manifest["syncId"]))
    shards = projection.project_shards(files, connection, usages, present, stale, author=author, memo=memo)
    sources = projection.project_sources(files, connection, usages, present, stale, author=author, memo=memo)
    found = evidence.current_patterns(files, connection, manifest, ctx.runtime.redactor)
    pattern_pages = (pages.project_patterns(files, connection, found, today, settings.staleArchiveAfterDays,
                                            author=author, memo=memo, dialect=manifest.get("dialect"))
                     if found is not None else {"pending": True})
    memo.save()
    return {"shards": shards, "sources": sources, "patterns": pattern_pages, "unchangedSkipped": len(memo.skipped)}


def latest_manifest(ctx: Context, connection: str) -> dict[str, Any]:
    ids = sync_ids(ctx.runtime.project, connection)
    if not ids:
        raise NotFound(f"connection {connection!r} has no historic_sql ingest yet; run `khive ingest {connection}`",
                       code="ingest_missing", details={"connection": connection})
    return read_manifest(ctx.runtime.project, connection, ids[-1])


def _day(sync_id: str) -> date:
    return datetime.strptime(sync_id[:8], "%Y%m%d").replace(tzinfo=UTC).date()


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)
