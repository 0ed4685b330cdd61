"""One page per scanned table (``scan.entity``): columns, redacted samples, keys, relationships with their
evidence, usage, the patterns and sources built on it, and its join graph."""

from __future__ import annotations

from typing import Any

from khive.site import paths
from khive.site.catalog import TableRef, source_path, wiki_path
from khive.site.graph import Neighbour, join_graph
from khive.site.html import Markup, el, empty, join, link, section, table
from khive.site.layout import Page
from khive.site.pages.common import Links, Site, chips, definition, failure_box, value_text
from khive.site.reader import Failure


async def table_page(site: Site, ref: TableRef) -> Page:
    links = Links(ref.path, site.catalog)
    subject = f"table:{ref.connection}:{ref.id}"
    entity = await site.reader.call("scan.entity", connection=ref.connection, table=ref.id)
    if isinstance(entity, Failure):
        return Page(ref.path, ref.id, failure_box(entity), subject=subject)
    body = [
        _summary(entity, ref, site, links),
        section("Join graph", _graph(entity, ref, links), _legend(), id_="join-graph"),
        section("Columns", _columns(entity), id_="columns"),
        section("Keys", _keys(entity, ref, links), id_="keys"),
        section("Inferred relationships", _inferred(entity, ref, links), id_="relationships"),
        section("Usage", _usage(entity.get("usage"), ref, links), id_="usage"),
        section("Patterns that read it", _patterns(site, ref, links), id_="patterns"),
    ]
    return Page(ref.path, ref.id, Markup("".join(body)), subject=subject)


def _summary(entity: dict[str, Any], ref: TableRef, site: Site, links: Links) -> Markup:
    sources = [source for source in site.catalog.sources
               if source.get("connectionId") == ref.connection and source.get("table") == ref.id]
    usage = entity.get("usage") or {}
    return el("div", {"class": "summary"},
              el("p", {"class": "lead"}, entity.get("description") or entity.get("comment") or "No comment."),
              definition([
                  ("connection", ref.connection),
                  ("kind", entity.get("kind")),
                  ("rows (estimate)", f"{entity['estimatedRows']:,}" if entity.get("estimatedRows") is not None
                   else None),
                  ("query frequency", usage.get("frequencyTier")),
                  ("semantic-layer sources", join(link(links.to(source_path(s)), s["name"]) for s in sources)
                   if sources else "none yet: sl.bootstrap writes one"),
                  ("scan", entity.get("syncId")),
              ]))


def qualified(db: Any, name: Any) -> str:
    return f"{db}.{name}" if db else str(name)


def neighbours(entity: dict[str, Any], ref: TableRef, links: Links) -> list[Neighbour]:
    """Every table this one joins to, with the kinds of evidence for each join."""
    found: dict[str, Neighbour] = {}

    def add(table_id: str, kind: str, confidence: float | None = None) -> None:
        if table_id == ref.id:
            return  # a self-join is listed in the tables below, not drawn
        target = links.catalog.table(ref.connection, table_id)
        entry = found.setdefault(table_id, Neighbour(table_id, links.to(target.path) if target else None))
        entry.add(kind, confidence)

    keys = entity.get("foreignKeys") or {}
    for fk in keys.get("out") or []:
        add(qualified(fk.get("refDb"), fk.get("refTable")), "fk")
    for fk in keys.get("in") or []:
        add(str(fk.get("from")), "fk")
    inferred = entity.get("inferredRelationships") or {}
    for rel in inferred.get("out") or []:
        add(qualified(rel.get("toDb"), rel.get("toTable")), str(rel.get("tier")), rel.get("confidence"))
    for rel in inferred.get("in") or []:
        add(qualified(rel.get("fromDb"), rel.get("fromTable")), str(rel.get("tier")), rel.get("confidence"))
    for joined in (entity.get("usage") or {}).get("commonJoins") or []:
        add(str(joined.get("table")), "usage")
    return list(found.values())


def _graph(entity: dict[str, Any], ref: TableRef, links: Links) -> Markup:
    around = neighbours(entity, ref, links)
    if not around:
        return empty("No joins known: no foreign keys, no inferred relationships, no joins in the query history.")
    return join_graph(ref.id, around)


def _legend() -> Markup:
    return el("p", {"class": "legend"},
              el("span", {"class": "key fk"}, "declared foreign key"), " ",
              el("span", {"class": "key accepted"}, "inferred, accepted (confidence)"), " ",
              el("span", {"class": "key review"}, "inferred, awaiting review"), " ",
              el("span", {"class": "key usage"}, "joined in analysts' queries"))


def _samples(samples: dict[str, Any] | None) -> Markup | str:
    if not samples:
        return ""
    if samples.get("skipped"):
        return el("span", {"class": "muted"}, f"not sampled ({samples['skipped']})")
    values = samples.get("examples") or (samples.get("values") or [])[:10]
    if not values:
        return el("span", {"class": "muted"}, "no values")
    return join((el("code", {"class": "sample"}, value_text(value)) for value in values), " ")


