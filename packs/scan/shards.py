"""``_schema/<connection>/<catalog.schema>.yaml``: the reviewable, shared view of the latest scan.

One entry per table. Scan-managed keys are replaced by every scan; any other key (descriptions,
notes, ``usage`` from historic_sql) is kept, on tables and on columns alike. Writes are locked
read-modify-writes through the project file store, so the scan and other writers never lose a key.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from khive.project.store import FileStore

SCAN_TABLE_KEYS = ("kind", "comment", "estimatedRows", "syncId", "columns", "foreignKeys", "inferredRelationships",
                   "droppedInSync")
SCAN_COLUMN_KEYS = ("name", "type", "nativeType", "dimensionType", "nullable", "default", "primaryKey", "comment",
                    "samples")
HEADER = ("# Written by khive scan. Keys the scan manages are replaced on every scan:\n"
          f"#   tables: {', '.join(SCAN_TABLE_KEYS)}\n"
          f"#   columns: {', '.join(SCAN_COLUMN_KEYS)}\n"
          "# Add anything else (description, notes, ...) beside them; it is kept.\n")


def shard_path(connection: str, catalog: str | None, schema: str) -> str:
    name = f"{catalog}.{schema}" if catalog else schema
    return f"_schema/{connection}/{name.replace('/', '_')}.yaml"


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 120
    return yaml


def load(text: str | None) -> CommentedMap:
    if not text:
        return CommentedMap()
    data = _yaml().load(text)
    return data if isinstance(data, CommentedMap) else CommentedMap()


def dump(data: CommentedMap) -> str:
    stream = io.StringIO()
    _yaml().dump(data, stream)
    body = stream.getvalue()
    return body if body.startswith("#") else HEADER + body


def scan_entry(table: dict[str, Any], sync_id: str) -> dict[str, Any]:
    """The scan-managed part of one table's shard entry, from its scan artifact."""
    columns = []
    for column in table.get("columns", []):
        entry: dict[str, Any] = {"name": column["name"], "type": column["normalizedType"],
                                 "nativeType": column["nativeType"], "dimensionType": column["dimensionType"],
                                 "nullable": column["nullable"]}
        for key in ("default", "comment"):
            if column.get(key) is not None:
                entry[key] = column[key]
        if column.get("primaryKey"):
            entry["primaryKey"] = True
        values = (column.get("samples") or {}).get("values")
        if values:
            entry["samples"] = list(values[:10])
        columns.append(entry)
    entry_out: dict[str, Any] = {"kind": table.get("kind", "table"), "syncId": sync_id, "columns": columns}
    if table.get("comment"):
        entry_out["comment"] = table["comment"]
    if table.get("estimatedRows") is not None:
        entry_out["estimatedRows"] = table["estimatedRows"]
    if table.get("foreignKeys"):
        entry_out["foreignKeys"] = [{"columns": list(fk["columns"]), "refDb": fk["refDb"], "refTable": fk["refTable"],
                                     "refColumns": list(fk["refColumns"])} for fk in table["foreignKeys"]]
    accepted = [r for r in table.get("inferredRelationships", []) if r.get("tier") == "accepted"]
    if accepted:
        entry_out["inferredRelationships"] = accepted
    return entry_out


def merge(document: CommentedMap, header: dict[str, Any], entries: dict[str, dict[str, Any]], sync_id: str
          ) -> CommentedMap:
    for key, value in header.items():
        document[key] = value
    tables = document.get("tables")
    if not isinstance(tables, CommentedMap):
        tables = CommentedMap()
        document["tables"] = tables
    for name, fresh in entries.items():
        current = tables.get(name)
        if not isinstance(current, CommentedMap):
            current = CommentedMap()
            tables[name] = current
        _merge_table(current, fresh)
    for name in [n for n in tables if n not in entries]:
        current = tables[name]
        kept = [k for k in current if k not in SCAN_TABLE_KEYS] if isinstance(current, CommentedMap) else []
        if not kept:
            del tables[name]
            continue
        for key in SCAN_TABLE_KEYS:
            current.pop(key, None)
        current["droppedInSync"] = sync_id  # people wrote about it: keep their words, say it is gone
    return document


def _merge_table(current: CommentedMap, fresh: dict[str, Any]) -> None:
    old_columns = {c.get("name"): c for c in current.get("columns", []) if isinstance(c, dict)}
    for key in SCAN_TABLE_KEYS:
        if key not in fresh:
            current.pop(key, None)
    for key, value in fresh.items():
        if key == "columns":
            merged = CommentedSeq()
            for column in value:
                target = CommentedMap(column)
                previous = old_columns.get(column["name"])
                if previous is not None:
                    for extra_key, extra_value in previous.items():
                        if extra_key not in SCAN_COLUMN_KEYS:
                            target[extra_key] = extra_value
                merged.append(target)
            current["columns"] = merged
        else:
            current[key] = value


def write_shards(files: FileStore, connection: str, sync_id: str, tables: Iterable[dict[str, Any]],
                 *, author: str) -> list[str]:
    """Merge the scan into every shard of ``connection``; shards of schemas no longer seen lose their tables."""
    grouped: dict[tuple[str | None, str], dict[str, dict[str, Any]]] = {}
    for table in tables:
        grouped.setdefault((table.get("catalog"), table["db"]), {})[table["name"]] = scan_entry(table, sync_id)
    written = []
    existing = {path for path in files.list(f"_schema/{connection}/", suffix=".yaml")}
    targets = {shard_path(connection, catalog, schema): (catalog, schema) for catalog, schema in grouped}
    for path in sorted(existing | targets.keys()):
        catalog, schema = targets.get(path, (None, ""))
        entries = grouped.get((catalog, schema), {}) if path in targets else {}

        def update(text: str | None, entries: dict[str, dict[str, Any]] = entries,
                   catalog: str | None = catalog, schema: str = schema, path: str = path) -> str:
            document = load(text)
            header = {"connection": connection, "catalog": catalog, "schema": schema} if path in targets else {}
            return dump(merge(document, header, entries, sync_id))

        result = files.update(path, update, author=author, message=f"scan: {connection} {sync_id}")
        if result.changed:
            written.append(path)
    return written


def read_shard_tables(files: FileStore, connection: str) -> dict[str, dict[str, Any]]:
    """``db.name`` -> merged entry (scan keys plus everything people and tools added)."""
    out: dict[str, dict[str, Any]] = {}
    for path in files.list(f"_schema/{connection}/", suffix=".yaml"):
        data = YAML(typ="safe").load(files.read_text(path) or "") or {}
        for name, entry in (data.get("tables") or {}).items():
            out[f"{data.get('schema')}.{name}"] = {**entry, "catalog": data.get("catalog"), "db": data.get("schema"),
                                                   "name": name}
    return out
