"""One ranking over every lane of the shared index: reciprocal rank fusion plus structure.

The wiki and semantic-layer lanes are one index search each; each engine inside one (fts, vector)
contributes ``1 / (K + rank)``. Tables and columns are scored from the catalog lexicon (``route.py``) in
the same unit, a first rank. Structure then adds bonuses, each recorded: an SL source joined to two of
the best is lifted as their bridge, usage tiers are priors in first ranks, curated SL descriptions a mild
one, and documents with many incoming links are damped so one hub does not flood the list.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packs.discover.refs import discover_kind
from packs.discover.text import split_words, stem

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

K = 60
LANES: dict[str, tuple[str, ...]] = {
    "wiki": ("wiki",),
    "semantic_layer": ("sl_source", "sl_measure", "sl_dimension"),
}  # tables and columns are ranked from the catalog lexicon (route.py)
# Bonuses are fractions of a first-rank contribution; their sum is capped so scores stay in 0..1.
BONUS_CAP = 4.0
BRIDGE = 0.999  # a bridge lands just below the weaker table it joins
BRIDGE_TOP = 4
NAMED = 0.5
TIER_PRIOR = {"high": 0.2, "mid": 0.1, "low": 0.0, "unused": -0.1}  # first ranks: history reorders near ties
CURATED_PRIOR = 0.05
HUB_RELATIONS = ("refs", "fk", "sl_refs", "sl_table", "related_to", "supports")
HUB_FREE_DEGREE = 3  # this many incoming links cost nothing


@dataclass
class Candidate:
    doc_id: str
    index_kind: str
    kind: str
    title: str
    metadata: dict[str, Any]
    path: str
    connection: str | None
    lanes: dict[str, dict[str, float]] = field(default_factory=dict)
    base: float = 0.0
    bonuses: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    reached: str | None = None  # why a document that did not match is here (columns, bridge, related_to, ...)

    @property
    def fused(self) -> float:
        return self.base + sum(self.bonuses.values())

    def add_bonus(self, name: str, value: float) -> None:
        room = BONUS_CAP * first_rank() - sum(v for v in self.bonuses.values() if v > 0)
        value = min(value, max(room, 0.0)) if value > 0 else value
        if value:
            self.bonuses[name] = round(self.bonuses.get(name, 0.0) + value, 6)


def first_rank() -> float:
    return 1.0 / (K + 1)


def candidate_from_row(row: Any) -> Candidate:
    """A candidate from an index hit or a ``get`` row (dict)."""
    if isinstance(row, dict):
        meta = row["metadata"]
        return Candidate(row["id"], row["kind"], discover_kind(row["kind"], meta), row["title"], meta, row["path"],
                         row["connection"])
    return Candidate(row.id, row.kind, discover_kind(row.kind, row.metadata), row.title, row.metadata, row.path,
                     row.connection)


def gather(index: RetrievalIndex, text: str, *, connection: str | None, depth: int) -> tuple[dict[str, Candidate], int]:
    """Every lane's hits as candidates with their RRF base; and how many engines returned anything."""
    found: dict[str, Candidate] = {}
    engines: set[str] = set()
    for lane, kinds in LANES.items():
        hits = index.search(text, kinds=list(kinds), connection=None if lane == "wiki" else connection,
                            limit=depth, snippets=False, refresh=False)
        for hit in hits:
            candidate = found.setdefault(hit.id, candidate_from_row(hit))
            for engine, evidence in hit.lanes.items():
                engines.add(engine)
                candidate.lanes[f"{lane}.{engine}"] = evidence
                candidate.base += 1.0 / (K + int(evidence["rank"]))
    return found, max(len(engines), 1)


def table_of(column_doc_id: str) -> str:
    """``column:c:db.t.col`` -> ``table:c:db.t``."""
    _, connection, qualified = column_doc_id.split(":", 2)
    return f"table:{connection}:{qualified.rsplit('.', 1)[0]}"


