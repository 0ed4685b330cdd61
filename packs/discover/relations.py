"""Wiki relations at query time, on the ranked candidates (one hop, never transitive).

* a page another page ``supersedes`` is hidden unless the query names it;
* a ``contradicts`` partner is pulled in and both are flagged;
* ``supports`` bumps a page that is already there (a weight, not a magnet);
* ``related_to`` pulls its targets with a flag, in declared order;
* one source pulls at most three pages, every relation together (contradicting ones first); the rest are
  counted in its "N more <relation> not expanded" flag;
* a matching ``kind: warning`` page ranks first among the wiki refs;
* recaps only with ``include_recaps``: within 7 days a larger bonus than within 30; older only when named.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from packs.discover.rank import Candidate, candidate_from_row, first_rank
from packs.discover.text import split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

GLOBAL = "global"
PULLS_MAX = 3  # pages one source may pull in, every relation together
SUPPORTS_BONUS = 0.3
PULL_SHARE = 0.9  # a pulled page ranks just below the page that pulled it
RECAP_BONUS = {7: 0.5, 30: 0.25}
RECAP_MAX_AGE = 30


def wiki_id(key: str) -> str:
    return f"wiki:{key}"


def named(query: str, meta: dict[str, Any]) -> bool:
    """Whether the query names a page: its key, or every word of its key or title, appears in it."""
    text = query.lower()
    key = str(meta.get("key", ""))
    if key and key in text:
        return True
    asked = set(split_words(query))
    for label in (key.rsplit("/", 1)[-1], str(meta.get("title") or "")):
        words = set(split_words(label))
        if words and words <= asked:
            return True
    return False


def visible(meta: dict[str, Any], user: str, shadowed: set[str]) -> bool:
    scope = meta.get("scope")
    if scope not in (GLOBAL, user) or meta.get("archived"):
        return False
    return not (scope == GLOBAL and f"wiki:@{user}/{meta.get('key')}" in shadowed)


def recap_bonus(meta: dict[str, Any], today: dt.date, query: str) -> float | None:
    """The recency bonus of a recap (a share of a first rank), or None when it stays hidden."""
    try:
        age = (today - dt.date.fromisoformat(str(meta.get("date")))).days
    except ValueError:
        return None
    for days, bonus in sorted(RECAP_BONUS.items()):
        if age <= days:
            return bonus
    return 0.0 if named(query, meta) else None


def apply(index: RetrievalIndex, found: dict[str, Candidate], *, query: str, user: str, include_recaps: bool,
          today: dt.date) -> None:
    wiki = {doc_id: c for doc_id, c in found.items() if c.index_kind == "wiki"}
    keys = [str(c.metadata.get("key")) for c in wiki.values()]
    shadowed = index.existing([f"wiki:@{user}/{key}" for key in keys])
    superseding = index.incoming([wiki_id(key) for key in keys], "supersedes")
    for doc_id, candidate in wiki.items():
        meta = candidate.metadata
        hide = not visible(meta, user, shadowed)
        if superseding.get(wiki_id(str(meta.get("key")))) and not named(query, meta):
            hide = True
        if meta.get("page_kind") == "recap":
            bonus = recap_bonus(meta, today, query) if include_recaps else None
            if bonus is None:
                hide = True
            elif bonus:
                candidate.add_bonus("recency", bonus * first_rank())
        if hide:
            del found[doc_id]
    matched = sorted((c for c in found.values() if c.index_kind == "wiki"), key=lambda c: (-c.fused, c.doc_id))
    _relations(index, found, matched, user, shadowed)
    _warnings_first(found)


def _pull(index: RetrievalIndex, found: dict[str, Candidate], target_id: str, source: Candidate, reason: str,
          user: str, shadowed: set[str]) -> Candidate | None:
    if target_id in found:
        return found[target_id]
    rows = index.rows([target_id])
    if not rows or not visible(rows[0]["metadata"], user, shadowed):
        return None
    pulled = candidate_from_row(rows[0])
    if pulled.metadata.get("page_kind") == "recap":
        return None
    pulled.reached = reason
    pulled.base = source.fused * PULL_SHARE
    found[target_id] = pulled
    return pulled


def _relations(index: RetrievalIndex, found: dict[str, Candidate], matched: list[Candidate], user: str,
               shadowed: set[str]) -> None:
    """Each source pulls at most PULLS_MAX pages it did not find (contradicting ones first, then related_to in
    declared order); the rest are counted in an "N more <relation> not expanded" flag."""
    ids = [c.doc_id for c in matched]
    incoming_contra = index.incoming(ids, "contradicts")
    for source in matched:
        relations = source.metadata.get("relations") or {}
        key = str(source.metadata.get("key"))
        pulls, skipped = 0, {"contradicts": 0, "related_to": 0}
        partners = [wiki_id(k) for k in relations.get("contradicts", [])] + incoming_contra.get(source.doc_id, [])
        for partner_id in dict.fromkeys(partners):
            if partner_id not in found and pulls >= PULLS_MAX:
                skipped["contradicts"] += 1
                continue
            present = partner_id in found
            partner = _pull(index, found, partner_id, source, f"contradicts:{key}", user, shadowed)
            if partner is None:
                continue
            pulls += not present
            other = str(partner.metadata.get("key"))
            for page, flag in ((source, f"contradicts:{other}"), (partner, f"contradicts:{key}")):
                if flag not in page.flags:
                    page.flags.append(flag)
        for target in relations.get("supports", []):
            supported = found.get(wiki_id(target))
            if supported is not None and supported is not source:
                supported.add_bonus("supports", SUPPORTS_BONUS * first_rank())
                supported.flags.append(f"supported_by:{key}")
        for target in relations.get("related_to", []):
            if wiki_id(target) in found:
                continue
            if pulls >= PULLS_MAX:
                skipped["related_to"] += 1
                continue
            pulled = _pull(index, found, wiki_id(target), source, f"related_to:{key}", user, shadowed)
            if pulled is not None:
                pulls += 1
                pulled.flags.append(f"related_to:{key}")
        source.flags.extend(f"{count} more {relation} not expanded" for relation, count in skipped.items() if count)


def _warnings_first(found: dict[str, Candidate]) -> None:
    """Matching warning pages go to the top of the wiki refs (their tier), in their own order."""
    pages = [c for c in found.values() if c.index_kind == "wiki"]
    warnings = [c for c in pages if c.metadata.get("page_kind") == "warning" and c.reached is None]
    others = [c for c in pages if c not in warnings]
    if not warnings or not others:
        for c in warnings:
            c.flags.append("warning")
        return
    ceiling = max(c.fused for c in others)
    for c in warnings:
        c.flags.append("warning")
        if c.fused <= ceiling:
            c.bonuses["warning"] = round(ceiling - c.fused + 1e-6 + c.base * 1e-3, 9)
