"""The latest scan of a connection as a name resolver: table -> columns, read from the scan's files.

historic_sql reads what the scan pack wrote, never its code: the newest run's table artifacts
(``raw-sources/<connection>/live-database/<syncId>/tables.json``, or ``tables/*.json`` in runs
written before scan ADR 0021; machine-written, fast to load) or,
when no run is on disk (a fresh clone carries only the reviewable view), the shards
``_schema/<connection>/*.yaml``. Tables a shard marks ``droppedInSync`` are gone and left out, and so
are server internals an older scan recorded (``khive.connections.selection``).

Resolution rules (``Catalog.resolve``):

* unquoted names match case-insensitively; an exact-case match wins when case alone tells two apart;
* a name is only looked up in the connection's default catalog (database) unless the query names a
  catalog; candidates from two catalogs are never guessed between;
* an unqualified name found in several schemas resolves to the first schema of the search path that has
  it; found in several schemas none of which is on the search path, it stays unresolved; found in one
  schema, it resolves there (users' search paths differ from the connection's).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from khive.connections.selection import internal_object
from khive.project.store import inside
from khive.project.yamldoc import safe_yaml

LIVE = "live-database"


@dataclass(frozen=True, slots=True)
class CatalogTable:
    catalog: str | None
    schema: str
    name: str
    columns: tuple[str, ...]
    key: str
    lookup: dict[str, str] = field(compare=False, repr=False)  # exact and unambiguous lower-case spellings

    def column(self, name: str) -> str | None:
        """The catalog's spelling of column ``name`` (case-insensitive), or None."""
        found = self.lookup.get(name)
        return found if found is not None else self.lookup.get(name.lower())


class Catalog:
    def __init__(self, tables: Iterable[tuple[str | None, str, str, Sequence[str]]],
                 *, default_catalog: str | None = None) -> None:
        rows = sorted({(c, s, n): tuple(cols) for c, s, n, cols in tables}.items(),
                      key=lambda item: (item[0][0] or "", item[0][1], item[0][2]))
        catalogs = {c for (c, _, _), _ in rows}
        self.multi_catalog = len(catalogs) > 1
        self.default_catalog = default_catalog if default_catalog is not None else (
            next(iter(catalogs)) if len(catalogs) == 1 else None)
        self._by_name: dict[str, list[CatalogTable]] = {}
        self.tables: dict[str, CatalogTable] = {}
        digest = hashlib.sha256()
        for (catalog, schema, name), columns in rows:
            key = f"{catalog}.{schema}.{name}" if self.multi_catalog else f"{schema}.{name}"
            lowered: dict[str, list[str]] = {}
            for column in columns:
                lowered.setdefault(column.lower(), []).append(column)
            lookup = {lower: spellings[0] for lower, spellings in lowered.items() if len(spellings) == 1}
            lookup.update({column: column for column in columns})
            table = CatalogTable(catalog, schema, name, columns, key, lookup)
            self.tables[key] = table
            self._by_name.setdefault(name.lower(), []).append(table)
            digest.update(orjson.dumps([catalog, schema, name, sorted(columns)]))
        self.fingerprint = digest.hexdigest()[:16]
        self._memo: dict[tuple[str, str, str, tuple[str, ...]], CatalogTable | None] = {}

    def __len__(self) -> int:
        return len(self.tables)

    def __reduce__(self) -> tuple[Any, ...]:  # ship only the rows to pool workers
        rows = [(t.catalog, t.schema, t.name, t.columns) for t in self.tables.values()]
        return (_rebuild, (rows, self.default_catalog))

    def resolve(self, name: str, schema: str = "", catalog: str = "",
                search_path: Sequence[str] = ()) -> CatalogTable | None:
        memo_key = (name, schema, catalog, tuple(search_path))
        if memo_key in self._memo:
            return self._memo[memo_key]
        found = self._resolve(name, schema, catalog, search_path)
        self._memo[memo_key] = found
        return found

    def _resolve(self, name: str, schema: str, catalog: str, search_path: Sequence[str]) -> CatalogTable | None:
        candidates = _prefer_exact(self._by_name.get(name.lower(), []), lambda t: t.name, name)
        if catalog:
            candidates = _prefer_exact([t for t in candidates if (t.catalog or "").lower() == catalog.lower()],
                                       lambda t: t.catalog or "", catalog)
        elif self.default_catalog is not None:
            candidates = [t for t in candidates if t.catalog in (self.default_catalog, None)]
        if schema:
            candidates = _prefer_exact([t for t in candidates if t.schema.lower() == schema.lower()],
                                       lambda t: t.schema, schema)
        if len({t.catalog for t in candidates}) > 1:
            return None  # never guess across databases
        if len(candidates) == 1:
            return candidates[0]
        for entry in search_path:
            on_path = _prefer_exact([t for t in candidates if t.schema.lower() == entry.lower()],
                                    lambda t: t.schema, entry)
            if len(on_path) == 1:
                return on_path[0]
        return None

    @classmethod
    def from_project(cls, project: Path, connection: str, *, default_catalog: str | None = None) -> Catalog:
        """The latest scan of ``connection``: its newest run's table files, else its shards."""
        rows = _read_run(project, connection)
        if rows is None:
            rows = _read_shards(project, connection)
        return cls(rows, default_catalog=default_catalog)


def _rebuild(rows: list[tuple[str | None, str, str, Sequence[str]]], default_catalog: str | None) -> Catalog:
    return Catalog(rows, default_catalog=default_catalog)


def _prefer_exact(tables: list[CatalogTable], part: Any, wanted: str) -> list[CatalogTable]:
    exact = [t for t in tables if part(t) == wanted]
    return exact if exact else tables


Row = tuple[str | None, str, str, list[str]]


def _read_run(project: Path, connection: str) -> list[Row] | None:
    root = inside(project, Path("raw-sources", connection, LIVE))  # a symlink leading elsewhere is refused
    runs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    if not runs:
        return None
    latest = runs[-1]
    if (latest / "tables.json").is_file():  # one file per run (scan ADR 0021)
        artifacts = orjson.loads(inside(project, latest / "tables.json").read_bytes()).get("tables", [])
    elif (latest / "tables").is_dir():  # runs written before ADR 0021: one file per table
        artifacts = [orjson.loads(inside(project, path).read_bytes())
                     for path in sorted((latest / "tables").glob("*.json"))]
    else:
        return None
    return [(data.get("catalog"), data["db"], data["name"], [c["name"] for c in data.get("columns", [])])
            for data in artifacts if internal_object(data["db"], data["name"]) is None]


def _read_shards(project: Path, connection: str) -> list[Row]:
    folder = inside(project, Path("_schema", connection))
    rows: list[Row] = []
    yaml = safe_yaml()
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        data = yaml.load(inside(project, path).read_text(encoding="utf-8")) or {}
        for name, entry in (data.get("tables") or {}).items():
            if (not isinstance(entry, dict) or entry.get("droppedInSync")
                    or internal_object(str(data.get("schema")), str(name)) is not None):
                continue
            columns = [c["name"] for c in entry.get("columns") or [] if isinstance(c, dict) and "name" in c]
            rows.append((data.get("catalog"), str(data.get("schema")), str(name), columns))
    return rows
