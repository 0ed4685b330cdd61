"""Scan artifacts under ``raw-sources/<connection>/live-database/<syncId>/``.

A run is written into a hidden temporary directory and renamed into place at the end, so a failed
scan leaves the previous one intact and readers never see half a run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from khive.connections.catalog import CatalogSnapshot, Table

LIVE = "live-database"
_FSYNC_WORKERS = 8


def new_sync_id(now: datetime | None = None) -> str:
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def runs_dir(project: Path, connection: str) -> Path:
    return project / "raw-sources" / connection / LIVE


def sync_ids(project: Path, connection: str) -> list[str]:
    """Completed runs, oldest first (sync ids sort by time)."""
    root = runs_dir(project, connection)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def latest_sync(project: Path, connection: str) -> str | None:
    ids = sync_ids(project, connection)
    return ids[-1] if ids else None


def table_file_name(table: Table) -> str:
    return f"{table.db}-{table.name}.json".replace("/", "_")


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def write_run(project: Path, connection: str, sync_id: str, connection_info: dict[str, Any],
              tables: dict[str, dict[str, Any]], report: dict[str, Any]) -> Path:
    root = runs_dir(project, connection)
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{sync_id}.{uuid.uuid4().hex[:8]}.tmp"
    (staging / "tables").mkdir(parents=True)
    try:
        written = [_write(staging / "connection.json", dumps(connection_info))]
        written += [_write(staging / "tables" / name, dumps(data)) for name, data in tables.items()]
        written.append(_write(staging / "scan-report.json", dumps(report)))
        # Every file reaches the disk before the rename publishes the run. One fsync per file right after its
        # write serialises a journal commit per table; fsyncs issued together are committed together.
        with ThreadPoolExecutor(max_workers=_FSYNC_WORKERS) as pool:
            list(pool.map(_fsync_file, written))
        final = root / sync_id
        os.rename(staging, final)
        _fsync_dir(root)
        return final
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write(path: Path, data: bytes) -> Path:
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def read_run_tables(project: Path, connection: str, sync_id: str) -> dict[str, dict[str, Any]]:
    """Table artifacts of one run keyed by ``db.name``."""
    folder = runs_dir(project, connection) / sync_id / "tables"
    tables = {}
    for path in sorted(folder.glob("*.json")):
        data = read_json(path)
        tables[f"{data['db']}.{data['name']}"] = data
    return tables


def read_report(project: Path, connection: str, sync_id: str) -> dict[str, Any]:
    data: dict[str, Any] = read_json(runs_dir(project, connection) / sync_id / "scan-report.json")
    return data


def table_artifact(snapshot: CatalogSnapshot, table: Table, samples: dict[tuple[str, str, str], Any],
                   inferred: list[dict[str, Any]]) -> dict[str, Any]:
    data = table.model_dump(mode="json", by_alias=True)
    data["descriptions"] = {"db": table.comment} if table.comment else {}
    for column in data["columns"]:
        sample = samples.get((table.db, table.name, column["name"]))
        if sample is not None:
            column["samples"] = {key: value for key, value in sample.items()
                                 if key in ("values", "frequencies", "distinct", "nulls", "skipped", "sampledRows")}
        if column.get("comment"):
            column["descriptions"] = {"db": column["comment"]}
    data["inferredRelationships"] = inferred
    return data
