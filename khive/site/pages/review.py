"""Relationships awaiting review: the inferred joins the scan was not sure of (``tier: review``, confidence
between its review and accept thresholds, 0.55-0.85 by default), in one list with their evidence and the
YAML that accepts each one."""

from __future__ import annotations

from typing import Any

from khive.site import paths
from khive.site.catalog import TableRef
from khive.site.html import Markup, el, empty, section, table
from khive.site.layout import Page
from khive.site.markup import highlight
from khive.site.pages.common import Links, Site, failure_box
from khive.site.pages.tables import evidence_list, qualified
from khive.site.reader import Failure


def join_yaml(rel: dict[str, Any], target_source: str) -> str:
    """The ``joins:`` entry that accepts ``rel`` in the semantic layer (how its link becomes a join agents use)."""
    keys = "".join(f"\n    - from: {a}\n      to: {b}" for a, b in zip(rel.get("fromColumns") or [],
                                                                    rel.get("toColumns") or [], strict=False))
    return f"- to: {target_source}\n  on:{keys}\n  relationship: many_to_one\n"


async def review_page(site: Site) -> Page:
    links = Links(paths.REVIEW, site.catalog)
    refs = list(site.catalog.table_refs())
    answers = await site.reader.many([("scan.entity", {"connection": r.connection, "table": r.id}) for r in refs])
    pending: list[tuple[TableRef, dict[str, Any]]] = []
    failures = []
    for ref, answer in zip(refs, answers, strict=True):
        if isinstance(answer, Failure):
            failures.append(failure_box(answer))
            continue
        for rel in (answer.get("inferredRelationships") or {}).get("out") or []:
            if rel.get("tier") == "review":
                pending.append((ref, rel))
    pending.sort(key=lambda item: (-float(item[1].get("confidence") or 0), item[0].id))
    intro = el("p", {"class": "lead"},
               "The scan infers joins that no foreign key declares. Those it is sure of are accepted; these it "
               "is not, and no agent joins on them until a person says so. To accept one, add its join to the "
               "semantic-layer source of the first table (the YAML under each). To reject one, leave it out: "
               "a relationship under review is never written to _schema, bootstrapped or joined.")
    rows = [await _row(site, links, ref, rel) for ref, rel in pending]
    body = table(["from", "to", "confidence", "evidence", "to accept"], rows, class_="review") if rows \
        else empty("Nothing awaits review.")
    return Page(paths.REVIEW, f"Relationships awaiting review ({len(rows)})",
                Markup(intro + body + (section("Tables that did not answer", failures) if failures else "")))


async def _row(site: Site, links: Links, ref: TableRef, rel: dict[str, Any]) -> list[Any]:
    target = qualified(rel.get("toDb"), rel.get("toTable"))
    source = next((s for s in site.catalog.sources
                   if s.get("connectionId") == ref.connection and s.get("table") == ref.id), None)
    wanted = next((s for s in site.catalog.sources
                   if s.get("connectionId") == ref.connection and s.get("table") == target), None)
    if source is None or wanted is None:
        accept: Any = el("span", {"class": "muted"}, "needs a source for both tables first (sl.bootstrap)")
    else:
        snippet = await site.blocking(highlight, join_yaml(rel, str(wanted["name"])), "yaml")
        accept = el("div", None, "under ", el("code", None, "joins:"), " in ",
                    el("code", None, f"semantic-layer/{ref.connection}/{source['name']}.yaml"), snippet)
    return [el("span", None, links.table(ref.connection, ref.id), ".", ", ".join(rel.get("fromColumns") or [])),
            el("span", None, links.table(ref.connection, target), ".", ", ".join(rel.get("toColumns") or [])),
            f"{float(rel.get('confidence') or 0):.3f}", evidence_list(rel), accept]
