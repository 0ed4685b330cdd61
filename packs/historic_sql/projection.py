"""Pass A of the projection: ``usage`` into the ``_schema`` shards and the matching SL sources.

Only the historic_sql-managed keys of a ``usage`` block are touched (``MANAGED``); anything else a
person put beside them stays. Every file is a locked read-modify-write through the project file store
on a ruamel round-trip document (comments and key order survive), and a file whose merge changes
nothing is not rewritten, so an unchanged rerun leaves every mtime alone and the index re-reads nothing.

Drift: a table that has a usage block but is absent from this run's staged tables is stale: its
managed keys go (a narrative about a table nobody queries any more would mislead) and ``staleSince``
says when the history last showed it (the manifest's ``staleTables``: its newest execution, or the time
of the last run that staged it). Keys a person added stay. When the table shows up again the fresh
usage replaces the block and ``staleSince`` goes. The scan keeps the ``usage`` key of a table (it is
not scan-managed).

The SL ``usage`` block is the same digest in the same shape (joins as ``{table, on}``). A source matches
a table by its ``table:`` (``schema.name``, or a bare name that only one staged table has).

A file whose text and inputs are those of its last merge is not loaded at all (``projmemo.py``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from khive.project.store import FileStore
from khive.project.yamldoc import quick_load, safe_yaml, schema_shard_yaml, semantic_layer_yaml
from packs.historic_sql.projmemo import ProjectionMemo, fingerprint, text_hash

MANAGED = ("narrative", "frequencyTier", "commonFilters", "commonGroupBys", "commonJoins", "staleSince")
Usage = Mapping[str, Any]


@dataclass(frozen=True)
class Stale:
    """When the tables the history no longer shows were last seen (``staleTables`` of the manifest); a
    table it does not know (usage written before khive recorded it) went stale at ``fallback``."""

    seen: Mapping[str, str]
    fallback: str

    def since(self, table: str) -> str:
        return self.seen.get(table, self.fallback)

    def since_written(self, table: str) -> str:
        """``since`` for a table as a source writes it (any case, or a bare name only one table has)."""
        return self.since(self._key(table))

    def known(self, table: str, *, written: bool = False) -> str | None:
        """What a memo fingerprint holds: the recorded time only. The fallback moves with every run, and it
        matters only on the run a table goes stale, when what is present changes anyway."""
        return self.seen.get(self._key(table) if written else table)

    def _key(self, table: str) -> str:
        return _match(table, {}, set(self.seen), _by_name(self.seen)) or table


def _edit(yaml: YAML, text: str | None, *, change: Callable[[dict[str, Any]], bool]) -> str | None:
    """The new text when ``change`` edited the loaded document, else the text unchanged.

    ``change`` runs first on plain data read by libyaml: a file it leaves alone (most sources and shards of a
    big warehouse: the log names a few tables) is never loaded round-trip. The round-trip load is for edits.
    So ``change`` may run twice: whatever it reports on the side (``entries``, ``seen``) it must reset first,
    so the round-trip run's report is the one kept."""
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


def merge_usage(entry: dict[str, Any], fresh: Usage | None, present: bool, stale_since: str) -> bool:
    """Apply one table's usage (or its absence: then it went stale at ``stale_since``) to ``entry``, round-trip
    or plain; True when something changed."""
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
    if not isinstance(current, dict):
        return False
    ours = [key for key in MANAGED if key != "staleSince" and key in current]
    if present:  # staged but not digested yet (an agent's unit): it is not stale
        if ours and "staleSince" in current:
            del current["staleSince"]
            return True
        return False
    if not ours:  # already stale (or never ours): its staleSince stays what it was
        return False
    for key in ours:
        del current[key]
    if not current.get("staleSince"):
        current["staleSince"] = stale_since
    return True


