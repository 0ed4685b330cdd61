"""Scan artifacts under ``raw-sources/<connection>/live-database/<syncId>/`` (immutable runs, khive.project.runs).

A run holds ``connection.json``, ``tables.json`` (``{"tables": [...]}``, one artifact per table, sorted by
schema and name; on one line since ADR 0049: runs are machine-local, read by programs) and ``scan-report.json``
(ADR 0021). Runs written before ADR 0021 hold one ``tables/<db>-<name>.json`` per table instead; they are still
read.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic.alias_generators import to_camel

from khive.connections.catalog import Column, Table
from khive.connections.selection import internal_object
from khive.project.config import RunsConfig
from khive.project.runs import compact_json_bytes, completed_runs, prune_runs, staged_run
from khive.project.store import inside

if TYPE_CHECKING:
    from khive.services import Services

LIVE = "live-database"
TABLES_FILE = "tables.json"
REPORT_FILE = "scan-report.json"


def runs_dir(project: Path, connection: str) -> Path:
    """The connection's run directory, resolved: path_outside_project when a symlink leads it elsewhere."""
    return inside(project, Path("raw-sources", connection, LIVE))


def sync_ids(project: Path, connection: str) -> list[str]:
    """Completed runs, oldest first (sync ids sort by time)."""
    return completed_runs(runs_dir(project, connection))


def latest_sync(project: Path, connection: str) -> str | None:
    ids = sync_ids(project, connection)
    return ids[-1] if ids else None


def stage_run(project: Path, connection: str, sync_id: str) -> Any:
    """``with stage_run(...) as run: run.write(name, bytes)``: published when the block ends."""
    return staged_run(runs_dir(project, connection), sync_id)


def tables_bytes(tables: list[dict[str, Any]]) -> bytes:
    """``tables.json``: read by programs only (the scan's verbs, the index, historic_sql), so written compactly."""
    return compact_json_bytes({"tables": sorted(tables, key=lambda t: (t["db"], t["name"]))})


def read_json(project: Path, path: Path) -> Any:
    return orjson.loads(inside(project, path).read_bytes())


def read_run_tables(project: Path, connection: str, sync_id: str) -> dict[str, dict[str, Any]]:
    """Table artifacts of one run keyed by ``db.name``; server internals an older run recorded are left out
    (khive.connections.selection)."""
    run = runs_dir(project, connection) / sync_id
    try:
        listed = read_json(project, run / TABLES_FILE)["tables"]
    except FileNotFoundError:  # a run from before ADR 0021: one file per table
        listed = [read_json(project, path) for path in sorted((run / "tables").glob("*.json"))]
    return {f"{data['db']}.{data['name']}": data for data in listed
            if internal_object(data["db"], data["name"]) is None}


RunTables = dict[tuple[str, str], dict[str, dict[str, Any]]]


def cached_run_tables(runtime: Services, connection: str, sync_id: str) -> dict[str, dict[str, Any]]:
    """A run's table artifacts; runs are immutable, so a warm process reads each one once (last 4 kept)."""
    runs: RunTables = runtime.pack_state("scan.runs", RunTables)
    guard = runtime.pack_state("scan.runs.lock", threading.Lock)  # verbs run in worker threads
    key = (connection, sync_id)
    found = runs.get(key)
    if found is None:
        found = read_run_tables(runtime.project, connection, sync_id)
        with guard:
            runs[key] = found
            while len(runs) > 4:
                runs.pop(next(iter(runs)))
    return found


def read_run_info(project: Path, connection: str, sync_id: str) -> dict[str, Any] | None:
    """A run's ``connection.json``, or None when it has none."""
    try:
        data: dict[str, Any] = read_json(project, runs_dir(project, connection) / sync_id / "connection.json")
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    return data


def prune_scan_runs(project: Path, connection: str, policy: RunsConfig) -> list[str]:
    """Apply the retention policy (``runs:`` in khive.yaml): the newest runs, plus those that changed the schema."""

    def changed_schema(sync_id: str) -> bool:
        if not policy.keep_schema_changes:
            return False
        try:
            diff = read_report(project, connection, sync_id).get("diffSummary") or {}
        except (FileNotFoundError, orjson.JSONDecodeError):
            return False
        return any((diff.get(part) or {}).get(kind) for part in ("tables", "columns")
                   for kind in ("added", "modified", "deleted"))

    return prune_runs(runs_dir(project, connection), policy.keep_last, changed_schema)


def read_report(project: Path, connection: str, sync_id: str) -> dict[str, Any]:
    data: dict[str, Any] = read_json(project, runs_dir(project, connection) / sync_id / REPORT_FILE)
    if isinstance(data.get("timings"), dict):  # reports from before ADR 0039 spell them catalog_ms, ...
        data["timings"] = {to_camel(key): value for key, value in data["timings"].items()}
    return data


@lru_cache(maxsize=256)  # runs are immutable
def redacted_at_scan(project: Path, connection: str, sync_id: str) -> bool:
    """Whether the run's samples were redacted when it was written (ADR 0035: its report counts redactions);
    readers redact what older runs hold as they show it."""
    try:
        return "redactions" in read_report(project, connection, sync_id)
    except (FileNotFoundError, orjson.JSONDecodeError):
        return False


_SAMPLE_KEYS = ("values", "frequencies", "distinct", "nulls", "skipped", "sampledRows")


# A table artifact's keys in the order ``Table.model_dump`` gives them (the shard state's digest is of this order).
_TABLE_KEYS = tuple(field.alias or name for name, field in Table.model_fields.items())

# Column artifacts without samples by the ``Column`` they were made from, for one scan (``build_column`` gives
# equal columns one object); the object is kept with its artifact so that its id is not reused meanwhile.
ColumnArtifacts = dict[int, tuple[Column, dict[str, Any]]]


def table_artifact(table: Table, samples: dict[tuple[str, str, str], Any],
                   inferred: list[dict[str, Any]], made: ColumnArtifacts | None = None) -> dict[str, Any]:
    """One table of ``tables.json``. With ``made``, a column without samples shares its artifact with every
    other table's equal column (a big warehouse repeats nine in ten columns): callers must not change them."""
    columns = []
    for column in table.columns:
        sample = samples.get((table.db, table.name, column.name)) if samples else None
        if sample is not None or made is None:
            columns.append(_column_artifact(column, sample))
            continue
        known = made.get(id(column))
        if known is None:
            known = made[id(column)] = (column, _column_artifact(column, None))
        columns.append(known[1])
    rest = table.model_dump(mode="json", by_alias=True, exclude={"columns"})
    data = {key: columns if key == "columns" else rest[key] for key in _TABLE_KEYS}
    data["descriptions"] = {"db": table.comment} if table.comment else {}
    data["inferredRelationships"] = inferred
    return data


def _column_artifact(column: Column, sample: dict[str, Any] | None) -> dict[str, Any]:
    data = column.model_dump(mode="json", by_alias=True)
    if sample is not None:
        data["samples"] = {key: value for key, value in sample.items() if key in _SAMPLE_KEYS}
    if data.get("comment"):
        data["descriptions"] = {"db": data["comment"]}
    return data
