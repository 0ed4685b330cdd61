"""Pass A of the projection: ``usage`` into the ``_schema`` shards and the matching SL sources.

Only the historic_sql-managed keys of a ``usage`` block are touched (``MANAGED``); anything else a
person put beside them stays. Every file is a locked read-modify-write through the project file store
on a ruamel round-trip document (comments and key order survive), and a file whose merge changes
nothing is not rewritten, so an unchanged rerun leaves every mtime alone and the index re-reads nothing.

Drift: a table that has a usage block but is absent from this run's staged tables gets ``staleSince``
(the run's date) and keeps its last narrative; when it shows up again the fresh usage replaces the
block and ``staleSince`` goes. The scan keeps the ``usage`` key of a table (it is not scan-managed).

The SL ``usage`` block is the same digest with joins written as text (``public.customers on a = b``),
the shape ``packs/sl/models.py`` declares. A source matches a table by its ``table:`` (``schema.name``,
or a bare name that only one staged table has).

A file whose text and inputs are those of its last merge is not loaded at all (``projmemo.py``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from khive.project.store import FileStore
from khive.project.yamldoc import quick_load, safe_yaml, schema_shard_yaml, semantic_layer_yaml
from packs.historic_sql.projmemo import ProjectionMemo, fingerprint, text_hash

MANAGED = ("narrative", "frequencyTier", "commonFilters", "commonGroupBys", "commonJoins", "staleSince")
Usage = Mapping[str, Any]


def _edit(yaml: YAML, text: str | None, *, change: Callable[[dict[str, Any]], bool]) -> str | None:
    """The new text when ``change`` edited the loaded document, else the text unchanged.

    ``change`` runs first on plain data read by libyaml: a file it leaves alone (most sources and shards of a
    big warehouse: the log names a few tables) is never loaded round-trip. The round-trip load is for edits."""
    if not text:
        return text
    quick = quick_load(text)
    if isinstance(quick, dict) and not change(quick):
        return text
    document = yaml.load(text)
    if not isinstance(document, CommentedMap) or not change(document):
        return text
    stream = io.StringIO()
    yaml.dump(document, stream)
    return stream.getvalue()


def merge_usage(entry: dict[str, Any], fresh: Usage | None, present: bool, today: str) -> bool:
    """Apply one table's usage (or its absence) to ``entry`` (round-trip or plain); True when something changed."""
    current = entry.get("usage")
    if fresh is not None:
        block = current if isinstance(current, dict) else CommentedMap()
        before = {key: block.get(key) for key in MANAGED}
        wanted = {key: fresh.get(key) for key in MANAGED if fresh.get(key) not in (None, [], "")}
        if {k: v for k, v in before.items() if v is not None} == wanted and isinstance(current, dict):
            return False
        for key in MANAGED:
            if key in wanted:
                block[key] = wanted[key]
            else:
                block.pop(key, None)
        entry["usage"] = block
        return True
    if not isinstance(current, dict) or not any(key in current for key in MANAGED if key != "staleSince"):
        return False
    if present:  # staged but not digested yet (an agent's unit): it is not stale
        if "staleSince" in current:
            del current["staleSince"]
            return True
        return False
    if current.get("staleSince"):
        return False
    current["staleSince"] = today
    return True


def project_shards(files: FileStore, connection: str, usages: Mapping[str, Usage], present: set[str],
                   today: str, *, author: str, memo: ProjectionMemo | None = None) -> list[str]:
    """Merge ``usages`` (table key -> usage) into every shard of ``connection``; the paths that changed.

    With a ``memo``, a shard whose text and inputs are those of its last merge is skipped (``projmemo.py``)."""
    changed = []
    for path in files.list(f"_schema/{connection}/", suffix=".yaml"):
        if memo is not None and memo.holds(path, text_hash(files.read_bytes(path)),
                                           lambda meta: _shard_inputs(meta, usages, present)):
            continue
        entries: list[list[Any]] = []
        change = partial(_merge_shard, usages=usages, present=present, today=today, entries=entries)
        result = files.update(path, partial(_edit, schema_shard_yaml(), change=change), author=author,
                              message=f"historic_sql: usage for {connection}")
        if memo is not None:
            memo.put(path, result.sha256, _shard_inputs(entries, usages, present), entries)
        if result.changed:
            changed.append(path)
    return changed


