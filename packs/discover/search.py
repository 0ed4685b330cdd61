"""``discover.search``: one ranked, filtered, budgeted list of refs across every pack's documents."""

from __future__ import annotations

import datetime as dt
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from khive import budget
from packs.discover import balance, coverage, deliver, forms, lexicon_store, pages, rank, relations, route
from packs.discover.forms import Term
from packs.discover.pages import PageFilter, Scope
from packs.discover.rank import Candidate
from packs.discover.refs import matched_on, public_id, raw_fields, snippet_of, summary_of
from packs.discover.text import matched_terms, query_terms

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex
    from khive.project.store import FileStore

WIKI_KINDS = ("wiki",)
SORTING = re.compile(r"\b(?:order(?:ed)?|sort(?:ed)?|group(?:ed)?|rank(?:ed)?)\s+(?:them\s+|it\s+)?by\b", re.I)
# "last year", "past 30 days", "previous quarter" say which period, not what: "last" would otherwise match
# every ``last_name`` and ``last_update`` column and route the question to the schema that has most of them.
PERIOD = re.compile(r"\b(?:last|past|previous|next|coming|recent)\s+(?:\d+\s+)?(?:years?|quarters?|months?|"
                    r"weeks?|days?|hours?|minutes?|decade)\b", re.I)
SL_KINDS = ("sl_source", "sl_measure", "sl_dimension")


@dataclass
class Ranked:
    candidates: list[Candidate]  # best first
    engines: int  # how many engines answered
    terms: list[str]
    expanded: list[Term]  # the terms with their forms
    inferred: list[Scope] = field(default_factory=list)  # scopes the question points at (pages there lifted)
    why: dict[str, str] = field(default_factory=dict)


def rank_candidates(index: RetrievalIndex, query: str, *, connection: str | None, user: str, include_recaps: bool,
                    depth: int, today: dt.date, page_filter: PageFilter | None = None) -> Ranked:
    """Every candidate, best first; without ``scopes`` the question's scopes are inferred from the wiki."""
    terms = query_terms(PERIOD.sub(" ", SORTING.sub(" ", query)))
    catalog = lexicon_store.of(index)
    expanded = forms.expand(query, terms, catalog)
    page_filter = page_filter or PageFilter()
    inferred, why = ([], {}) if page_filter.scopes is not None else \
        pages.infer(wiki_view(index, user)[0], query, expanded)
    found, engines = rank.gather(index, " ".join(forms.surfaces(expanded)), connection=connection, depth=depth)
    relations.apply(index, found, query=query, user=user, include_recaps=include_recaps, today=today)
    pages.apply(found, page_filter, inferred)
    route.apply(index, catalog, found, expanded, connection=connection, depth=depth)
    balance.apply(index, catalog, found, expanded)
    rank.lift_named(found, terms)
    rank.apply_priors(index, found)
    rank.lift_bridges(index, found, kind="sl_source", relations=("join",))
    return Ranked(rank.ordered(found.values()), engines, terms, expanded, inferred, why)


def uncovered(index: RetrievalIndex, terms: Sequence[Term], connection: str | None) -> list[str]:
    """Query terms that nothing in scope reaches: no wiki or SL document, no catalog word."""
    words = [term.word for term in terms]
    covered = index.covered_terms(words, kinds=WIKI_KINDS)
    covered |= index.covered_terms([w for w in words if w not in covered], kinds=SL_KINDS, connection=connection)
    catalog = lexicon_store.of(index)
    covered |= {term.word for term in terms if any(form in catalog.postings for form in term.forms)}
    return [word for word in words if word not in covered]


def columns_of(index: RetrievalIndex, tables: Sequence[str]) -> dict[str, list[str]]:
    edges = index.edge_map(list(tables), relations=["contains"])
    return {table: [target.rsplit(".", 1)[-1] for _, target in found] for table, found in edges.items()}


def to_ref(candidate: Candidate, fields: dict[str, str], terms: list[str], columns: list[str], engines: int,
           explain: bool) -> dict[str, Any]:
    meta, kind = candidate.metadata, candidate.kind
    matched, field = matched_on(kind, meta, fields, terms)
    ref: dict[str, Any] = {"kind": kind, "id": public_id(candidate.doc_id, kind, meta), "docId": candidate.doc_id,
                           "score": rank.normalised(candidate, engines),
                           "summary": summary_of(kind, meta, fields),
                           "snippet": snippet_of(kind, meta, fields, terms, field, columns),
                           "matchedOn": matched, **raw_fields(kind, meta)}
    if candidate.flags:
        ref["flags"] = list(dict.fromkeys(candidate.flags))
    if candidate.reached:
        ref["reached"] = candidate.reached
    if kind in ("wiki", "pattern"):
        ref["pageKind"] = meta.get("page_kind")
    if explain:
        ref["explain"] = {"fused": round(candidate.fused, 6), "base": round(candidate.base, 6),
                          "lanes": candidate.lanes, "bonuses": candidate.bonuses,
                          "matchedTerms": sorted({t for name in fields for t in matched_terms(terms, fields[name])})}
    return ref


_PAGES: weakref.WeakKeyDictionary[Any, tuple[int, str, pages.Folders, list[dict[str, Any]]]] = \
    weakref.WeakKeyDictionary()


