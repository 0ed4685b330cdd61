"""The overview (``overview()`` and ``discover.doctor()``): connections, last scan and ingest, the doctor's grade
and findings, and what is stale, each with its fix."""

from __future__ import annotations

from typing import Any

from khive.site import paths
from khive.site.html import Markup, el, empty, join, link, section, table
from khive.site.layout import Page
from khive.site.pages.common import Links, Site, failure_box

SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


async def overview_page(site: Site) -> Page:
    links = Links(paths.OVERVIEW, site.catalog)
    doctor = await site.reader.call("discover.doctor")
    facts = site.catalog.overview
    parts = [
        _counts(facts, links),
        section("Connections", _connections(facts, links), id_="connections"),
        section("Retrieval health", failure_box(doctor) if not isinstance(doctor, dict) else _doctor(doctor),
                id_="doctor"),
        section("What is stale", _stale(facts), id_="stale"),
    ]
    problems = [failure_box(failure) for failure in site.catalog.failures]
    problems += [el("p", {"class": "failure"}, f"{p.get('part')}: {p.get('error')}") for p in facts.get("problems", [])]
    if problems:
        parts.append(section("Problems", problems, id_="problems"))
    return Page(paths.OVERVIEW, f"{site.catalog.project}: what the agents see", Markup("".join(parts)))


def _counts(facts: dict[str, Any], links: Links) -> Markup:
    counts = facts.get("counts") or {}
    tiles = [("connections", counts.get("connections"), "#connections"), ("tables", counts.get("tables"),
             links.to(paths.TABLES)), ("sources", counts.get("sources"), links.to(paths.SOURCES)),
             ("wiki pages", counts.get("pages"), links.to(paths.WIKI)),
             ("patterns", counts.get("patterns"), links.to(paths.PATTERNS))]
    return el("ul", {"class": "tiles"}, [el("li", None, link(url, el("strong", None, value if value is not None
                                                                       else "-"), el("span", None, name)))
                                         for name, value, url in tiles])


def _connections(facts: dict[str, Any], links: Links) -> Markup:
    connections = facts.get("connections") or []
    if not connections:
        return empty("No connections in khive.yaml yet.")
    rows = []
    for c in connections:
        name = str(c.get("id"))
        top = [el("span", None, links.table(name, str(t.get("table"))), f" ({t.get('executions'):,} runs)")
               for t in c.get("topTables") or []]
        rows.append([el("strong", None, name), c.get("driver") or "", c.get("description") or "",
                     c.get("tables", "-"), c.get("lastScan") or "never", c.get("lastIngest") or "never",
                     join(top) if top else ""])
    return table(["connection", "driver", "what it holds", "tables", "last scan", "last ingest", "most queried"],
                 rows)


def _doctor(doctor: dict[str, Any]) -> Markup:
    grade = el("p", {"class": "grade"}, el("span", {"class": f"grade-letter g{doctor.get('grade', '')}"},
                                           doctor.get("grade", "?")), " ", doctor.get("summary", ""))
    findings = sorted(doctor.get("findings") or [], key=lambda f: SEVERITY_ORDER.index(f.get("severity"))
                      if f.get("severity") in SEVERITY_ORDER else len(SEVERITY_ORDER))
    rows = [[el("span", {"class": f"severity {f.get('severity')}"}, f.get("severity") or ""), f.get("title") or "",
             f.get("detail") or ""] for f in findings]
    return Markup(grade + (table(["severity", "finding", "what to do"], rows) if rows else empty("No findings.")))


def _stale(facts: dict[str, Any]) -> Markup:
    stale = facts.get("stale") or []
    if not stale:
        return empty("Nothing is stale.")
    return table(["what", "why", "fix"], [[item.get("what", ""), item.get("why", ""),
                                           el("code", None, item.get("fix", ""))] for item in stale])

