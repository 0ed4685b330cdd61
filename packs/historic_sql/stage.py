"""Staged runs under ``raw-sources/<connection>/historic-sql/<syncId>/`` and the work they cause.

    manifest.json            syncId, fetchedAt, connection, window, counts, warnings, probeWarnings, per-table
                             content hashes and exact totals, the tables gone since they were last seen, findings
    tables/<schema>.<name>.json   one per touched table: bucketed stats, columnsByClause, observedJoins, topTemplates
    patterns-input.json      every template in compact form, and the candidate table sets (bucketize.py)

A run is written into a hidden temporary directory and renamed into place, so readers never see half a
run and a failed run leaves the previous one intact. Only the manifest carries the sync id; every other
file is a pure function of the input (sorted keys, bands instead of numbers, no timestamps), so the
same input stages byte-identical files. The content hash of a table (sha256 of its canonical JSON) is
what decides the work: ``work_units`` lists the tables whose hash differs from the previous run's.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from khive.project import runs
from khive.project.runs import completed_runs, json_bytes
from khive.project.store import inside
from packs.historic_sql.bucketize import Bucketed
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding
from packs.historic_sql.parse import BatchResult

SOURCE = "historic-sql"
MANIFEST = "manifest.json"
PATTERNS = "patterns-input.json"


@dataclass(frozen=True)
class StagedRun:
    path: Path
    manifest: dict[str, Any]
    unchanged: bool = False  # nothing new: ``path`` is the previous run, which says the same


# What a run says: the staged contents (by hash), the counts and what did not parse. The exact totals, the
# window's first and last times and the parse statistics move with every query executed or every cache hit;
# on their own they are not worth a new run (ADR 0033).
_VOLATILE = frozenset({"syncId", "fetchedAt", "window", "tableTotals", "tableSetTotals", "parseStats",
                       "readerFindings", "probeWarnings"})


def same_meaning(previous: Mapping[str, Any] | None, manifest: Mapping[str, Any]) -> bool:
    if previous is None:
        return False
    return ({k: v for k, v in previous.items() if k not in _VOLATILE}
            == {k: v for k, v in manifest.items() if k not in _VOLATILE})


def canonical(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def content_hash(data: Any) -> str:
    return hashlib.sha256(canonical(data)).hexdigest()


def table_file(key: str) -> str:
    return f"tables/{key.replace('/', '_')}.json"


def runs_dir(project: Path, connection: str) -> Path:
    """The connection's history runs, resolved: path_outside_project when a symlink leads them elsewhere."""
    return inside(project, Path("raw-sources", connection, SOURCE))


def read_run_file(project: Path, run: Path, relative: str) -> bytes:
    """A staged file of one run, never through a symlink that leaves the project."""
    return inside(project, run / relative).read_bytes()


def sync_ids(project: Path, connection: str) -> list[str]:
    """Completed runs, oldest first (sync ids sort by time)."""
    return completed_runs(runs_dir(project, connection))