def wiki_view(index: RetrievalIndex, user: str) -> tuple[pages.Folders, list[dict[str, Any]]]:
    """(the folders of the pages the caller sees, the ``relevance: always`` floor), kept per index generation."""
    cached = _PAGES.get(index)
    if cached is not None and cached[:2] == (index.generation, user):
        return cached[2], cached[3]
    rows = index.documents(kind="wiki")
    shadowed = index.existing([f"wiki:@{user}/{row['metadata'].get('key')}" for row in rows
                               if row["metadata"].get("scope") == relations.GLOBAL])
    seen = [row for row in rows if relations.visible(row["metadata"], user, shadowed)]
    folders, floor = pages.folders_of([row["metadata"] for row in seen]), _floor_pages(index, seen)
    _PAGES[index] = (index.generation, user, folders, floor)
    return folders, floor


def _floor_pages(index: RetrievalIndex, seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``relevance: always`` pages: what an agent should see whatever it asked."""
    rows = [row for row in seen if "always" in (row["metadata"].get("relevance") or [])]
    superseded = index.incoming([relations.wiki_id(str(r["metadata"].get("key"))) for r in rows], "supersedes")
    out = []
    for row in sorted(rows, key=lambda r: (str(r["metadata"].get("key")), r["id"])):
        meta = row["metadata"]
        if superseded.get(relations.wiki_id(str(meta.get("key")))):
            continue
        out.append({"id": meta.get("key"), "docId": row["id"], "pageKind": meta.get("page_kind"),
                    "summary": meta.get("summary") or None, "metadata": meta})
    return out


def floor_pages(index: RetrievalIndex, user: str, page_filter: PageFilter | None = None) -> list[dict[str, Any]]:
    """The floor, with the page filter applied (an ``always`` page is in every phase)."""
    keep = page_filter or PageFilter()
    return [{k: v for k, v in page.items() if k != "metadata"} for page in wiki_view(index, user)[1]
            if keep.keeps(page["metadata"])]


def run(index: RetrievalIndex, files: FileStore, *, query: str, kinds: Sequence[str] | None, connection: str | None,
        limit: int, explain: bool, budget_tokens: int | None, user: str, include_recaps: bool, today: dt.date,
        page_filter: PageFilter | None = None, render_bodies: bool = False) -> dict[str, Any]:
    index.refresh()
    depth = max(limit * 3, 40)
    page_filter = page_filter or PageFilter()
    ranked = rank_candidates(index, query, connection=connection, user=user, include_recaps=include_recaps,
                             depth=depth, today=today, page_filter=page_filter)
    ranking, engines, terms, expanded = ranked.candidates, ranked.engines, ranked.terms, ranked.expanded
    if kinds:  # after ranking, from the deeper list: the order never changes
        ranking = [c for c in ranking if c.kind in set(kinds)]
    top = ranking[:limit]
    rest = [c for c in ranking[limit:limit + coverage.POSSIBLY_DEPTH]
            if c.kind in coverage.DOCUMENT_KINDS and c.reached is None]
    fields = index.fields([c.doc_id for c in top + rest])
    columns = columns_of(index, [c.doc_id for c in top if c.index_kind == "table"])
    refs = [to_ref(c, fields.get(c.doc_id, {}), terms, columns.get(c.doc_id, []), engines, explain) for c in top]
    covered = coverage.measure(expanded, top, fields)
    possibly = []
    for candidate, hits, gap in coverage.possibly_relevant(covered, rest, fields):
        ref = to_ref(candidate, fields.get(candidate.doc_id, {}), terms, [], engines, explain)
        ref.update({"matchedOn": "body", "snippet": coverage.snippet(fields.get(candidate.doc_id, {}), gap),
                    "confidence": "low", "matchedTerms": hits, "gap": gap})
        possibly.append(ref)
    missing_everywhere = uncovered(index, expanded, connection)
    core = {"query": query, "terms": terms, "uncovered": missing_everywhere,
            "coverage": covered.report(len(refs)),
            "questions": coverage.questions(covered, missing_everywhere,
                                            coverage.mentions(covered, refs + possibly, fields), refs, expanded,
                                            connection),
            "scopes": {"given": [scope.label() for scope in page_filter.scopes] if page_filter.scopes is not None
                       else None, "inferred": [scope.label() for scope in ranked.inferred] or [relations.GLOBAL],
                       "why": ranked.why},
            "floor": floor_pages(index, user, page_filter)}
    delivered = deliver.bodies(index, files, refs) if render_bodies else []
    present = ["evidenceExcerpts", "summaries"] + \
        (["related"] if possibly or any("reached" in r for r in refs) else [])

    def build(kept: frozenset[str]) -> dict[str, Any]:
        def trim(ref: dict[str, Any]) -> dict[str, Any]:
            ref = dict(ref)
            if "evidenceExcerpts" not in kept:
                ref.pop("snippet", None)
                ref.pop("explain", None)
            if "summaries" not in kept:
                ref.pop("summary", None)
            return ref

        out = [trim(ref) for ref in refs if "reached" not in ref or "related" in kept]
        payload = {**core, "refs": out, "count": len(out),
                   "possiblyRelevant": [trim(ref) for ref in possibly] if "related" in kept else []}
        if render_bodies:
            payload["delivered"] = delivered if "evidenceExcerpts" in kept else []
        return payload

    return budget.fit(build, present, budget_tokens)
