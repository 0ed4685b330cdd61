"""The audit view (``audit.query``): recent requests by principal and verb, refusals and errors, and every op
with filters. Arguments are shown exactly as the trail stores them: redacted before they were written, so
a value the audit masked never reaches this page. ``audit.query`` is an operator verb: over HTTP the gate
refuses it for an agent's token, and the page says so instead."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from khive.site import paths
from khive.site.html import Markup, el, empty, section, table
from khive.site.layout import Page
from khive.site.pages.common import Site, failure_box
from khive.site.reader import SITE_CLIENT, Failure

LIMIT = 1000
MAX_ARGS_CHARS = 300
QUIET_OUTCOMES = frozenset({"ok", "running"})


async def audit_page(site: Site) -> Page:
    answer = await site.reader.call("audit.query", limit=LIMIT)
    if isinstance(answer, Failure):
        return Page(paths.AUDIT, "Audit", failure_box(answer))
    events = list(answer.get("events") or [])
    # The site reads through the verbs too: its own reads would drown the agents' requests in the tallies, but
    # a refusal or an error is worth seeing whoever ran into it.
    others = [e for e in events if e.get("client") != SITE_CLIENT]
    denied = [e for e in events if e.get("decision") == "deny"]
    failed = [e for e in events if e.get("decision") != "deny" and e.get("outcome") not in QUIET_OUTCOMES]
    parts = [
        el("p", {"class": "lead"}, f"The latest {len(events)} ops, newest first, {len(events) - len(others)} of them "
                                   "the site's own reads (left out of the tallies). Arguments are shown as the "
                                   "audit stored them, redacted."),
        el("div", {"class": "columns-2"},
           section("By principal", _tally(others, "principal")), section("By verb", _tally(others, "verb"))),
        section(f"Refusals ({len(denied)})", _events(denied) if denied else empty("No refusals."), id_="refusals"),
        section(f"Errors ({len(failed)})", _events(failed) if failed else empty("No errors."), id_="errors"),
        section("Every op", _filters(events), _events(events, filterable=True), id_="ops"),
    ]
    return Page(paths.AUDIT, "Audit", Markup("".join(parts)), scripts=(paths.AUDIT_SCRIPT,))


def _tally(events: list[dict[str, Any]], key: str) -> Markup:
    total = Counter(str(e.get(key)) for e in events)
    denied = Counter(str(e.get(key)) for e in events if e.get("decision") == "deny")
    failed = Counter(str(e.get(key)) for e in events
                     if e.get("decision") != "deny" and e.get("outcome") not in QUIET_OUTCOMES)
    rows = [[el("code", None, name), count, denied[name] or "", failed[name] or ""]
            for name, count in total.most_common()]
    return table([key, "ops", "refused", "errors"], rows) if rows else empty("No ops yet.")


def _arguments(event: dict[str, Any]) -> str:
    shown = orjson.dumps(event.get("args")).decode()
    return shown if len(shown) <= MAX_ARGS_CHARS else shown[:MAX_ARGS_CHARS - 1] + "…"


def _events(events: list[dict[str, Any]], filterable: bool = False) -> Markup:
    head = ["time", "principal", "transport", "verb", "decision", "outcome", "ms", "arguments", "reason"]
    rows = []
    for e in events:
        cells = [str(e.get("ts", ""))[:19].replace("T", " "), e.get("principal", ""),
                 e.get("transport", "") + (f" ({e['client']})" if e.get("client") else ""),
                 el("code", None, e.get("verb", "")), e.get("decision", ""), e.get("outcome", ""),
                 f"{int(e.get('durationUs') or 0) / 1000:.1f}", el("code", None, _arguments(e)), e.get("reason", "")]
        rows.append(el("tr", {"data-principal": e.get("principal"), "data-verb": e.get("verb"),
                              "data-outcome": e.get("outcome"), "data-decision": e.get("decision"),
                              "data-site": "1" if e.get("client") == SITE_CLIENT else None} if filterable else None,
                       [el("td", None, cell) for cell in cells]))
    header = el("thead", None, el("tr", None, [el("th", {"scope": "col"}, name) for name in head]))
    return el("div", {"class": "scroll"}, el("table", {"class": "audit", "id": "ops-table" if filterable else None},
                                             header, el("tbody", None, rows)))


def _filters(events: list[dict[str, Any]]) -> Markup:
    def choice(name: str, label: str) -> Markup:
        values = sorted({str(e.get(name)) for e in events})
        return el("label", None, label, " ",
                  el("select", {"data-filter": name}, el("option", {"value": ""}, "all"),
                     [el("option", {"value": v}, v) for v in values]))

    return el("form", {"class": "filters", "id": "audit-filters", "hidden": True},
              choice("principal", "principal"), choice("verb", "verb"), choice("outcome", "outcome"),
              choice("decision", "decision"),
              el("label", None, el("input", {"type": "checkbox", "data-filter": "site", "checked": True}),
                 " hide the site's own reads"))