def _columns(entity: dict[str, Any]) -> Markup:
    columns = entity.get("columns") or []
    if not columns:
        return empty("No columns.")
    rows = []
    for column in columns:
        name = str(column.get("name"))
        marks = [mark for mark, on in (("PK", column.get("primaryKey")), ("NOT NULL", column.get("nullable") is False))
                 if on]
        rows.append([el("span", {"id": paths.anchor(name)}, el("code", None, name)),
                     el("span", {"title": column.get("nativeType") or ""}, column.get("normalizedType") or
                        column.get("nativeType") or ""),
                     " ".join(marks), column.get("comment") or "", _samples(column.get("samples"))])
    return table(["column", "type", "", "comment", "samples (redacted)"], rows, class_="columns")


def _keys(entity: dict[str, Any], ref: TableRef, links: Links) -> Markup:
    primary = entity.get("primaryKey") or []
    keys = entity.get("foreignKeys") or {}
    rows = []
    for fk in keys.get("out") or []:
        target = qualified(fk.get("refDb"), fk.get("refTable"))
        rows.append(["references", ", ".join(fk.get("columns") or []), links.table(ref.connection, target),
                     ", ".join(fk.get("refColumns") or []), fk.get("name") or ""])
    for fk in keys.get("in") or []:
        rows.append(["referenced by", ", ".join(fk.get("refColumns") or []),
                     links.table(ref.connection, str(fk.get("from"))), ", ".join(fk.get("columns") or []),
                     fk.get("name") or ""])
    parts = [el("p", None, "Primary key: ", el("code", None, ", ".join(primary)) if primary else "none declared")]
    parts.append(table(["", "columns", "table", "its columns", "constraint"], rows) if rows
                 else empty("No declared foreign keys."))
    return Markup("".join(parts))


def evidence_list(rel: dict[str, Any]) -> Markup:
    items = [el("li", None, el("code", None, str(item.get("kind"))), f" ({item.get('weight')}): ",
                item.get("detail") or "") for item in rel.get("evidence") or []]
    return el("ul", {"class": "evidence"}, items) if items else Markup("")


def _inferred(entity: dict[str, Any], ref: TableRef, links: Links) -> Markup:
    inferred = entity.get("inferredRelationships") or {}
    rows = []
    for direction, rels in (("out", inferred.get("out") or []), ("in", inferred.get("in") or [])):
        for rel in rels:
            source = qualified(rel.get("fromDb"), rel.get("fromTable")) if direction == "in" else ref.id
            target = qualified(rel.get("toDb"), rel.get("toTable")) if direction == "out" else ref.id
            rows.append([
                el("span", None, links.table(ref.connection, source), ".", ", ".join(rel.get("fromColumns") or [])),
                el("span", None, links.table(ref.connection, target), ".", ", ".join(rel.get("toColumns") or [])),
                el("span", {"class": f"tier {rel.get('tier')}"}, rel.get("tier") or ""),
                f"{rel.get('confidence', 0):.3f}", evidence_list(rel)])
    if not rows:
        return empty("No inferred relationships.")
    return table(["from", "to", "tier", "confidence", "evidence"], rows)


def _usage(usage: dict[str, Any] | None, ref: TableRef, links: Links) -> Markup:
    if not usage:
        return empty("No usage yet: `khive ingest` reads the query history into it.")
    joins = [el("li", None, links.table(ref.connection, str(j.get("table"))), " on ",
                el("code", None, " and ".join(j.get("on") or []))) for j in usage.get("commonJoins") or []]
    return Markup("".join([
        el("p", None, usage.get("narrative") or ""),
        definition([
            ("common filters", chips(el("code", None, c) for c in usage.get("commonFilters") or [])
             if usage.get("commonFilters") else None),
            ("common group-bys", chips(el("code", None, c) for c in usage.get("commonGroupBys") or [])
             if usage.get("commonGroupBys") else None),
            ("common joins", el("ul", None, joins) if joins else None),
        ]),
    ]))


def _patterns(site: Site, ref: TableRef, links: Links) -> Markup:
    using = [pattern for pattern in site.catalog.patterns
             if pattern.get("connection") == ref.connection and ref.id in (pattern.get("tablesInvolved") or [])]
    if not using:
        return empty("No pattern page reads this table.")
    items = []
    for pattern in using:
        page = site.catalog.page(str(pattern.get("page")))
        title = pattern.get("title") or pattern.get("slug")
        items.append(el("li", None, link(links.to(wiki_path(page)), title) if page else title, " — ",
                        pattern.get("summary") or ""))
    return el("ul", None, items)
