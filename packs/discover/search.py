"""``discover.search``: one ranked, filtered, budgeted list of refs across every pack's documents."""

from __future__ import annotations

import datetime as dt
import re
import weakref
from collections.abc import Sequence
from typing import Any

from khive import budget
from packs.discover import balance, forms, lexicon, rank, relations, route
from packs.discover.forms import Term
from packs.discover.rank import Candidate
from packs.discover.refs import matched_on, public_id, raw_fields, snippet_of, summary_of
from packs.discover.text import matched_terms, query_terms

WIKI_KINDS = ("wiki",)
SORTING = re.compile(r"\b(?:order(?:ed)?|sort(?:ed)?|group(?:ed)?|rank(?:ed)?)\s+(?:them\s+|it\s+)?by\b", re.I)
SL_KINDS = ("sl_source", "sl_measure", "sl_dimension")


def rank_candidates(index: Any, query: str, *, connection: str | None, user: str, include_recaps: bool,
                    depth: int, today: dt.date) -> tuple[list[Candidate], int, list[str], list[Term]]:
    """Every candidate, best first, with the number of engines that answered, the query terms and their forms."""
    terms = query_terms(SORTING.sub(" ", query))
    catalog = lexicon.of(index)
    expanded = forms.expand(query, terms, catalog)
    found, engines = rank.gather(index, " ".join(forms.surfaces(expanded)), connection=connection, depth=depth)
    relations.apply(index, found, query=query, user=user, include_recaps=include_recaps, today=today)
    route.apply(index, catalog, found, expanded, connection=connection, depth=depth)
    balance.apply(index, catalog, found, expanded)
    rank.lift_named(found, terms)
    rank.apply_priors(index, found)
    rank.lift_bridges(index, found, kind="sl_source", relations=("join",))
    return rank.ordered(found.values()), engines, terms, expanded


def uncovered(index: Any, terms: Sequence[Term], connection: str | None) -> list[str]:
    """Query terms that nothing in scope reaches: no wiki or SL document, no catalog word."""
    words = [term.word for term in terms]
    covered = index.covered_terms(words, kinds=WIKI_KINDS)
    covered |= index.covered_terms([w for w in words if w not in covered], kinds=SL_KINDS, connection=connection)
    catalog = lexicon.of(index)
    covered |= {term.word for term in terms if any(form in catalog.postings for form in term.forms)}
    return [word for word in words if word not in covered]


def columns_of(index: Any, tables: Sequence[str]) -> dict[str, list[str]]:
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


_FLOORS: weakref.WeakKeyDictionary[Any, tuple[int, str, list[dict[str, Any]]]] = weakref.WeakKeyDictionary()


def floor_pages(index: Any, user: str) -> list[dict[str, Any]]:
    """``relevance: always`` pages: what an agent should see whatever it asked (kept per index generation)."""
    cached = _FLOORS.get(index)
    if cached is not None and cached[:2] == (index.generation, user):
        return cached[2]
    floor = _floor_pages(index, user)
    _FLOORS[index] = (index.generation, user, floor)
    return floor


def _floor_pages(index: Any, user: str) -> list[dict[str, Any]]:
    rows = [row for row in index.documents(kind="wiki") if "always" in (row["metadata"].get("relevance") or [])]
    shadowed = index.existing([f"wiki:@{user}/{row['metadata'].get('key')}" for row in rows])
    superseded = index.incoming([relations.wiki_id(str(r["metadata"].get("key"))) for r in rows], "supersedes")
    out = []
    for row in sorted(rows, key=lambda r: (str(r["metadata"].get("key")), r["id"])):
        meta = row["metadata"]
        if not relations.visible(meta, user, shadowed) or superseded.get(relations.wiki_id(str(meta.get("key")))):
            continue
        out.append({"id": meta.get("key"), "docId": row["id"], "pageKind": meta.get("page_kind"),
                    "summary": meta.get("summary") or None})
    return out


def run(index: Any, *, query: str, kinds: Sequence[str] | None, connection: str | None, limit: int,
        explain: bool, budget_tokens: int | None, user: str, include_recaps: bool,
        today: dt.date) -> dict[str, Any]:
    index.refresh()
    depth = max(limit * 3, 40)
    ranking, engines, terms, expanded = rank_candidates(index, query, connection=connection, user=user,
                                                        include_recaps=include_recaps, depth=depth, today=today)
    if kinds:  # after ranking, from the deeper list: the order never changes
        ranking = [c for c in ranking if c.kind in set(kinds)]
    top = ranking[:limit]
    fields = index.fields([c.doc_id for c in top])
    columns = columns_of(index, [c.doc_id for c in top if c.index_kind == "table"])
    refs = [to_ref(c, fields.get(c.doc_id, {}), terms, columns.get(c.doc_id, []), engines, explain) for c in top]
    core = {"query": query, "terms": terms, "uncovered": uncovered(index, expanded, connection),
            "floor": floor_pages(index, user)}
    present = ["evidenceExcerpts", "summaries"] + (["related"] if any("reached" in r for r in refs) else [])

    def build(kept: frozenset[str]) -> dict[str, Any]:
        out = []
        for ref in refs:
            if "reached" in ref and "related" not in kept:
                continue
            ref = dict(ref)
            if "evidenceExcerpts" not in kept:
                ref.pop("snippet", None)
                ref.pop("explain", None)
            if "summaries" not in kept:
                ref.pop("summary", None)
            out.append(ref)
        return {**core, "refs": out, "count": len(out)}

    return budget.fit(build, present, budget_tokens)
