"""What the project holds, read through its list verbs, and the map of every page the site has.

The catalog is the site's table of contents: connections (``overview()``), their tables
(``scan.tables``), semantic-layer sources (``sl.list``), wiki pages (``wiki.list``) and pattern pages
(``historic_sql.patterns``). A list verb that fails (a pack not installed, a refusal) leaves its part
empty and is reported on the overview; it never stops the rest of the site.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from khive.site import paths
from khive.site.reader import Failure, Reader

GLOBAL = "global"
MAX_LIST = 5000  # sl.list and wiki.list accept at most this many per call
MAX_TABLES = 10000  # scan.tables' own maximum


@dataclass(frozen=True)
class TableRef:
    connection: str
    id: str

    @property
    def path(self) -> str:
        return paths.table_page(self.connection, self.id)


@dataclass
class Catalog:
    project: str
    overview: dict[str, Any]
    drivers: dict[str, str]  # connection -> driver
    tables: dict[str, list[dict[str, Any]]]  # connection -> scan.tables entries
    sources: list[dict[str, Any]]
    pages: list[dict[str, Any]]
    patterns: list[dict[str, Any]]
    failures: list[Failure] = field(default_factory=list)

    def table(self, connection: str, table_id: str) -> TableRef | None:
        """The table ``table_id`` (``schema.table``, or a bare name unique in the connection), if scanned."""
        entries = self.tables.get(connection, [])
        for entry in entries:
            if entry["id"] == table_id:
                return TableRef(connection, table_id)
        named = [entry["id"] for entry in entries if entry.get("name") == table_id]
        return TableRef(connection, named[0]) if len(named) == 1 else None

    def find_table(self, table_id: str) -> TableRef | None:
        """A table by id in whichever connection holds it (the first, when several do)."""
        for connection in self.tables:
            found = self.table(connection, table_id)
            if found is not None:
                return found
        return None

    def source(self, name: str, connection: str | None = None) -> dict[str, Any] | None:
        for source in self.sources:
            if source["name"] == name and (connection is None or source.get("connectionId") == connection):
                return source
        return None

    def page(self, key: str) -> dict[str, Any] | None:
        """A wiki page by key, the caller's own page before the global one (as ``wiki.read`` picks)."""
        matches = [page for page in self.pages if page["key"] == key]
        return next((page for page in matches if page["scope"] != GLOBAL), matches[0] if matches else None)

    def table_refs(self) -> Iterator[TableRef]:
        for connection, entries in self.tables.items():
            for entry in entries:
                yield TableRef(connection, entry["id"])


def scope_of(page: dict[str, Any]) -> str:
    """``global``, or ``user`` for the caller's own tier (``wiki.list`` names it by the user)."""
    return GLOBAL if page.get("scope") == GLOBAL else "user"


def wiki_path(page: dict[str, Any]) -> str:
    return paths.wiki_page(scope_of(page), page["key"])


def source_path(source: dict[str, Any]) -> str:
    return paths.source_page(str(source.get("connectionId", "")), source["name"])


async def load_catalog(reader: Reader) -> Catalog:
    overview, sources, pages, patterns = await reader.many([
        ("overview", {}), ("sl.list", {"limit": MAX_LIST}), ("wiki.list", {"limit": MAX_LIST}),
        ("historic_sql.patterns", {"include_stale": True})])
    failures = [answer for answer in (overview, sources, pages, patterns) if isinstance(answer, Failure)]
    connections = overview.get("connections", []) if isinstance(overview, dict) else []
    names = [str(connection["id"]) for connection in connections]
    listed = await reader.many([("scan.tables", {"connection": name, "limit": MAX_TABLES}) for name in names])
    tables: dict[str, list[dict[str, Any]]] = {}
    for name, answer in zip(names, listed, strict=True):
        if isinstance(answer, Failure):
            if answer.code != "scan_missing":  # a connection not scanned yet is said on the overview
                failures.append(answer)
            tables[name] = []
        else:
            tables[name] = list(answer.get("tables", []))
    project = overview.get("project", "") if isinstance(overview, dict) else ""
    return Catalog(
        project=str(project or "khive"),
        overview=overview if isinstance(overview, dict) else {},
        drivers={str(c["id"]): str(c.get("driver", "")) for c in connections},
        tables=tables,
        sources=list(sources.get("sources", [])) if isinstance(sources, dict) else [],
        pages=list(pages.get("pages", [])) if isinstance(pages, dict) else [],
        patterns=list(patterns.get("patterns", [])) if isinstance(patterns, dict) else [],
        failures=failures,
    )