def read_manifest(project: Path, connection: str, sync_id: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(read_run_file(project, runs_dir(project, connection) / sync_id, MANIFEST))
    return data


def previous_manifest(project: Path, connection: str, before: str | None = None) -> dict[str, Any] | None:
    """The manifest of the newest run (older than ``before`` when given), or None."""
    ids = [s for s in sync_ids(project, connection) if before is None or s < before]
    return read_manifest(project, connection, ids[-1]) if ids else None


def work_units(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[str]:
    """Tables whose staged content changed since ``previous`` (new tables included), sorted."""
    before = (previous or {}).get("tables", {})
    return sorted(key for key, digest in current.get("tables", {}).items() if before.get(key) != digest)


def vanished(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[str]:
    """Tables staged last time and absent now (their usage went stale)."""
    now = current.get("tables", {})
    return sorted(key for key in (previous or {}).get("tables", {}) if key not in now)


def last_seen(previous: Mapping[str, Any] | None, tables: Mapping[str, Any]) -> dict[str, str]:
    """When each table the history no longer shows was last seen: for a table the previous run staged, its
    newest execution there (or, from a source without times, that run's time); for one gone before, what
    the previous run said. ``staleTables`` of the manifest, what the projection writes as ``staleSince``."""
    if previous is None:
        return {}
    out = {key: when for key, when in (previous.get("staleTables") or {}).items() if key not in tables}
    totals = previous.get("tableTotals") or {}
    for key in previous.get("tables", {}):
        if key not in tables:
            out[key] = (totals.get(key) or {}).get("lastSeen") or runs.sync_time(str(previous["syncId"]))
    return dict(sorted(out.items()))


def stage(project: Path, connection: str, sync_id: str, *, dialect: str, templates: Sequence[AggregatedTemplate],
          batch: BatchResult, bucketed: Bucketed, window: Mapping[str, str | None] | None = None,
          findings: Sequence[ProbeFinding] = (), warnings: Sequence[str] = (),
          previous: Mapping[str, Any] | None = None, fetched_at: str | None = None) -> StagedRun:
    """Write one staged run atomically and return its manifest; when ``previous`` (the latest run's manifest)
    says the same, write nothing and return that run. ``fetched_at``: when the history was read (ISO 8601)."""
    tables, patterns_doc = bucketed.tables, bucketed.patterns
    files = {table_file(key): content for key, content in tables.items()}
    seen, counts = _summary(templates, batch)
    manifest = {
        "source": SOURCE, "syncId": sync_id, "fetchedAt": fetched_at or runs.sync_time(sync_id),
        "connection": connection, "dialect": dialect, "window": dict(window) if window is not None else seen,
        "counts": {**counts, "tables": len(tables), "tableSets": len(bucketed.table_sets)},
        "warnings": sorted({*warnings, *batch.warnings}),
        "probeWarnings": [f"{f.code}: {f.message}" for f in findings if f.severity in ("error", "warning")],
        "parseErrors": dict(sorted((tid, p.error) for tid, p in batch.parsed.items() if p.error is not None)),
        "parseStats": dict(batch.stats),
        "unknownTables": dict(sorted(Counter(name for p in batch.parsed.values()
                                             for name in p.unknown_tables).items())),
        "tables": {key: content_hash(content) for key, content in sorted(tables.items())},
        "tableFiles": {key: table_file(key) for key in sorted(tables)},
        "tableTotals": bucketed.totals,
        "tableSetTotals": bucketed.set_totals,
        "staleTables": last_seen(previous, tables),
        "patternsHash": content_hash(patterns_doc),
        "readerFindings": [f.model_dump(mode="json") for f in findings],
    }
    if same_meaning(previous, manifest) and previous is not None:
        earlier = runs_dir(project, connection) / str(previous["syncId"])
        if earlier.is_dir():
            return StagedRun(earlier, dict(previous), unchanged=True)
    contents = {name: json_bytes(content) for name, content in sorted(files.items())}
    contents[PATTERNS] = json_bytes(patterns_doc)
    contents[MANIFEST] = json_bytes(manifest)
    final = runs.write_run(runs_dir(project, connection), sync_id, contents)
    return StagedRun(final, manifest)


def _summary(templates: Sequence[AggregatedTemplate], batch: BatchResult
             ) -> tuple[dict[str, str | None], dict[str, int]]:
    """The window the templates were seen in and the parse counts, in one pass (a run has 50,000 templates)."""
    start = end = None
    parsed = failures = zero_tables = 0
    results = batch.parsed
    for template in templates:
        stats = template.stats
        if stats.firstSeen and (start is None or stats.firstSeen < start):
            start = stats.firstSeen
        if stats.lastSeen and (end is None or stats.lastSeen > end):
            end = stats.lastSeen
        result = results.get(template.templateId)
        if result is None:
            continue
        if result.error is not None:
            failures += 1
        else:
            parsed += 1
            zero_tables += not result.tables
    counts = {"templates": len(templates), "parsed": parsed, "parseFailures": failures,
              "zeroTableTemplates": zero_tables}
    return {"start": start, "end": end}, counts
