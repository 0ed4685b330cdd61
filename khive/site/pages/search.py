"""Search is ``discover.search`` itself: the served site asks it for each query; a static build carries its
answers to a fixed set of questions (the project's retrieval suite, the tables, the wiki titles), rendered
by the same code, and says that any other question needs ``khive site serve``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus

from khive.site import paths
from khive.site.html import Markup, el, empty, link
from khive.site.layout import Page
from khive.site.pages.common import Links, Site, failure_box, ref_link
from khive.site.reader import Answer, Failure

LIMIT = 15
STATIC_NOTE = ("This copy of the site was built ahead of time: it answers the questions listed here, ranked by "
               "discover.search when it was built. `khive site serve` answers any question.")


def normalized(query: str) -> str:
    """How a static build keys a question (search.js does the same): lower case, single spaces."""
    return " ".join(query.lower().split())


def search_call(query: str) -> tuple[str, dict[str, Any]]:
    return "discover.search", {"query": query, "limit": LIMIT}


def results(links: Links, query: str, answer: Answer) -> Markup:
    """The ranked refs of one ``discover.search`` answer, as both the server and the static index show them."""
    if isinstance(answer, Failure):
        return failure_box(answer)
    parts: list[Markup] = [el("p", {"class": "muted"}, f"discover.search(query={query!r}) ranked these:")]
    for pinned in answer.get("floor") or []:
        parts.append(el("p", {"class": "banner warning"}, "Always shown: ",
                        ref_link(links, {"kind": "wiki", "id": pinned.get("id")}), " — ", pinned.get("summary") or ""))
    missing = (answer.get("coverage") or {}).get("missing") or []
    if missing:
        parts.append(el("p", {"class": "banner stale"}, "Nothing matched: ", ", ".join(missing)))
    refs = answer.get("refs") or []
    items = [el("li", {"class": "hit", "data-ref-id": ref.get("id"), "data-kind": ref.get("kind")},
                el("span", {"class": f"kind {ref.get('kind')}"}, ref.get("kind") or ""), " ",
                ref_link(links, ref), el("span", {"class": "score"}, f"{float(ref.get('score') or 0):.3f}"),
                el("div", {"class": "muted"}, ref.get("summary") or ""))
             for ref in refs]
    parts.append(el("ol", {"class": "results", "id": "results"}, items) if items else empty("No results."))
    for question in answer.get("questions") or []:
        parts.append(el("p", {"class": "muted"}, "Ask back: ", str(question.get("text", question))
                        if isinstance(question, dict) else str(question)))
    return Markup("".join(parts))


def _form(query: str) -> Markup:
    return el("form", {"class": "search big", "action": "", "method": "get", "role": "search"},
              el("input", {"type": "search", "name": "q", "value": query, "aria-label": "search",
                           "placeholder": "Ask as an agent would, e.g. monthly revenue by region"}),
              el("button", {"type": "submit"}, "Search"))


async def served_search(site: Site, query: str) -> Page:
    """The search page with ``query`` answered now, by ``discover.search`` as the reader's principal."""
    links = Links(paths.SEARCH, site.catalog)
    body = _form(query)
    if query.strip():
        call, args = search_call(query)
        body = Markup(body + results(links, query, await site.reader.call(call, **args)))
    return Page(paths.SEARCH, "Search", body)


def static_search(queries: list[str]) -> Page:
    """The search page of a static build: search.js answers from the prebuilt index (assets/search-index.js)."""
    links_html = el("ul", {"class": "questions"},
                    [el("li", None, link(f"?q={quote_plus(q)}", q)) for q in queries])
    body = Markup(_form("") + el("div", {"id": "results-box"},
                                 el("noscript", None, el("p", None, STATIC_NOTE + " (Showing answers needs "
                                                                     "JavaScript.)")))
                  + el("details", {"id": "known-questions"}, el("summary", None, "Questions this copy answers"),
                       el("p", {"class": "muted"}, STATIC_NOTE), links_html))
    return Page(paths.SEARCH, "Search", body, scripts=(paths.SEARCH_INDEX, paths.SEARCH_SCRIPT))
