"""One page per semantic-layer source (``sl.read``): measures, dimensions, joins, segments and the SQL
``sl.compile`` writes for an example query, with the source file itself for reference."""

from __future__ import annotations

from typing import Any

import orjson

from khive.site import paths
from khive.site.catalog import source_path
from khive.site.html import Markup, el, empty, join, section, table
from khive.site.layout import Page
from khive.site.markup import highlight, sql_block
from khive.site.pages.common import Links, Site, definition, failure_box
from khive.site.reader import Failure

CATEGORICAL = ("string", "boolean")


def example_query(name: str, source: dict[str, Any]) -> dict[str, Any] | None:
    """An ``sl.compile`` call that shows the source at work: its first measure by a category (else by month)."""
    measures = source.get("measures") or []
    if not measures:
        return None
    columns = source.get("columns") or []
    args: dict[str, Any] = {"measures": [f"{name}.{measures[0]['name']}"], "include": ["sql"]}
    category = next((c for c in columns if c.get("type") in CATEGORICAL), None)
    moment = next((c for c in columns if c.get("type") == "time"), None)
    if category is not None:
        args["dimensions"] = [f"{name}.{category['name']}"]
    elif moment is not None:
        args.update(dimensions=[f"{name}.{moment['name']}"], time_grain="month")
    return args


async def source_page(site: Site, source: dict[str, Any]) -> Page:
    here = source_path(source)
    links = Links(here, site.catalog)
    name, connection = str(source["name"]), str(source.get("connectionId", ""))
    subject = f"source:{connection}:{name}"
    read, text = await site.reader.many([
        ("sl.read", {"name": name, "connection": connection, "format": "json"}),
        ("sl.read", {"name": name, "connection": connection, "format": "yaml"})])
    if isinstance(read, Failure):
        return Page(here, name, failure_box(read), subject=subject)
    body = read.get("source") or {}
    example = example_query(name, body)
    compiled = await site.reader.call("sl.compile", connection=connection, **example) if example else None
    dialect = site.catalog.drivers.get(connection)
    parts = [
        _summary(read, body, connection, links),
        section("Measures", _measures(body), id_="measures"),
        section("Dimensions", _dimensions(body), id_="dimensions"),
        section("Joins", _joins(body, connection, links), id_="joins"),
        section("Segments", _segments(body), id_="segments") if body.get("segments") else "",
        section("Example query", await _example(site, connection, example, compiled, dialect), id_="example"),
        section("Problems", _problems(read), id_="problems") if read.get("problems") else "",
        section("Source file", el("p", None, el("code", None, read.get("path") or "")),
                await site.blocking(highlight, text.get("yaml", ""), "yaml")
                if not isinstance(text, Failure) else failure_box(text), id_="file"),
    ]
    return Page(here, f"{name} (source)", Markup("".join(str(part) for part in parts)), subject=subject)


def _summary(read: dict[str, Any], body: dict[str, Any], connection: str, links: Links) -> Markup:
    table_id = body.get("table")
    backlinks = [entry.get("id", "") for entry in read.get("backlinks") or []]
    pages = [links.page(ref.removeprefix("wiki:")) for ref in backlinks if ref.startswith("wiki:")]
    return el("div", {"class": "summary"},
              el("p", {"class": "lead"}, read.get("description") or "No description."),
              definition([
                  ("connection", connection),
                  ("table", links.table(connection, str(table_id)) if table_id else None),
                  ("defined by SQL", el("code", None, body.get("sql") or "") if body.get("sql") else None),
                  ("grain", ", ".join(body.get("grain") or []) or None),
                  ("aliases", ", ".join(body.get("aliases") or []) or None),
                  ("wiki pages that cite it", join(pages) if pages else None),
              ]))


def _described(item: dict[str, Any]) -> str:
    descriptions = item.get("descriptions") or {}
    return str(item.get("description") or descriptions.get("user") or descriptions.get("db")
               or descriptions.get("ai") or "")


def _measures(body: dict[str, Any]) -> Markup:
    rows = [[el("code", {"id": paths.anchor(str(m.get("name")))}, m.get("name")), m.get("agg") or "",
             el("code", None, m.get("expr") or "*"), el("code", None, m.get("filter")) if m.get("filter") else "",
             _described(m)] for m in body.get("measures") or []]
    return table(["measure", "agg", "expr", "filter", "description"], rows) if rows else empty("No measures.")


def _dimensions(body: dict[str, Any]) -> Markup:
    rows = [[el("code", {"id": paths.anchor(str(c.get("name")))}, c.get("name")), c.get("type") or "",
             el("code", None, c.get("expr")) if c.get("expr") else "", _described(c),
             ", ".join(str(v) for v in (c.get("values") or [])[:10])] for c in body.get("columns") or []]
    return table(["dimension", "type", "expr", "description", "known values"], rows) if rows \
        else empty("No dimensions.")


def _joins(body: dict[str, Any], connection: str, links: Links) -> Markup:
    rows = [[links.source(str(j.get("to")), connection), j.get("role") or "", j.get("relationship") or "",
             el("code", None, " and ".join(f"{k.get('from')} = {k.get('to')}" for k in j.get("on") or []))]
            for j in body.get("joins") or []]
    return table(["to", "role", "relationship", "on"], rows) if rows else empty("No joins.")


def _segments(body: dict[str, Any]) -> Markup:
    rows = [[el("code", None, s.get("name")), el("code", None, s.get("filter")), s.get("description") or ""]
            for s in body.get("segments") or []]
    return table(["segment", "filter", "description"], rows)


async def _example(site: Site, connection: str, example: dict[str, Any] | None, compiled: Any,
                   dialect: str | None) -> Markup:
    if example is None:
        return empty("No measure to compile yet.")
    call = ", ".join(f"{key}={orjson.dumps(value).decode()}" for key, value in {"connection": connection,
                                                                             **example}.items())
    shown = el("p", None, el("code", None, f"sl.compile({call})"))
    if isinstance(compiled, Failure):
        return Markup(shown + failure_box(compiled))
    sql = (compiled or {}).get("sql") or ""
    return Markup(shown + await site.blocking(sql_block, sql, dialect))


def _problems(read: dict[str, Any]) -> Markup:
    return el("ul", {"class": "problems"}, [el("li", None, str(problem.get("message", problem))
                                                 if isinstance(problem, dict) else str(problem))
                                            for problem in read.get("problems") or []])
