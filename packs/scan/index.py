"""The scan pack's contribution to the retrieval index, read from the ``_schema`` shards.

Shards hold the latest scan (plus what people and historic_sql added), so indexing them, not every
historical run under raw-sources/, keeps exactly one version of each table in the index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.error import YAMLError

from khive.connections.selection import internal_object
from khive.hookspecs import EdgeRule
from khive.index.documents import Document, DocumentBatch, Edge, FileSource, Item, dedupe_edges, words
from khive.project.store import FileStore
from khive.redact import Redactor
from packs.scan.artifacts import latest_sync, read_run_tables, redacted_at_scan
from packs.scan.shardread import RunShard, RunShards, ShardReader, run_shards
from packs.scan.shards import shown_samples, table_keys

TABLE, COLUMN = "table", "column"
EDGE_RULES = (
    EdgeRule("fk", frozenset({TABLE}), frozenset({TABLE})),
    EdgeRule("contains", frozenset({TABLE}), frozenset({COLUMN}), implied=True),  # its columns follow it
)
def table_id(connection: str, db: str, name: str) -> str:
    return f"table:{connection}:{db}.{name}"


def column_id(connection: str, db: str, table: str, column: str) -> str:
    return f"column:{connection}:{db}.{table}.{column}"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _aliases(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(item) for item in items if isinstance(item, str | int) and str(item).strip()]


def source_for(files: FileStore, project: Path, redactor: Redactor) -> FileSource:
    """The index source; untouched shards come from the latest run's JSON, edited ones parse once per edit
    (``ShardReader``), so the first search after a scan of 1,000 tables does not wait for a YAML parse.
    Server internals an older scan recorded are not indexed, and samples are redacted again (ADR 0035)."""
    runs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # the latest run's tables, one kept
    shards: dict[tuple[str, str], RunShards] = {}  # and its entries by shard, one kept

    def parse(path: str, text: str) -> Sequence[Item]:
        connection = path.split("/")[1] if path.count("/") >= 2 else ""
        sync = latest_sync(project, connection) if connection else None

        def run_tables() -> dict[str, dict[str, Any]]:
            assert sync is not None
            if (connection, sync) not in runs:
                runs.clear()
                runs[(connection, sync)] = read_run_tables(project, connection, sync)
            return runs[(connection, sync)]

        def from_run() -> RunShards | None:
            if sync is None:
                return None
            if (connection, sync) not in shards:
                shards.clear()
                shards[(connection, sync)] = run_shards(connection, run_tables())
            return shards[(connection, sync)]

        try:
            found = ShardReader(files, connection, sync, run_tables, from_run()).read(path, text.encode("utf-8"))
        except YAMLError as exc:
            raise ValueError(f"{path}: invalid YAML: {exc}") from None
        # a rescan rewrites every shard's samples: after a scan that redacted, there is nothing left to redact
        fresh = sync is not None and redacted_at_scan(project, connection, sync)
        if isinstance(found, tuple):  # the shard is the run's rendering: its documents come from the run itself
            return _run_documents(path, connection, found, None if fresh else redactor)
        return _documents(path, found, run_tables if sync is not None else dict, None if fresh else redactor)

    return FileSource(name="scan", roots=("_schema",), suffixes=(".yaml",), parse=parse, version="5")


@dataclass(frozen=True, slots=True)
class _Columns:
    """A table's columns as what their documents read, column by column (no entry dict per column)."""

    names: list[str]
    notes: list[str]  # described, else commented
    types: list[Any]
    native_types: list[Any]
    primary_keys: list[bool]
    comments: list[Any]
    samples: list[list[Any]]


def _entry_columns(entry: dict[str, Any]) -> _Columns:
    """From a shard entry (scan keys plus what people added)."""
    columns = [c for c in entry.get("columns") or [] if isinstance(c, dict) and c.get("name")]
    return _Columns(names=[str(c["name"]) for c in columns],
                    notes=[_text(c.get("description")) or _text(c.get("comment")) for c in columns],
                    types=[c.get("type") for c in columns], native_types=[c.get("nativeType") for c in columns],
                    primary_keys=[bool(c.get("primaryKey")) for c in columns],
                    comments=[c.get("comment") for c in columns],
                    samples=[list(c.get("samples") or []) for c in columns])


def _run_columns(table: dict[str, Any]) -> _Columns:
    """From a run's table artifact: what ``scan_entry`` would have put in the shard, read directly (a scan
    entry has no description; its comment is the column's)."""
    columns = [c for c in table.get("columns") or [] if c.get("name")]
    return _Columns(names=[str(c["name"]) for c in columns], notes=[_text(c.get("comment")) for c in columns],
                    types=[c["normalizedType"] for c in columns], native_types=[c["nativeType"] for c in columns],
                    primary_keys=[bool(c.get("primaryKey")) for c in columns],
                    comments=[c.get("comment") for c in columns],
                    samples=[list(shown_samples(c) or []) for c in columns])


def _documents(path: str, data: dict[str, Any], run_tables: Callable[[], dict[str, dict[str, Any]]],
               redactor: Redactor | None) -> Sequence[Item]:
    connection, catalog, db = data.get("connection"), data.get("catalog"), data.get("schema")
    if not connection or not db:
        raise ValueError(f"{path}: a shard needs connection: and schema:")
    documents = []
    for name, entry in (data.get("tables") or {}).items():
        if not isinstance(entry, dict) or entry.get("droppedInSync") or internal_object(str(db), str(name)):
            continue
        live = run_tables().get(f"{db}.{name}") or {}
        documents.extend(_table_documents(str(connection), catalog, str(db), str(name), _with_live(entry, live),
                                          _entry_columns(entry), redactor))
    return documents