def lift_bridges(index: RetrievalIndex, found: dict[str, Candidate], *, kind: str, relations: Sequence[str],
                 top: int | None = None) -> None:
    """A document joining two of the ``top`` best of ``kind`` that are not joined directly is their bridge:
    it is needed exactly when both are, so it is lifted to just below the weaker of the two."""
    best = sorted((c for c in found.values() if c.index_kind == kind),
                  key=lambda c: (-c.fused, c.doc_id))[:top or BRIDGE_TOP]
    if len(best) < 2:
        return
    ids = [c.doc_id for c in best]
    links: dict[str, set[str]] = {}
    direct: set[frozenset[str]] = set()
    for direction in ("out", "in"):
        for owner, edges in index.edge_map(ids, direction=direction, relations=list(relations)).items():
            for _relation, other in edges:
                if other == owner:
                    continue
                links.setdefault(other, set()).add(owner)
                if other in ids:
                    direct.add(frozenset((owner, other)))
    score = {c.doc_id: c.fused for c in best}
    bridges: dict[str, tuple[str, str]] = {}
    for other, owners in sorted(links.items()):
        pairs = [(a, b) for a in sorted(owners) for b in sorted(owners) if a < b and frozenset((a, b)) not in direct
                 and other not in (a, b)]
        if pairs:
            bridges[other] = max(pairs, key=lambda pair: (min(score[pair[0]], score[pair[1]]), pair))
    missing = [other for other in bridges if other not in found]
    for row in index.rows(missing) if missing else []:
        if row["kind"] == kind:
            found[row["id"]] = candidate_from_row(row)
            found[row["id"]].reached = "bridge"
    for other, (a, b) in sorted(bridges.items()):
        target = found.get(other)
        if target is None or target.index_kind != kind:
            continue
        floor = min(score[a], score[b]) * BRIDGE
        if target.fused < floor:
            target.bonuses["bridge"] = round(floor - target.fused, 9)
            target.flags.append(f"bridge:{a},{b}")


def lift_named(found: dict[str, Candidate], terms: Sequence[str]) -> None:
    """An SL source or measure whose own name the query spells out ("airlines" -> ``airline``, "monthly
    revenue" -> the measure ``revenue``) is lifted by the share of its name's words the query holds: BM25
    gives the name field weight, but one rank step in RRF is worth almost nothing, so the lane alone would
    lose that signal. Dimensions are left out: ``name``, ``id`` and ``date`` name dimensions everywhere."""
    asked = {stem(term) for term in terms}
    for candidate in found.values():
        if candidate.index_kind not in ("sl_source", "sl_measure"):
            continue
        name = (candidate.metadata.get("tableRef") or {}).get("name") or candidate.metadata.get("name") or ""
        parts = {stem(word) for word in split_words(str(name))}
        if parts and parts & asked:
            candidate.add_bonus("named", NAMED * first_rank() * len(parts & asked) / len(parts))


def apply_priors(index: RetrievalIndex, found: dict[str, Candidate]) -> None:
    damped = sorted(c.doc_id for c in found.values() if c.base > 0 and c.index_kind not in ("table", "column"))
    degrees = index.degrees(damped, relations=list(HUB_RELATIONS))  # only these can be damped as hubs
    for candidate in found.values():
        meta = candidate.metadata
        reference = max(candidate.base, first_rank() * 0.5)
        tier = str(meta.get("frequencyTier") or "")
        if TIER_PRIOR.get(tier):
            candidate.bonuses["usage"] = round(TIER_PRIOR[tier] * first_rank(), 6)
        if candidate.index_kind in ("sl_source", "sl_measure", "sl_dimension") and meta.get("description"):
            candidate.add_bonus("curated", CURATED_PRIOR * reference)
        degree = degrees.get(candidate.doc_id, 0)
        if degree > HUB_FREE_DEGREE and candidate.base > 0 and candidate.index_kind not in ("table", "column"):
            damp = candidate.base * (1.0 - 1.0 / (1.0 + 0.1 * math.log1p(degree - HUB_FREE_DEGREE)))
            candidate.add_bonus("hub", -damp)


def ordered(candidates: Iterable[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (-round(c.fused, 9), c.doc_id))


def normalised(candidate: Candidate, engines: int) -> float:
    best = engines * first_rank() + BONUS_CAP * first_rank()
    return round(max(0.0, min(1.0, candidate.fused / best)), 4)
