"""Reading one ``_schema`` shard without paying a pure-Python YAML parse (seconds for 1,000 tables) each time.

* A shard still holding exactly the text the scan of the latest run wrote (its digest is the one recorded
  in ``.khive/scan/<connection>.shards.json``) is rebuilt from that run's ``tables.json``: the same entries
  the shard was rendered from.
* Any other shard (descriptions people added, historic_sql's ``usage``) is parsed once per edit: the parsed
  document is kept in ``.khive/scan/parsed/`` under the text's digest, when JSON holds it exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from khive.atomicfile import replace_bytes
from khive.connections.selection import internal_object
from khive.project.locate import STATE_DIR
from khive.project.store import FileStore
from khive.project.yamldoc import safe_yaml
from packs.scan.shards import group_tables, read_state, scan_entry, shard_path, text_digest

RunShard = tuple[str | None, str, list[dict[str, Any]]]  # (catalog, schema, the run's table artifacts in it)
RunShards = dict[str, RunShard]  # by shard path


def run_shards(connection: str, tables: dict[str, dict[str, Any]]) -> RunShards:
    """A run's tables by the shard the scan rendered them into, in the run's order. Only grouped: a shard's
    entries are made when something asks for its document (the index reads the artifacts themselves)."""
    return {shard_path(connection, c, s): (c, s, listed) for (c, s), listed in group_tables(tables.values()).items()}


class ShardReader:
    """Shards of one connection as of ``sync_id`` (the latest run, or None before any)."""

    def __init__(self, files: FileStore, connection: str, sync_id: str | None,
                 run_tables: Callable[[], dict[str, dict[str, Any]]], run_shards: RunShards | None = None) -> None:
        """``run_shards``: the run's tables by shard path, when the caller keeps them across readers (a run
        never changes, and grouping 10,000 tables costs more than reading one shard)."""
        self.files = files
        self.connection = connection
        self.sync_id = sync_id
        self._run_tables = run_tables
        self._state = read_state(files, connection)
        self._from_run = run_shards

    def read(self, path: str, raw: bytes) -> RunShard | dict[str, Any]:
        """The run's tables when the shard still holds exactly the text the scan of ``sync_id`` wrote from
        them, else the shard's parsed document (see ``document``)."""
        digest = text_digest(raw)
        known = self._state.get(path, {})
        if self.sync_id is not None and known.get("syncId") == self.sync_id and known.get("text") == digest:
            if self._from_run is None:
                self._from_run = run_shards(self.connection, self._run_tables())
            return self._from_run.get(path, (None, "", []))
        return self._parsed(path, raw, digest)

    def document(self, path: str, raw: bytes) -> dict[str, Any]:
        """The shard's document: ``{connection, catalog, schema, tables}`` as a YAML load would give it."""
        found = self.read(path, raw)
        if isinstance(found, dict):
            return found
        catalog, schema, tables = found
        return {"connection": self.connection, "catalog": catalog, "schema": schema,
                "tables": {table["name"]: scan_entry(table) for table in tables}}

    def _parsed(self, path: str, raw: bytes, digest: str) -> dict[str, Any]:
        kept = self._cache_file(path)
        try:
            cached = orjson.loads(kept.read_bytes())
            if isinstance(cached, dict) and cached.get("digest") == digest and isinstance(cached.get("data"), dict):
                data: dict[str, Any] = cached["data"]
                return data
        except (FileNotFoundError, orjson.JSONDecodeError):
            pass
        loaded = safe_yaml().load(raw.decode("utf-8"))
        data = loaded if isinstance(loaded, dict) else {}
        _keep(kept, digest, data)
        return data

    def _cache_file(self, path: str) -> Path:
        name = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
        return self.files.root / STATE_DIR / "scan" / "parsed" / f"{name}.json"


def _keep(target: Path, digest: str, data: dict[str, Any]) -> None:
    """Keep a parsed shard only when JSON gives back exactly what YAML gave (no dates, NaN, int keys...)."""
    try:
        blob = orjson.dumps({"digest": digest, "data": data})
    except TypeError:
        return
    if orjson.loads(blob)["data"] != data:
        return
    replace_bytes(target, blob)


ShardCache = dict[str, tuple[tuple[int, int, int], dict[str, Any]]]  # path -> ((inode, mtime_ns, size), document)


def read_shard_tables(files: FileStore, connection: str, sync_id: str | None,
                      run_tables: Callable[[], dict[str, dict[str, Any]]], cache: ShardCache | None = None
                      ) -> dict[str, dict[str, Any]]:
    """``db.name`` -> merged entry (scan keys plus everything people and tools added).

    A warm process also keeps each shard's document in ``cache`` until the file's stamp changes.
    """
    reader = ShardReader(files, connection, sync_id, run_tables)
    out: dict[str, dict[str, Any]] = {}
    for path in files.list(f"_schema/{connection}/", suffix=".yaml"):
        try:  # the inode changes on every atomic rewrite, even within one timestamp tick
            info = (files.root / path).stat()
            stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            continue
        hit = cache.get(path) if cache is not None else None
        if hit is not None and hit[0] == stamp:
            data = hit[1]
        else:
            data = reader.document(path, files.read_bytes(path) or b"")
            if cache is not None:
                cache[path] = (stamp, data)
        for name, entry in (data.get("tables") or {}).items():
            if internal_object(str(data.get("schema")), str(name)) is not None:
                continue  # recorded by a scan before server internals were left out
            out[f"{data.get('schema')}.{name}"] = {**entry, "catalog": data.get("catalog"), "db": data.get("schema"),
                                                   "name": name}
    return out