def project_shards(files: FileStore, connection: str, usages: Mapping[str, Usage], present: set[str],
                   stale: Stale, *, author: str, memo: ProjectionMemo | None = None) -> list[str]:
    """Merge ``usages`` (table key -> usage) into every shard of ``connection``; the paths that changed.

    With a ``memo``, a shard whose text and inputs are those of its last merge is skipped (``projmemo.py``)."""
    changed = []
    for path in files.list(f"_schema/{connection}/", suffix=".yaml"):
        if memo is not None and memo.holds(path, text_hash(files.read_bytes(path)),
                                           lambda meta: _shard_inputs(meta, usages, present, stale)):
            continue
        entries: list[list[Any]] = []
        change = partial(_merge_shard, usages=usages, present=present, stale=stale, entries=entries)
        result = files.update(path, partial(_edit, schema_shard_yaml(), change=change), author=author,
                              message=f"historic_sql: usage for {connection}")
        if memo is not None:
            memo.put(path, result.sha256, _shard_inputs(entries, usages, present, stale), entries)
        if result.changed:
            changed.append(path)
    return changed


def _merge_shard(document: dict[str, Any], *, usages: Mapping[str, Usage], present: set[str], stale: Stale,
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
        edited |= merge_usage(entry, usages.get(key) if live else None, key in present and live, stale.since(key))
    return edited


def _shard_inputs(entries: list[list[Any]], usages: Mapping[str, Usage], present: set[str], stale: Stale) -> str:
    return fingerprint([[keys, live, [usages.get(k) for k in keys], [k in present for k in keys],
                         [stale.known(k) for k in keys]] for keys, live in entries])


def project_sources(files: FileStore, connection: str, usages: Mapping[str, Usage], present: set[str],
                    stale: Stale, *, author: str, memo: ProjectionMemo | None = None) -> list[str]:
    """Merge usage into the SL sources of ``connection`` whose ``table:`` is a staged (or once-staged) table."""
    by_name = _by_name({*usages, *present})
    changed = []
    for path in files.list(f"semantic-layer/{connection}/", suffix=".yaml"):
        if memo is not None and memo.holds(path, text_hash(files.read_bytes(path)),
                                           lambda meta: _source_inputs(meta, usages, present, by_name, stale)):
            continue
        seen: list[str | None] = [None]  # the source's table:, all the merge reads besides its usage block
        change = partial(_merge_source, usages=usages, present=present, by_name=by_name, stale=stale, seen=seen)
        result = files.update(path, partial(_edit, semantic_layer_yaml(), change=change), author=author,
                              message=f"historic_sql: usage for {path}")
        if memo is not None:
            memo.put(path, result.sha256, _source_inputs(seen[0], usages, present, by_name, stale), seen[0])
        if result.changed:
            changed.append(path)
    return changed


def _merge_source(document: dict[str, Any], *, usages: Mapping[str, Usage], present: set[str],
                  by_name: dict[str, list[str]], stale: Stale, seen: list[str | None]) -> bool:
    table = document.get("table")
    if not isinstance(table, str):
        return False
    seen[0] = table
    key = _match(table, usages, present, by_name)
    if key is None:  # a table we do not stage (any more): only its stale marking can apply
        return merge_usage(document, None, False, stale.since_written(table))
    return merge_usage(document, usages.get(key), key in present, stale.since(key))


def _source_inputs(table: str | None, usages: Mapping[str, Usage], present: set[str],
                   by_name: dict[str, list[str]], stale: Stale) -> str:
    key = _match(table, usages, present, by_name) if table is not None else None
    since = stale.known(table, written=True) if table is not None and key is None else None
    return fingerprint([table, key, usages.get(key) if key is not None else None, key in present, since])


def _by_name(keys: Iterable[str]) -> dict[str, list[str]]:
    """Table keys by their bare lower-case name."""
    by_name: dict[str, list[str]] = {}
    for key in sorted(keys):
        by_name.setdefault(key.rsplit(".", 1)[-1].lower(), []).append(key)
    return by_name


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
    by_name = _by_name(tables)
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
        if not isinstance(data, dict):
            continue
        table, name = data.get("table"), data.get("name")
        if isinstance(table, str) and isinstance(name, str):
            matched = _match(table, {}, tables, by_name)
            if matched is not None:
                out.setdefault(matched, []).append(name)
    return {key: sorted(names) for key, names in out.items()}
