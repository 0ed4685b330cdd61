"""``_schema/<connection>/<catalog.schema>.yaml``: the reviewable, shared view of the latest scan.

One entry per table. Scan-managed keys are replaced by every scan; any other key (descriptions,
notes, ``usage`` from historic_sql) is kept, on tables and on columns alike. Writes are locked
read-modify-writes through the project file store, so the scan and other writers never lose a key.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.nodes import ScalarNode

from khive.atomicfile import replace_bytes
from khive.project.locate import STATE_DIR
from khive.project.store import FileStore
from khive.project.yamldoc import schema_shard_yaml
from packs.scan.examples import SHOWN

SCAN_TABLE_KEYS = ("kind", "comment", "columns", "foreignKeys", "inferredRelationships", "droppedInSync")
# syncId: written per table before ADR 0021; estimatedRows: before ADR 0033 (a live figure: the run has it)
_RETIRED_TABLE_KEYS = ("syncId", "estimatedRows")
_MANAGED_TABLE_KEYS = SCAN_TABLE_KEYS + _RETIRED_TABLE_KEYS
SCAN_COLUMN_KEYS = ("name", "type", "nativeType", "dimensionType", "nullable", "default", "primaryKey", "comment",
                    "samples")
HEADER = ("# Written by khive scan. Keys the scan manages are replaced on every scan:\n"
          f"#   tables: {', '.join(SCAN_TABLE_KEYS)}\n"
          f"#   columns: {', '.join(SCAN_COLUMN_KEYS)}\n"
          "# Add anything else (description, notes, ...) beside them; it is kept.\n")


_RELATIONSHIP_KEYS = ("fromColumns", "toDb", "toTable", "toColumns", "tier")


def shard_path(connection: str, catalog: str | None, schema: str) -> str:
    name = f"{catalog}.{schema}" if catalog else schema
    return f"_schema/{connection}/{name.replace('/', '_')}.yaml"


def load(text: str | None) -> CommentedMap:
    if not text:
        return CommentedMap()
    data = schema_shard_yaml().load(text)
    return data if isinstance(data, CommentedMap) else CommentedMap()


def dump(data: CommentedMap) -> str:
    stream = io.StringIO()
    schema_shard_yaml().dump(data, stream)
    body = stream.getvalue()
    return body if body.startswith("#") else HEADER + body


# A column's entry by what it is made of (values and their types: True and 1 are equal keys), for one write.
_ColumnKey = tuple[tuple[Any, ...], tuple[type, ...]]


class ColumnEntries:
    """Column entries made during one write: by the artifact (the scan shares equal columns' artifacts,
    ``table_artifact``) and by value (equal columns at other positions)."""

    def __init__(self) -> None:
        self.by_artifact: dict[int, dict[str, Any]] = {}
        self.by_value: dict[_ColumnKey, dict[str, Any]] = {}
        self.artifacts: list[dict[str, Any]] = []  # what ``by_artifact`` holds ids of stays alive

    def entry(self, column: dict[str, Any]) -> dict[str, Any]:
        made = self.by_artifact.get(id(column))
        if made is not None:
            return made
        shown = shown_samples(column)
        values = (column["name"], column["normalizedType"], column["nativeType"], column["dimensionType"],
                  column["nullable"], column.get("default"), column.get("comment"), bool(column.get("primaryKey")),
                  *shown)
        key = (values, tuple(map(type, values)))
        try:
            made = self.by_value.get(key)
        except TypeError:  # an unhashable sample value (a JSON document): this column is not shared
            return _column_entry(column, shown)
        if made is None:
            made = self.by_value[key] = _column_entry(column, shown)
        self.by_artifact[id(column)] = made
        self.artifacts.append(column)
        return made


def scan_entry(table: dict[str, Any], made: ColumnEntries | None = None) -> dict[str, Any]:
    """The scan-managed part of one table's shard entry, from its scan artifact.

    No sync id, no live figures (row estimates, sample frequencies, relationship confidence) and sample
    values chosen to stay put (``examples.py``): an entry changes when the table does, or when its data's
    distribution does, so a re-scan of an unchanged schema rewrites nothing (ADRs 0021, 0033).

    With ``made``, equal columns share one entry (most of a big warehouse's columns repeat: ``id``, the same
    comment), which ``render`` then writes once; the caller must not change the entries."""
    columns = [made.entry(column) if made is not None else _column_entry(column, shown_samples(column))
               for column in table.get("columns", [])]
    return table_keys(table, {"kind": table.get("kind", "table"), "columns": columns})


def table_keys(table: dict[str, Any], entry_out: dict[str, Any]) -> dict[str, Any]:
    """``entry_out`` with the scan-managed table keys after ``kind`` and ``columns`` (``scan_entry``'s)."""
    if table.get("comment"):
        entry_out["comment"] = table["comment"]
    if table.get("foreignKeys"):
        entry_out["foreignKeys"] = [{"columns": list(fk["columns"]), "refDb": fk["refDb"], "refTable": fk["refTable"],
                                     "refColumns": list(fk["refColumns"])} for fk in table["foreignKeys"]]
    # Which relationships were accepted, not their confidence or evidence: those follow the sampled values.
    accepted = [{key: rel[key] for key in _RELATIONSHIP_KEYS if key in rel}
                for rel in table.get("inferredRelationships", []) if rel.get("tier") == "accepted"]
    if accepted:
        entry_out["inferredRelationships"] = accepted
    return entry_out


def shown_samples(column: dict[str, Any]) -> list[Any]:
    """The sample values a column's shard entry shows."""
    samples = column.get("samples") or {}
    shown: list[Any] = samples.get("examples", (samples.get("values") or [])[:SHOWN])  # before ADR 0033: no examples
    return shown


def _column_entry(column: dict[str, Any], shown: list[Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": column["name"], "type": column["normalizedType"],
                             "nativeType": column["nativeType"], "dimensionType": column["dimensionType"],
                             "nullable": column["nullable"]}
    for key in ("default", "comment"):
        if column.get(key) is not None:
            entry[key] = column[key]
    if column.get("primaryKey"):
        entry["primaryKey"] = True
    if shown:
        entry["samples"] = list(shown)
    return entry


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
        kept = [k for k in current if k not in _MANAGED_TABLE_KEYS] if isinstance(current, CommentedMap) else []
        if not kept:
            del tables[name]
            continue
        for key in _MANAGED_TABLE_KEYS:
            current.pop(key, None)
        current["droppedInSync"] = sync_id  # people wrote about it: keep their words, say it is gone
    return document


def _merge_table(current: CommentedMap, fresh: dict[str, Any]) -> None:
    old_columns = {c.get("name"): c for c in current.get("columns", []) if isinstance(c, dict)}
    for key in _MANAGED_TABLE_KEYS:
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


# ---- the fast path: shards nobody but the scan has touched ----------------------------------------------------
#
# Round-tripping a shard through ruamel costs ~50 us per scalar each way (a 1,000-table schema: ~10 s to
# dump, ~17 s to load). A shard the scan wrote and nobody edited since (its sha256 is the one recorded in
# .khive/scan/<connection>.shards.json) has nothing to keep, so it is rendered straight from the scan
# entries by ``render``, which writes exactly what ruamel's round-trip dumper writes for the same data:
# scalars it cannot vouch for go through ruamel one by one (cached), and a table holding a line that
# ruamel might fold (over ``width``) goes through ruamel whole. Any other shard takes the merge path.

_WIDTH = 120
_FIRST_NOT_PLAIN = frozenset("#,[]{}&*!|>'\"%@`?:-. ")
_STR_TAG = "tag:yaml.org,2002:str"


class _Unsure(Exception):
    """A value ``render`` does not write itself: the table goes through ruamel."""


@lru_cache(maxsize=1)
def _resolver() -> Any:
    return schema_shard_yaml().resolver


@lru_cache(maxsize=1)
def _resolved_firsts() -> frozenset[str]:
    """First characters for which the resolver has implicit types; a plain scalar starting otherwise is a str."""
    return frozenset(_resolver().versioned_resolver)


@lru_cache(maxsize=65536, typed=True)
def _ruamel_scalar(value: Any, key: bool) -> str:
    """How ruamel writes one scalar as a value (or a key) of a top-level mapping, if on one line."""
    stream = io.StringIO()
    schema_shard_yaml().dump({value: 0} if key else {"k": value}, stream)
    text = stream.getvalue()
    if "\x85" in text or "\u2028" in text or "\u2029" in text:  # line breaks too: the indent depends on where
        raise _Unsure
    if key:
        if not text.endswith(": 0\n") or text.count("\n") != 1 or text.startswith("?"):
            raise _Unsure
        return text[:-4]
    if text.count("\n") != 1 or not text.startswith("k:"):
        raise _Unsure
    return text[3:-1] if len(text) > 3 else ""


@lru_cache(maxsize=65536)
def _string(value: str, key: bool) -> str:
    """Plain when ruamel would write it plain (printable ASCII, no indicator, read back as a string),
    single-quoted when only the implicit type is in the way ('123', 'true', '2024-01-31'), else ruamel's."""
    if (value and value.isascii() and value.isprintable() and value[0] not in _FIRST_NOT_PLAIN
            and value[-1] not in " :" and ": " not in value and " #" not in value and len(value) < 100):
        if value[0] not in _resolved_firsts() or _resolver().resolve(ScalarNode, value, (True, False)) == _STR_TAG:
            return value
        if not key and "'" not in value:
            return f"'{value}'"
    return _ruamel_scalar(value, key)


def _scalar(value: Any, key: bool = False) -> str:
    if isinstance(value, str):
        return _string(value, key)
    if key:
        raise _Unsure
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value).lower()
    return _ruamel_scalar(value, False)


# The text of a sequence's mapping item (its lines joined), for one render: by the item itself when
# ``scan_entry`` shared it (the same object, the same text), else by (pad, each key with its value and the value's
# type: True and 1 are equal keys). A list of scalars counts as its items and their types, so the foreign keys
# and relationships that many tables share (``customer_id -> customer.id``) are written once too.
_MadeKey = tuple[str, tuple[tuple[Any, ...], ...]]


def _made_key(pad: str, item: dict[str, Any]) -> _MadeKey:
    """The key of ``item``'s text; hashing it raises TypeError when a value is not made of scalars."""
    parts: list[tuple[Any, ...]] = []
    for key, value in item.items():
        kind = type(value)
        if kind is list or kind is tuple:
            parts.append((key, kind, tuple(value), tuple(map(type, value))))
        else:
            parts.append((key, kind, value))
    return pad, tuple(parts)


class _Made:
    def __init__(self) -> None:
        self.by_value: dict[_MadeKey, str] = {}
        self.by_item: dict[str, dict[int, str]] = {}  # pad -> id(item) -> text
        self.items: list[dict[str, Any]] = []  # what ``by_item`` holds ids of stays alive for the render


def _mapping(data: dict[str, Any], pad: str, lines: list[str], made: _Made) -> None:
    # Exact types first (str, bool, int are nearly every value): this loop runs ~300k times per 1,000 tables.
    for key, value in data.items():
        name = _string(key, True) if type(key) is str else _scalar(key, key=True)
        kind = type(value)
        if kind is str:
            line = f"{pad}{name}: {_string(value, False)}"
        elif kind is bool:
            line = f"{pad}{name}: {'true' if value else 'false'}"
        elif kind is int:
            line = f"{pad}{name}: {value}"
        elif value is None:
            lines.append(f"{pad}{name}:")
            continue
        elif isinstance(value, dict):
            if not value:
                raise _Unsure
            lines.append(f"{pad}{name}:")
            _mapping(value, pad + "  ", lines, made)
            continue
        elif isinstance(value, list | tuple):
            if not value:
                raise _Unsure
            lines.append(f"{pad}{name}:")
            _sequence(value, pad, lines, made)
            continue
        else:
            line = f"{pad}{name}: {_scalar(value)}"
        if len(line) > _WIDTH:
            raise _Unsure
        lines.append(line)


def _sequence(items: list[Any] | tuple[Any, ...], pad: str, lines: list[str], made: _Made) -> None:
    by_item = made.by_item.setdefault(pad, {})
    for item in items:
        if isinstance(item, dict):
            done = by_item.get(id(item))
            if done is not None:  # ~200,000 columns at 10,000 tables, nine in ten of them shared
                lines.append(done)
                continue
            if not item:
                raise _Unsure
            # columns repeat across tables (id, created_at, the same comment): their lines are made once
            key = _made_key(pad, item)
            try:
                done, hashable = made.by_value.get(key), True
            except TypeError:  # a value that is no scalar (a JSON sample): this item is written as it comes
                done, hashable = None, False
            if done is None:
                start = len(lines)
                _mapping(item, pad + "  ", lines, made)
                lines[start] = f"{pad}- {lines[start][len(pad) + 2:]}"
                done = "\n".join(lines[start:])
                del lines[start:]
                if hashable:
                    made.by_value[key] = done
            lines.append(done)
            by_item[id(item)] = done
            made.items.append(item)
        elif isinstance(item, list | tuple | type(None)):
            raise _Unsure
        else:
            line = f"{pad}- {_scalar(item)}"
            if len(line) > _WIDTH:
                raise _Unsure
            lines.append(line)


def _unshared(value: Any) -> Any:
    """``value`` with every dict and list its own: ruamel writes an object met twice as an anchor and aliases,
    and ``scan_entry`` shares equal columns' entries."""
    if isinstance(value, dict):
        return {key: _unshared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unshared(item) for item in value]
    return value


def _ruamel_table(name: str, entry: dict[str, Any]) -> str:
    stream = io.StringIO()
    schema_shard_yaml().dump({"tables": {name: _unshared(entry)}}, stream)
    return stream.getvalue().partition("\n")[2]


def render(header: dict[str, Any], entries: dict[str, dict[str, Any]]) -> str:
    """``dump(merge(CommentedMap(), header, entries, ...))``, without ruamel's per-scalar machinery."""
    if not entries:
        return dump(merge(CommentedMap(), header, entries, ""))
    lines: list[str] = []
    made = _Made()
    try:
        _mapping(header, "", lines, made)
    except _Unsure:
        return dump(merge(CommentedMap(), header, _unshared(entries), ""))
    parts = [HEADER, "\n".join(lines), "\ntables:\n"] if lines else [HEADER, "tables:\n"]
    for name, entry in entries.items():
        table: list[str] = []
        try:
            table.append(f"  {_scalar(name, key=True)}:")
            _mapping(entry, "    ", table, made)
        except _Unsure:
            parts.append(_ruamel_table(name, entry))
            continue
        parts.append("\n".join(table))
        parts.append("\n")
    return "".join(parts)


# ---- which shards hold exactly what the scan wrote ---------------------------------------------------------
#
# .khive/scan/<connection>.shards.json: shard path -> {"text": sha256 of the text the fast path wrote,
# "entries": sha256 of the table artifacts its entries were made from, "syncId": the latest run those entries are
# the scan part of}. A shard whose text still has that digest holds nothing but the scan's entries, so
# a re-scan with the same entries leaves it alone, and readers (shardread.py) can take the entries from
# the run's tables.json instead of parsing YAML.

_STATE_VERSION = 2


def _state_file(files: FileStore, connection: str) -> Path:
    return files.root / STATE_DIR / "scan" / f"{connection}.shards.json"


def read_state(files: FileStore, connection: str) -> dict[str, dict[str, str]]:
    try:
        data = orjson.loads(_state_file(files, connection).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {}
    if isinstance(data, dict) and "version" not in data:  # before ADR 0021: path -> text digest
        return {str(k): {"text": str(v)} for k, v in data.items()}
    if not isinstance(data, dict) or data.get("version") != _STATE_VERSION:
        return {}
    shards = data.get("shards")
    return {str(k): v for k, v in shards.items() if isinstance(v, dict)} if isinstance(shards, dict) else {}


def _write_state(files: FileStore, connection: str, state: dict[str, dict[str, str]]) -> None:
    replace_bytes(_state_file(files, connection),
                  orjson.dumps({"version": _STATE_VERSION, "shards": state}, option=orjson.OPT_SORT_KEYS))


def text_digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _entries_digest(header: dict[str, Any], artifacts: list[dict[str, Any]]) -> str:
    return text_digest(HEADER.encode("utf-8") + orjson.dumps([header, artifacts]))


def group_tables(tables: Iterable[dict[str, Any]]) -> dict[tuple[str | None, str], list[dict[str, Any]]]:
    """(catalog, schema) -> the table artifacts of that shard, in the order they come."""
    grouped: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for table in tables:
        grouped.setdefault((table.get("catalog"), table["db"]), []).append(table)
    return grouped


def write_shards(files: FileStore, connection: str, sync_id: str, tables: Iterable[dict[str, Any]],
                 *, author: str) -> list[str]:
    """Merge the scan into every shard of ``connection``; shards of schemas no longer seen lose their tables."""
    grouped = group_tables(tables)
    written = []
    existing = set(files.list(f"_schema/{connection}/", suffix=".yaml"))
    targets = {shard_path(connection, catalog, schema): (catalog, schema) for catalog, schema in grouped}
    before = read_state(files, connection)
    state: dict[str, dict[str, str]] = {}
    made = ColumnEntries()  # shared by every shard of this write: the entries are only read
    for path in sorted(existing | targets.keys()):
        catalog, schema = targets.get(path, (None, ""))
        artifacts = grouped.get((catalog, schema), []) if path in targets else []
        header = {"connection": connection, "catalog": catalog, "schema": schema} if path in targets else {}
        # The artifacts decide the entries: the same artifacts, the same shard, without building the entries.
        wanted = _entries_digest(header, artifacts)

        def update(text: str | None, artifacts: list[dict[str, Any]] = artifacts,
                   header: dict[str, Any] = header, path: str = path, wanted: str = wanted) -> str:
            known = before.get(path, {})
            if artifacts and (text is None or known.get("text") == text_digest(text)):
                if text is not None and known.get("entries") == wanted:
                    fresh = text  # nobody touched it and the scan has nothing new to say
                else:
                    fresh = render(header, {table["name"]: scan_entry(table, made) for table in artifacts})
                state[path] = {"text": text_digest(fresh), "entries": wanted, "syncId": sync_id}
                return fresh
            # not shared here: ruamel writes an object met twice as an anchor and its aliases
            entries = {table["name"]: scan_entry(table) for table in artifacts}
            return dump(merge(load(text), header, entries, sync_id))

        result = files.update(path, update, author=author, message=f"scan: {connection} {sync_id}")
        if result.changed:
            written.append(path)
    _write_state(files, connection, state)
    return written
