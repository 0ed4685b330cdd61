"""Scan artifacts under ``raw-sources/<connection>/live-database/<syncId>/`` (immutable runs, khive.project.runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from khive.connections.catalog import CatalogSnapshot, Table
from khive.project import runs
from khive.project.runs import completed_runs, json_bytes

LIVE = "live-database"


def runs_dir(project: Path, connection: str) -> Path:
    return project / "raw-sources" / connection / LIVE


def sync_ids(project: Path, connection: str) -> list[str]:
    """Completed runs, oldest first (sync ids sort by time)."""
    return completed_runs(runs_dir(project, connection))


def latest_sync(project: Path, connection: str) -> str | None:
    ids = sync_ids(project, connection)
    return ids[-1] if ids else None


def table_file_name(table: Table) -> str:
    return f"{table.db}-{table.name}.json".replace("/", "_")


def write_run(project: Path, connection: str, sync_id: str, connection_info: dict[str, Any],
              tables: dict[str, dict[str, Any]], report: dict[str, Any]) -> Path:
    files = {"connection.json": json_bytes(connection_info), "scan-report.json": json_bytes(report)}
    files.update({f"tables/{name}": json_bytes(data) for name, data in tables.items()})
    return runs.write_run(runs_dir(project, connection), sync_id, files)


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
