"""One scan run: read the catalog, sample, infer relationships, diff, write artifacts and shards.

``scan.run`` is an orchestrator (ADR 0027): it stays on the event loop to report progress between
steps, and every step (database reads, inference, the diff, the writes) runs through ``ctx.run_blocking``.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from khive.connections.catalog import ColumnSample, ExcludedObject
from khive.connections.selection import choose_tables
from khive.context import Context
from khive.gcpause import paused_gc
from khive.project.runs import json_bytes, new_sync_id
from packs.scan.artifacts import (
    REPORT_FILE,
    TABLES_FILE,
    ColumnArtifacts,
    latest_sync,
    prune_scan_runs,
    read_run_info,
    read_run_tables,
    stage_run,
    table_artifact,
    tables_bytes,
)
from packs.scan.diff import diff_runs
from packs.scan.examples import stabilize
from packs.scan.redaction import redact_scan
from packs.scan.relationships import InferredRelationship, infer_relationships
from packs.scan.shardread import read_shard_tables
from packs.scan.shards import write_shards

SAMPLE_BATCH = 25  # tables per sampling call, so progress moves on large schemas
MAX_LISTED = 50  # excluded objects named in the report (all are counted)


def relationship_dict(rel: InferredRelationship) -> dict[str, Any]:
    return {"fromDb": rel.from_db, "fromTable": rel.from_table, "fromColumns": list(rel.from_columns),
            "toDb": rel.to_db, "toTable": rel.to_table, "toColumns": list(rel.to_columns),
            "confidence": round(rel.confidence, 3), "tier": rel.tier,
            "evidence": [{"kind": e.kind, "detail": e.detail, "weight": e.weight} for e in rel.evidence]}


async def run_scan(ctx: Context, connection: str, *, trigger: str) -> dict[str, Any]:
    with paused_gc():  # a scan allocates about a million small objects, none of them cyclic
        return await _run_scan(ctx, connection, trigger=trigger)


async def _run_scan(ctx: Context, connection: str, *, trigger: str) -> dict[str, Any]:
    runtime = ctx.runtime
    config = runtime.connection(connection)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    previous = await ctx.run_blocking(latest_sync, runtime.project, connection)
    # The previous run is read while the database works on the catalog queries (the diff needs it later).
    reader = ThreadPoolExecutor(max_workers=1)
    before_read = reader.submit(read_run_tables, runtime.project, connection, previous) if previous else None
    reader.shutdown(wait=False)
    async with runtime.drivers.pool(connection).leased(config.statement_timeout_s) as lease:
        driver = lease.driver
        await ctx.progress(0, 4, f"{connection}: reading the catalog")
        clock = time.perf_counter()
        snapshot = await ctx.run_blocking(driver.read_catalog)
        timings["catalogMs"] = _ms(clock)
        tables, excluded = choose_tables(snapshot, config.tables)  # never the server's own objects
        samples: list[ColumnSample] = []
        clock = time.perf_counter()
        if config.sample_values.enabled and tables:
            for start in range(0, len(tables), SAMPLE_BATCH):
                batch = tables[start : start + SAMPLE_BATCH]
                samples.extend(await ctx.run_blocking(driver.sample, batch))
                await ctx.progress(1 + (start + len(batch)) / len(tables), 4,
                                   f"{connection}: sampled {start + len(batch)}/{len(tables)} tables")
        timings["samplesMs"] = _ms(clock)

    clock = time.perf_counter()
    redactions: Counter[str] = Counter()
    tables, samples = await ctx.run_blocking(redact_scan, tables, samples, runtime.redactor, redactions)
    timings["redactMs"] = _ms(clock)
    clock = time.perf_counter()
    snapshot = snapshot.model_copy(update={"tables": tuple(tables), "samples": tuple(samples)})
    inferred = await ctx.run_blocking(lambda: [relationship_dict(rel) for rel in infer_relationships(snapshot)])
    timings["inferenceMs"] = _ms(clock)
    await ctx.progress(2, 4, f"{connection}: {len(inferred)} inferred relationships")

    clock = time.perf_counter()
    info = {"connection": connection, "driver": config.driver, "description": config.description,
            "catalog": snapshot.catalog, "dialect": driver.dialect}

    def assemble() -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
        """Every table's artifact, the diff against the previous run, and whether nothing changed."""
        sample_map = {(s.db, s.table, s.column): s.model_dump(mode="json", by_alias=True) for s in samples}
        by_table: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for rel in inferred:
            by_table.setdefault((rel["fromDb"], rel["fromTable"]), []).append(rel)
        made: ColumnArtifacts = {}
        built = [table_artifact(t, sample_map, by_table.get((t.db, t.name), []), made) for t in tables]
        before = before_read.result() if before_read is not None else {}
        # The shard's sample values stay while the distribution does (examples.py): the shard says what it shows.
        stabilize(built, read_shard_tables(runtime.files, connection, previous, lambda: before))
        after = {f"{data['db']}.{data['name']}": data for data in built}
        same = previous is not None and after == before and read_run_info(runtime.project, connection,
                                                                          previous) == info
        return built, diff_runs(before, after), same

    artifacts, diff, unchanged = await ctx.run_blocking(assemble)
    sync_id = previous if unchanged and previous is not None else new_sync_id()
    accepted = sum(1 for rel in inferred if rel["tier"] == "accepted")
    report: dict[str, Any] = {
        "syncId": sync_id, "runId": uuid.uuid4().hex, "trigger": trigger, "connection": connection,
        "driver": snapshot.driver, "previousSyncId": previous,
        **({"unchangedSince": previous} if unchanged else {}),
        "counts": {"tables": sum(1 for t in tables if t.kind == "table"),
                   "views": sum(1 for t in tables if t.kind != "table"),
                   "columns": sum(len(t.columns) for t in tables),
                   "foreignKeys": sum(len(t.foreign_keys) for t in tables),
                   "sampledColumns": sum(1 for s in samples if not s.skipped),
                   "skippedColumns": sum(1 for s in samples if s.skipped)},
        "skippedColumns": dict(sorted(Counter(s.skipped for s in samples if s.skipped).items())),
        "redactions": dict(sorted(redactions.items())),  # what was removed, per kind; never the values
        "excluded": _excluded(excluded),
        "diffSummary": diff,
        "warnings": list(snapshot.warnings),
        "capabilityGaps": list(snapshot.capability_gaps),
        "inferredRelationships": {"accepted": accepted, "review": len(inferred) - accepted},
        "timings": timings,
    }
    await ctx.progress(3, 4, f"{connection}: writing the run and the _schema shards")

    def write() -> None:
        if unchanged:  # the latest run says it all: no new run; shards still follow it (one may have been removed)
            write_shards(runtime.files, connection, sync_id, artifacts, author=ctx.principal)
            timings["writeMs"] = _ms(clock)
            timings["totalMs"] = _ms(started)
            return
        # The report is the run's last file: its timings cover everything but writing it and the rename.
        with stage_run(runtime.project, connection, sync_id) as run:
            run.write("connection.json", json_bytes(info))
            run.write(TABLES_FILE, tables_bytes(artifacts))
            write_shards(runtime.files, connection, sync_id, artifacts, author=ctx.principal)
            timings["writeMs"] = _ms(clock)
            timings["totalMs"] = _ms(started)
            run.write(REPORT_FILE, json_bytes(report))
        pruned = prune_scan_runs(runtime.project, connection, runtime.config.runs)
        if pruned:  # after the run is published, so its saved report cannot say it
            report["prunedRuns"] = pruned

    await ctx.run_blocking(write)
    await ctx.progress(4, 4, f"{connection}: scan {sync_id} " + ("unchanged" if unchanged else "done"))
    return report


def _excluded(excluded: list[ExcludedObject]) -> dict[str, Any]:
    """Server internals and extension objects by name (the first MAX_LISTED), and how many tables the
    connection's ``tables:`` globs left out."""
    internal = [{"object": item.qualified, "reason": item.reason} for item in excluded
                if item.reason != "tables filter"]
    return {"internal": internal[:MAX_LISTED], "internalCount": len(internal),
            "filtered": len(excluded) - len(internal)}


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)
