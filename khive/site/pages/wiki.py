"""Wiki pages (``wiki.read``) rendered from markdown, with their relations; pattern pages (kind ``pattern``
from ``historic_sql.patterns``) also get their tables and their SQL laid out."""

from __future__ import annotations

from typing import Any

from khive.site.catalog import scope_of, wiki_path
from khive.site.html import Child, Markup, el, empty, join, link, section
from khive.site.layout import Page
from khive.site.markup import render_markdown
from khive.site.pages.common import Links, Site, definition, failure_box, ref_link
from khive.site.reader import Failure

RELATIONS = ("supersedes", "contradicts", "supports", "related_to")


async def wiki_page(site: Site, page: dict[str, Any]) -> Page:
    here = wiki_path(page)
    links = Links(here, site.catalog)
    key = str(page["key"])
    subject = f"wiki:{page.get('scope')}:{key}"
    read = await site.reader.call("wiki.read", key=key, scope=scope_of(page))
    if isinstance(read, Failure):
        return Page(here, key, failure_box(read), subject=subject)
    pattern = next((p for p in site.catalog.patterns if p.get("page") == key), None)
    dialect = site.catalog.drivers.get(str(pattern.get("connection"))) if pattern else None
    title = str(read.get("title") or key)
    body = await site.blocking(render_markdown, _without_title(str(read.get("body") or ""), title), _resolver(links),
                               _code_resolver(links), pattern is not None, dialect)
    parts = [_banner(read, links), _summary(read, links), section("Pattern", _pattern(pattern, links))
             if pattern else "", el("article", {"class": "page-body"}, body),
             section("Relations", _relations(read, links), id_="relations")]
    return Page(here, title, Markup("".join(str(part) for part in parts)), subject=subject)


def _without_title(body: str, title: str) -> str:
    """The body without a first ``# <title>`` line: the page already shows the title as its heading."""
    first, _, rest = body.lstrip("\n").partition("\n")
    return rest if first.strip() == f"# {title}" else body


def _resolver(links: Links) -> Any:
    def resolve(target: str) -> str | None:
        key = target.removesuffix(".md").lstrip("./")
        page = links.catalog.page(key)
        if page is not None:
            return links.to(wiki_path(page))
        table = links.catalog.find_table(target)
        return links.to(table.path) if table else None

    return resolve


def _code_resolver(links: Links) -> Any:
    def resolve(code: str) -> str | None:
        table = links.catalog.find_table(code.strip()) if "." in code else None
        return links.to(table.path) if table else None

    return resolve


def _banner(read: dict[str, Any], links: Links) -> Markup:
    notes = []
    if read.get("supersededBy"):
        notes.append(el("p", {"class": "banner superseded"}, "Superseded by ",
                        join(ref_link(links, {"id": ref}) for ref in read["supersededBy"]),
                        ": searches hide this page."))
    if read.get("staleSince"):
        notes.append(el("p", {"class": "banner stale"}, f"Marked stale since {read['staleSince']}."))
    if read.get("archived"):
        notes.append(el("p", {"class": "banner stale"}, "Archived: searches hide this page."))
    if read.get("kind") == "warning":
        notes.append(el("p", {"class": "banner warning"}, "A warning: agents see it first when it applies."))
    return Markup("".join(notes))


def _summary(read: dict[str, Any], links: Links) -> Markup:
    return el("div", {"class": "summary"},
              el("p", {"class": "lead"}, read.get("summary") or ""),
              definition([
                  ("kind", read.get("kind")),
                  ("scope", read.get("scope")),
                  ("file", el("code", None, read.get("path") or "")),
                  ("tags", ", ".join(read.get("tags") or []) or None),
                  ("aliases", ", ".join(read.get("aliases") or []) or None),
                  ("relevance", ", ".join(read.get("relevance") or []) or None),
                  ("date", read.get("date")),
                  ("sources", join(links.source(name) for name in read.get("slRefs") or [])
                   if read.get("slRefs") else None),
              ]))


def _pattern(pattern: dict[str, Any], links: Links) -> Markup:
    connection = str(pattern.get("connection"))
    return definition([
        ("connection", connection),
        ("tables", join(links.table(connection, str(t)) for t in pattern.get("tablesInvolved") or [])),
        ("query templates", pattern.get("templates")),
        ("stale since", pattern.get("staleSince")),
    ])


def _relations(read: dict[str, Any], links: Links) -> Markup:
    relations = read.get("relations") or {}
    rows: list[tuple[str, Child]] = [
        (name.replace("_", " "), join(links.page(key) for key in relations.get(name) or []))
        for name in RELATIONS if relations.get(name)]
    if read.get("refs"):
        rows.append(("refers to", join(links.page(key) for key in read["refs"])))
    if read.get("supersededBy"):
        rows.append(("superseded by", join(ref_link(links, {"id": ref}) for ref in read["supersededBy"])))
    backlinks = read.get("backlinks") or []
    if backlinks:
        rows.append(("cited by", join(el("span", None, ref_link(links, {"id": b.get("id")}), f" ({b.get('relation')})")
                                      for b in backlinks)))
    for missing, label in (("unresolvedRefs", "unresolved refs"), ("unresolvedSlRefs", "unresolved sl refs")):
        if read.get(missing):
            rows.append((label, ", ".join(read[missing])))
    return definition(rows) if rows else empty("No relations.")


def page_item(page: dict[str, Any], links: Links) -> Markup:
    return el("li", None, link(links.to(wiki_path(page)), page["key"]),
              el("span", {"class": f"kind {page.get('kind')}"}, page.get("kind") or ""),
              " — ", page.get("summary") or "")
