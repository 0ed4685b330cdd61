"""Every page of the site, by path: what the static build writes and what the server answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from khive.site import paths
from khive.site.catalog import Catalog, source_path, wiki_path
from khive.site.layout import Page
from khive.site.pages.audit import audit_page
from khive.site.pages.common import Site
from khive.site.pages.indexes import patterns_index, sources_index, tables_index, wiki_index
from khive.site.pages.overview import overview_page
from khive.site.pages.review import review_page
from khive.site.pages.sources import source_page
from khive.site.pages.tables import table_page
from khive.site.pages.wiki import wiki_page

Render = Callable[[Site], Awaitable[Page]]


def routes(catalog: Catalog) -> dict[str, Render]:
    """Site path -> the function that renders it (search is apart: served and static search differ)."""
    table: dict[str, Render] = {
        paths.OVERVIEW: overview_page, paths.TABLES: tables_index, paths.SOURCES: sources_index,
        paths.WIKI: wiki_index, paths.PATTERNS: patterns_index, paths.REVIEW: review_page, paths.AUDIT: audit_page,
    }
    for ref in catalog.table_refs():
        table[ref.path] = partial(table_page, ref=ref)
    for source in catalog.sources:
        table[source_path(source)] = partial(source_page, source=source)
    for page in catalog.pages:
        table.setdefault(wiki_path(page), partial(wiki_page, page=page))
    return table