def _run_documents(path: str, connection: str, shard: RunShard, redactor: Redactor | None) -> Sequence[Item]:
    """The documents of a shard that still holds what the scan rendered from the run's ``tables``: the same
    ones its parsed entries give, without making those entries (ADR 0050, 2026-12-02 second round)."""
    catalog, db, tables = shard
    if not connection or not db:
        raise ValueError(f"{path}: a shard needs connection: and schema:")
    documents: list[Item] = []
    for table in tables:
        name = str(table["name"])
        if internal_object(db, name):
            continue
        entry = _with_live(table_keys(table, {"kind": table.get("kind", "table")}), table)
        documents.extend(_table_documents(connection, catalog, db, name, entry, _run_columns(table), redactor))
    return documents


def _with_live(entry: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The shard entry with the live figures only the run keeps (ADR 0033): the row estimate and each
    inferred relationship's confidence. Without the run (a fresh clone) they stay unknown."""
    if not live:
        return entry
    confidence = {(r.get("toDb"), r.get("toTable"), tuple(r.get("fromColumns") or ())): r.get("confidence")
                  for r in live.get("inferredRelationships") or []}
    relationships = [{**rel, "confidence": rel.get("confidence", confidence.get(
                         (rel.get("toDb"), rel.get("toTable"), tuple(rel.get("fromColumns") or ()))))}
                     for rel in entry.get("inferredRelationships") or []]
    return {**entry, "estimatedRows": entry.get("estimatedRows", live.get("estimatedRows")),
            "inferredRelationships": relationships}


def _table_documents(connection: str, catalog: str | None, db: str, name: str, entry: dict[str, Any],
                     columns: _Columns, redactor: Redactor | None) -> list[Item]:
    """A table's document and its columns' batch; ``entry`` gives the table's keys, ``columns`` its columns."""
    tid = table_id(connection, db, name)
    names, notes = columns.names, columns.notes
    name_words = [words(cname) for cname in names]
    column_ids = [column_id(connection, db, name, cname) for cname in names]
    description = _text(entry.get("description")) or _text(entry.get("comment"))
    usage = entry.get("usage") or {}
    usage_text = _text(usage.get("narrative")) if isinstance(usage, dict) else ""
    edges = []  # and "contains" to each column, from the batch of them below
    for fk in entry.get("foreignKeys") or []:
        edges.append(Edge("fk", table_id(connection, fk["refDb"], fk["refTable"]),
                          {"columns": fk["columns"], "refColumns": fk["refColumns"]}))
    for rel in entry.get("inferredRelationships") or []:
        edges.append(Edge("fk", table_id(connection, rel["toDb"], rel["toTable"]),
                          {"columns": rel["fromColumns"], "refColumns": rel["toColumns"], "inferred": True,
                           "confidence": rel.get("confidence")}))
    table_ref = {"catalog": catalog, "db": db, "name": name}
    aliases = _aliases(entry.get("aliases"))  # written by people beside the scan's keys
    table_words = words(name)
    column_names = " ".join(f"{cname} {spelled}" for cname, spelled in zip(names, name_words, strict=True))
    column_notes = " ".join(notes)
    documents: list[Item] = [Document(
        id=tid, kind=TABLE, title=f"{db}.{name}", connection=connection,
        fields={"name": " ".join([name, table_words, *aliases]), "title": f"{db}.{name}", "summary": description,
                "tags": "", "body": f"{column_names} {column_notes}".strip(), "extra": usage_text},
        metadata={"connectionId": connection, "tableRef": table_ref, "kind": entry.get("kind", "table"),
                  "aliases": aliases,
                  "estimatedRows": entry.get("estimatedRows"), "comment": entry.get("comment"),
                  "description": entry.get("description"), "columnCount": len(names),
                  "frequencyTier": usage.get("frequencyTier") if isinstance(usage, dict) else None},
        edges=dedupe_edges(edges),
        embed_text=f"{table_words} {description} {' '.join(name_words)}",
    )]
    if not names:
        return documents
    # the columns as one batch: their values column by column, no Document per column, and the table's
    # "contains" edges to them declared once (ADR 0050)
    shown = ([redactor.column_values(cname, samples) for cname, samples in zip(names, columns.samples, strict=True)]
             if redactor is not None else columns.samples)
    documents.append(DocumentBatch(
        kind=COLUMN, connection=connection, ids=column_ids, from_previous="contains",
        titles=[f"{db}.{name}.{cname}" for cname in names],
        fields={"name": [f"{cname} {spelled}" for cname, spelled in zip(names, name_words, strict=True)],
                "title": [f"{name}.{cname}" for cname in names], "summary": notes,
                "tags": [_text(kind) for kind in columns.types],
                "body": [" ".join([_text(v) for v in values]) if values else "" for values in shown],
                "extra": [f"{name} {table_words}"] * len(names)},  # every column's: the table it is in
        # samples would drown the name in repeats
        embed_texts=[f"{spelled} {table_words} {note}" for spelled, note in zip(name_words, notes, strict=True)],
        metadata=[{"connectionId": connection, "tableRef": table_ref, "columnName": cname,
                   "type": kind, "nativeType": native, "primaryKey": key, "comment": comment,
                   "samples": values[:10]}
                  for cname, kind, native, key, comment, values in zip(
                      names, columns.types, columns.native_types, columns.primary_keys, columns.comments, shown,
                      strict=True)],
    ))
    return documents
