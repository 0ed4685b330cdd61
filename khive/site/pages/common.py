"""What every page needs: the reader, the catalog, links relative to the page, and how a failure shows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from khive.site import paths
from khive.site.catalog import Catalog, TableRef, source_path, wiki_path
from khive.site.html import Child, Markup, el, link
from khive.site.reader import Failure, Reader
from khive.threads import run_blocking

T = TypeVar("T")
MAX_VALUE_CHARS = 80


@dataclass
class Site:
    reader: Reader
    catalog: Catalog

    async def blocking(self, fn: Callable[..., T], /, *args: Any) -> T:
        """Markdown, highlighting and SQL layout leave the event loop (``khive serve`` answers MCP on it)."""
        return await run_blocking(fn, *args)


@dataclass(frozen=True)
class Links:
    """Links from the page at ``here`` to the rest of the site."""

    here: str
    catalog: Catalog

    def to(self, target: str, fragment: str = "") -> str:
        return paths.href(self.here, target, fragment)

    def table(self, connection: str, table_id: str, label: str | None = None, fragment: str = "") -> Markup:
        found = self.catalog.table(connection, table_id)
        shown = label or table_id
        return link(self.to(found.path, fragment), shown) if found else el("span", {"class": "unknown"}, shown)

    def table_ref(self, ref: TableRef) -> Markup:
        return link(self.to(ref.path), ref.id)

    def source(self, name: str, connection: str | None = None, fragment: str = "") -> Markup:
        found = self.catalog.source(name, connection)
        return link(self.to(source_path(found), fragment), name) if found else el("span", {"class": "unknown"}, name)

    def page(self, key: str, label: str | None = None) -> Markup:
        found = self.catalog.page(key)
        shown = label or key
        return link(self.to(wiki_path(found)), shown) if found else el("span", {"class": "unknown"}, shown)


def failure_box(failure: Failure) -> Markup:
    return el("p", {"class": "failure", "role": "status"}, el("strong", None, failure.verb), " did not answer: ",
              el("code", None, failure.code), " — ", failure.message)


def value_text(value: Any) -> str:
    """A value as the page shows it: NULL for null, long values cut (they were redacted before they got here)."""
    shown = "NULL" if value is None else str(value)
    return shown if len(shown) <= MAX_VALUE_CHARS else shown[:MAX_VALUE_CHARS - 1] + "…"


def chips(values: Iterable[Child]) -> Markup:
    return el("ul", {"class": "chips"}, [el("li", None, value) for value in values])


def definition(rows: Iterable[tuple[str, Child]]) -> Markup:
    return el("dl", {"class": "facts"}, [[el("dt", None, name), el("dd", None, value)] for name, value in rows
                                         if value not in (None, "", [])])


def ref_target(catalog: Catalog, ref: dict[str, Any]) -> tuple[str, str] | None:
    """Where a search result or a backlink (``discover.search`` ref, or ``{"id": "wiki:key"}``) has its page:
    a site path and a fragment, or None when the site has no page for it."""
    kind, ref_id = str(ref.get("kind", "")), str(ref.get("id", ""))
    connection = ref.get("connectionId")
    if not kind and ":" in ref_id:  # a document id: wiki:<key>, sl:<name>, table:<connection>:<id>
        kind, _, ref_id = ref_id.partition(":")
        kind = {"sl": "sl_source"}.get(kind, kind)
        if kind in ("table", "column"):
            connection, _, ref_id = ref_id.partition(":")
    if kind in ("wiki", "pattern"):
        page = catalog.page(ref_id)
        return (wiki_path(page), "") if page else None
    if kind in ("sl_source", "sl_measure", "sl_dimension"):
        name, _, member = ref_id.partition(".")
        source = catalog.source(name, connection if isinstance(connection, str) else None)
        return (source_path(source), paths.anchor(member) if member else "") if source else None
    if kind in ("table", "column"):
        table_ref = ref.get("tableRef") or {}
        table_id = (f"{table_ref['db']}.{table_ref['name']}" if table_ref.get("db") else str(table_ref["name"])) \
            if table_ref.get("name") else (ref_id if kind == "table" else ref_id.rpartition(".")[0])
        found = catalog.table(connection, table_id) if isinstance(connection, str) else catalog.find_table(table_id)
        column = ref.get("columnName") or (ref_id.rpartition(".")[2] if kind == "column" else "")
        return (found.path, paths.anchor(str(column)) if column else "") if found else None
    return None


def ref_link(links: Links, ref: dict[str, Any], label: Child | None = None) -> Markup:
    target = ref_target(links.catalog, ref)
    shown = label if label is not None else str(ref.get("id", ""))
    return link(links.to(*target), shown) if target else el("span", {"class": "unknown"}, shown)
