"""The lists: every table, every source, every wiki page and every pattern, each linking to its page."""

from __future__ import annotations

from typing import Any

from khive.site import paths
from khive.site.catalog import TableRef, source_path, wiki_path
from khive.site.html import Markup, el, empty, link, section, table
from khive.site.layout import Page
from khive.site.pages.common import Links, Site
from khive.site.pages.wiki import page_item


async def tables_index(site: Site) -> Page:
    links = Links(paths.TABLES, site.catalog)
    refs = list(site.catalog.table_refs())
    body = table(["table", "connection", "kind", "rows (estimate)", "columns", "comment"],
                 _table_rows(site, links, refs)) if refs else empty("No scanned tables: run `khive scan`.")
    return Page(paths.TABLES, f"Tables ({len(refs)})", body)


async def sources_index(site: Site) -> Page:
    links = Links(paths.SOURCES, site.catalog)
    rows = [[link(links.to(source_path(s)), s["name"]), s.get("connectionId") or "",
             links.table(str(s.get("connectionId")), str(s.get("table"))) if s.get("table") else "",
             s.get("measureCount", ""), s.get("columnCount", ""), s.get("joinCount", ""), s.get("description") or ""]
            for s in site.catalog.sources]
    body = table(["source", "connection", "table", "measures", "dimensions", "joins", "description"], rows) \
        if rows else empty("No semantic-layer sources: `sl.bootstrap` writes one per table.")
    return Page(paths.SOURCES, f"Semantic-layer sources ({len(rows)})", body)


async def wiki_index(site: Site) -> Page:
    links = Links(paths.WIKI, site.catalog)
    pages = site.catalog.pages
    topics: dict[str, list[Markup]] = {}
    for page in pages:
        topic = str(page["key"]).split("/", 1)[0] if "/" in str(page["key"]) else "(top level)"
        topics.setdefault(topic, []).append(page_item(page, links))
    body = Markup("".join(section(topic, el("ul", {"class": "pages"}, items))
                          for topic, items in sorted(topics.items())))
    return Page(paths.WIKI, f"Wiki ({len(pages)} pages)", body if pages else empty("No wiki pages yet."))


async def patterns_index(site: Site) -> Page:
    links = Links(paths.PATTERNS, site.catalog)
    rows = []
    for pattern in site.catalog.patterns:
        page = site.catalog.page(str(pattern.get("page")))
        title = pattern.get("title") or pattern.get("slug") or ""
        connection = str(pattern.get("connection"))
        rows.append([link(links.to(wiki_path(page)), title) if page else title, connection,
                     [el("div", None, links.table(connection, str(t))) for t in pattern.get("tablesInvolved") or []],
                     pattern.get("templates", ""), "stale" if pattern.get("staleSince") else ""])
    body = table(["pattern", "connection", "tables", "templates", ""], rows) if rows \
        else empty("No join patterns: `khive ingest` finds them in the query history.")
    return Page(paths.PATTERNS, f"Join patterns ({len(rows)})", body)


def _table_rows(site: Site, links: Links, refs: list[TableRef]) -> list[list[Any]]:
    entries = {(connection, entry["id"]): entry for connection, items in site.catalog.tables.items()
               for entry in items}
    rows = []
    for ref in refs:
        entry = entries[(ref.connection, ref.id)]
        rows.append([links.table_ref(ref), ref.connection, entry.get("kind") or "",
                     f"{entry['estimatedRows']:,}" if entry.get("estimatedRows") is not None else "",
                     entry.get("columns", ""), entry.get("comment") or ""])
    return rows