def _merge_shard(document: dict[str, Any], *, usages: Mapping[str, Usage], present: set[str], today: str,
                 entries: list[list[Any]]) -> bool:
    """Merge into one shard document; ``entries`` gets each table's candidate keys and liveness, all the
    merge read from the document besides the usage blocks it rewrites."""
    entries.clear()
    tables = document.get("tables")
    if not isinstance(tables, dict):
        return False
    schema, catalog = document.get("schema"), document.get("catalog")
    edited = False
    for name, entry in tables.items():
        if not isinstance(entry, dict):
            continue
        keys = [f"{schema}.{name}", f"{catalog}.{schema}.{name}"]
        key = next((k for k in keys if k in usages or k in present), keys[0])
        live = not entry.get("droppedInSync")
        entries.append([keys, live])
        edited |= merge_usage(entry, usages.get(key) if live else None, key in present and live, today)
    return edited


def _shard_inputs(entries: list[list[Any]], usages: Mapping[str, Usage], present: set[str]) -> str:
    return fingerprint([[keys, live, [usages.get(k) for k in keys], [k in present for k in keys]]
                        for keys, live in entries])


def sl_usage(usage: Usage) -> dict[str, Any]:
    """The SL form of a usage digest: joins as text."""
    out = {key: usage[key] for key in MANAGED if key in usage and key != "commonJoins"}
    joins = [f"{join['table']} on {', '.join(join['on'])}" for join in usage.get("commonJoins") or []]
    if joins:
        out["commonJoins"] = joins
    return out


def project_sources(files: FileStore, connection: str, usages: Mapping[str, Usage], present: set[str],
                    today: str, *, author: str, memo: ProjectionMemo | None = None) -> list[str]:
    """Merge usage into the SL sources of ``connection`` whose ``table:`` is a staged (or once-staged) table."""
    by_name: dict[str, list[str]] = {}
    for key in {*usages, *present}:
        by_name.setdefault(key.rsplit(".", 1)[-1].lower(), []).append(key)
    changed = []
    for path in files.list(f"semantic-layer/{connection}/", suffix=".yaml"):
        if memo is not None and memo.holds(path, text_hash(files.read_bytes(path)),
                                           lambda meta: _source_inputs(meta, usages, present, by_name)):
            continue
        seen: list[str | None] = [None]  # the source's table:, all the merge reads besides its usage block
        change = partial(_merge_source, usages=usages, present=present, by_name=by_name, today=today, seen=seen)
        result = files.update(path, partial(_edit, semantic_layer_yaml(), change=change), author=author,
                              message=f"historic_sql: usage for {path}")
        if memo is not None:
            memo.put(path, result.sha256, _source_inputs(seen[0], usages, present, by_name), seen[0])
        if result.changed:
            changed.append(path)
    return changed


def _merge_source(document: dict[str, Any], *, usages: Mapping[str, Usage], present: set[str],
                  by_name: dict[str, list[str]], today: str, seen: list[str | None]) -> bool:
    table = document.get("table")
    if not isinstance(table, str):
        return False
    seen[0] = table
    key = _match(table, usages, present, by_name)
    if key is None:  # a table we never staged: only its stale marking can apply
        return merge_usage(document, None, False, today) if "usage" in document else False
    fresh = usages.get(key)
    return merge_usage(document, sl_usage(fresh) if fresh is not None else None, key in present, today)


def _source_inputs(table: str | None, usages: Mapping[str, Usage], present: set[str],
                   by_name: dict[str, list[str]]) -> str:
    key = _match(table, usages, present, by_name) if table is not None else None
    return fingerprint([table, key, usages.get(key) if key is not None else None, key in present])


def _match(table: str, usages: Mapping[str, Usage], present: set[str], by_name: dict[str, list[str]]) -> str | None:
    lowered = table.lower()
    for key in (*usages, *present):
        if key.lower() == lowered:
            return key
    if "." not in table:
        candidates = by_name.get(lowered, [])
        if len(candidates) == 1:
            return candidates[0]
    return None


def sl_sources_by_table(files: FileStore, connection: str, tables: set[str]) -> dict[str, list[str]]:
    """table key -> names of the SL sources over it (for patterns' ``slRefs``)."""
    by_name: dict[str, list[str]] = {}
    for key in tables:
        by_name.setdefault(key.rsplit(".", 1)[-1].lower(), []).append(key)
    out: dict[str, list[str]] = {}
    yaml = safe_yaml()
    for path in files.list(f"semantic-layer/{connection}/", suffix=".yaml"):
        text = files.read_text(path) or ""
        data = quick_load(text)  # two top-level keys of thousands of files: libyaml's parser
        if data is None:
            try:
                data = yaml.load(text) or {}
            except Exception:
                continue
        table, name = data.get("table") if isinstance(data, dict) else None, data.get("name")
        if isinstance(table, str) and isinstance(name, str):
            matched = _match(table, {}, tables, by_name)
            if matched is not None:
                out.setdefault(matched, []).append(name)
    return {key: sorted(names) for key, names in out.items()}
