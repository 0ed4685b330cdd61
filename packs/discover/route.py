"""Tables and columns: route the question to its schema(s), rank within, fill with what joins them.

1. Every query term reaches catalog keys through its forms (``forms.py``); a table's strength for a term is
   the best (form weight x where it matched: name 1.0, column 0.7, comments less) over its words. A term
   counts by its rarity (idf over tables); a term the catalog cannot reach counts nothing.
2. Coverage of a table: its idf-weighted strengths over the total idf of the query (0..1).
3. Routing: a unit (schema, merged with schemas it shares foreign keys with) covers a term with its best
   table for it, or with its own name (``... in northwind``). Each unit's share of the best unit's coverage,
   raised to ROUTE_POWER, is a bonus of ROUTE first ranks for its tables: a question's tables are ranked
   inside the schema it belongs to before any other schema's, and near-ties stay close.
4. Structure inside the routed units: a table joining two of the best tables that are not joined directly,
   and that answer different terms, is their bridge (needed exactly when both are); it ranks just below
   the weaker of the two. Tables one foreign key away from the best ones, and the rest of a small unit,
   fill the list after the unit's matches, flagged ``reached`` rather than matched.
5. A column ranks below its table (COLUMN_SHARE of the table's score), so the tables of a question come
   first and the columns that matched follow.

Scores are in first ranks of the fusion (``rank.first_rank``), so tables mix with wiki and SL refs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from packs.discover.forms import SYNONYM, Term
from packs.discover.lexicon import WHERE_NAME, Lexicon, Posting, Table
from packs.discover.rank import Candidate, candidate_from_row, first_rank

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

COVER = 2.0  # first ranks for a table covering every term of the query by its name
ROUTE = 1.5  # first ranks for the tables of the best unit
ROUTE_POWER = 2.0  # a unit with 90% of the best evidence gets 0.81 of ROUTE, with 50% 0.25
ROUTED_SHARE = 0.75  # units this close to the best get the structure rules too
BEST_TABLES = 4  # bridges join two of these; fill starts from them
BRIDGE = 0.999  # a bridge lands just below the weaker table it joins
FILL = 0.25  # a filled table's coverage: this share of the table it joins
SMALL_UNIT = 8  # a unit this small is filled whole
FILL_FROM = 2  # the fill joins the best this many tables of the unit
COLUMN_SHARE = 0.5
NAME_BASE = 0.7  # a name match counts this much, plus the rest by the share of the name's words asked
NEIGHBOUR = 0.45  # routing: a term answered by a table one join away counts this much
UNIT_SIZE = 0.1  # routing evidence divided by 1 + this x ln(tables in the unit): big schemas match more by chance
UNIT_LEAD = 0.3  # first ranks: the best unit's tables stay together ahead of a near-tie's
ORDER_GAP = 0.05  # first ranks between consecutive tables of a unit's greedy order
POOL = 60  # the most of a unit's tables the greedy order looks at
KEEP = 150  # tables scored past the lexical step (the rest cannot reach a result list)
MAX_ROUTED = 3  # at most this many units get the structure rules
GREEDY = 4  # how many of a unit's tables are ordered by what they add to the ones before them
POPULATED = 0.02  # first ranks: a table known to hold rows beats an empty one that ties with it
UNIT_SLOTS = 8  # a unit's best this many tables keep their routing bonus (as many as SMALL_UNIT fills whole)
REACH = 3  # fill to the list's depth with tables at most this many joins from the best ones
CONTESTED = 0.95  # a runner-up unit this close to the best (its share) contests the list
CONTESTED_SLOTS = 5  # then each unit keeps its routing bonus for this many tables only
VIEW = 0.3  # first ranks a view is lowered by, below the tables it reads
VIEW_EVIDENCE = 0.5  # routing: a view restates its tables' words and a reporting view's name speaks for them
PHRASE = 0.85  # two adjacent question words written together in one column name: above a column word (0.7)


@dataclass
class Scored:
    table: Table
    strengths: list[float]
    columns: list[str | None]
    evidence: list[float] = field(default_factory=list)  # per term, as routing evidence
    coverage: float = 0.0
    route: float = 0.0
    structure: dict[str, float] = field(default_factory=dict)
    reached: str | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.coverage + self.route + sum(self.structure.values())

    def matched(self) -> frozenset[int]:
        return frozenset(i for i, s in enumerate(self.strengths) if s > 0)


# Words that say what to compute, not what it is about ("the total number of ... ordered by ..."): they
# match columns everywhere, so they count at OPERATION of their rarity.
OPERATION_WORDS = frozenset("""
total number count counts average avg sum ratio proportion percentage top highest lowest most least maximum
minimum max min descending ascending ordered sorted alphabetically list show return find give get display
unique distinct different greater less fewer larger smaller above below over under between before after
overall combined respective respectively along including included whose having associated
""".split())
OPERATION = 0.3


def idfs(terms: Sequence[Term], lexicon: Lexicon) -> list[float]:
    out = []
    for term in terms:
        counts = [lexicon.df.get(k, 0) + lexicon.unit_df.get(k, 0) for k in term.forms
                  if k in lexicon.df or k in lexicon.unit_df]  # a term with common forms says less
        weight = lexicon.idf(sum(counts)) if counts else 0.0
        out.append(weight * (OPERATION if term.word in OPERATION_WORDS else 1.0))
    return out


def score_tables(terms: Sequence[Term], weights: list[float], lexicon: Lexicon,
                 connection: str | None) -> dict[str, Scored]:
    """The KEEP best-covering tables, scored over arrays of every table (thousands of tables may match)."""
    n_tables = len(lexicon.table_ids)
    strengths = np.zeros((len(terms), n_tables), dtype=np.float32)
    evidence = np.zeros_like(strengths)
    columns = np.full(strengths.shape, -1, dtype=np.int32)
    for i, term in enumerate(terms):
        if not weights[i]:
            continue
        for form, weight in term.forms.items():
            posting = lexicon.postings.get(form)
            if posting is None:
                continue
            _keep_stronger(strengths, columns, i, posting, weight * posting.where)
            # as routing evidence a form counts squared: a synonym of a name is a hint, not a name
            np.maximum.at(evidence[i], posting.tables, weight * weight * posting.evidence)
    _phrases(terms, weights, lexicon, strengths, columns)
    named = np.zeros(n_tables, dtype=np.float32)
    for form in {form for term in terms for form in term.forms}:
        holders = lexicon.name_part_tables.get(form)
        if holders is not None:
            named[holders] += 1.0
    scale = NAME_BASE + (1.0 - NAME_BASE) * named / np.maximum(lexicon.part_counts, 1.0)  # business > businessentity
    by_name = (strengths >= WHERE_NAME * SYNONYM) & (columns < 0)
    strengths = np.where(by_name, strengths * scale, strengths)
    evidence = np.where(by_name, evidence * scale, evidence)
    total = sum(weights) or 1.0
    coverage = COVER * (np.asarray(weights, dtype=np.float32) @ strengths) / total
    if connection is not None:
        coverage[lexicon.connection_of != connection] = 0.0
    touched = np.flatnonzero(coverage > 0)
    if len(touched) > KEEP:
        touched = touched[np.argpartition(-coverage[touched], KEEP)[:KEEP]]
    scored = {}
    for number in touched.tolist():
        table_id = lexicon.table_ids[number]
        scored[table_id] = Scored(
            lexicon.tables[table_id], strengths[:, number].tolist(),
            [lexicon.column_ids[c] if c >= 0 else None for c in columns[:, number].tolist()],
            evidence[:, number].tolist(), float(coverage[number]))
    return scored


def _phrases(terms: Sequence[Term], weights: list[float], lexicon: Lexicon, strengths: np.ndarray[Any, Any],
             columns: np.ndarray[Any, Any]) -> None:
    """Two adjacent terms that are two adjacent words of one identifier ("billing country" ~
    ``BillingCountry``, "unit price" ~ ``UnitPrice``) match it more strongly than either word alone would.
    Ranking only: as routing evidence a phrase stays a column match (generic pairs such as "order number"
    or "current month" sit in many schemas), and words that say what to compute form no phrase."""
    for i, j in pairwise(range(len(terms))):
        if not (weights[i] and weights[j]) or {terms[i].word, terms[j].word} & OPERATION_WORDS:
            continue
        for a, wa in terms[i].forms.items():
            for b, wb in terms[j].forms.items():
                posting = lexicon.phrases.get((min(a, b), max(a, b)))
                if posting is None or a == b:
                    continue
                found = np.full(len(posting.tables), PHRASE * wa * wb, dtype=np.float32)
                for row in (i, j):
                    _keep_stronger(strengths, columns, row, posting, found)


def _keep_stronger(strengths: np.ndarray[Any, Any], columns: np.ndarray[Any, Any], row: int, posting: Posting,
                   found: np.ndarray[Any, Any]) -> None:
    """Where ``found`` beats term ``row``'s strength for a table of ``posting``, it and its column replace them."""
    better = found > strengths[row, posting.tables]
    if better.any():
        strengths[row, posting.tables[better]] = found[better]
        columns[row, posting.tables[better]] = posting.columns[better]


def route(terms: Sequence[Term], weights: list[float], lexicon: Lexicon, scored: dict[str, Scored]
          ) -> dict[int, float]:
    """unit -> its share of the best unit's evidence. A unit's evidence is that of its best table together
    with the tables one join away (NEIGHBOUR each): a question is answered by a few joined tables, so a
    big schema must not win by touching each word somewhere else."""
    mass: dict[int, float] = {}
    for entry in scored.values():
        row = [VIEW_EVIDENCE * value for value in entry.evidence] if entry.table.view else list(entry.evidence)
        for other in lexicon.adjacent.get(entry.table.doc_id, ()):
            neighbour = scored.get(other)
            if neighbour is not None:
                for i, value in enumerate(neighbour.evidence):
                    row[i] = max(row[i], NEIGHBOUR * value)
        names = lexicon.unit_keys.get(entry.table.unit, frozenset())
        for i, term in enumerate(terms):
            if names & term.forms.keys():
                row[i] = 1.0
        value = sum(w * s for w, s in zip(weights, row, strict=True))
        value /= 1.0 + UNIT_SIZE * math.log(len(lexicon.units.get(entry.table.unit, ())) or 1)
        mass[entry.table.unit] = max(mass.get(entry.table.unit, 0.0), value)
    top = max(mass.values(), default=0.0)
    return {unit: value / top for unit, value in mass.items()} if top > 0 else {}


def _neighbours(index: RetrievalIndex, ids: Sequence[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for direction in ("out", "in"):
        for owner, edges in index.edge_map(list(ids), direction=direction, relations=["fk"]).items():
            for _relation, other in edges:
                if other != owner:
                    out.setdefault(owner, set()).add(other)
    return out


def greedy(members: list[Scored], weights: list[float]) -> list[Scored]:
    """The unit's tables in the order they add to what the ones before them already answer (marginal
    idf-weighted strength, coverage breaking ties); their scores are set to keep that order."""
    if len(members) < 2:
        return members
    covered = [0.0] * len(weights)
    pool, order = list(members[:POOL]), list[Scored]()
    def gain(e: Scored, covered: list[float]) -> tuple[float, float]:
        return (sum(w * max(0.0, s - c) for w, s, c in zip(weights, e.strengths, covered, strict=True)), e.score)

    while pool and len(order) < GREEDY:
        pick = max(pool, key=lambda e: gain(e, covered))
        if order and gain(pick, covered)[0] <= 0:  # nothing left to add: the rest keep their coverage order
            break
        pool = [e for e in pool if e is not pick]
        order.append(pick)
        covered = [max(c, s) for c, s in zip(covered, pick.strengths, strict=True)]
    top = members[0].score
    for step, entry in enumerate(order):
        entry.structure["order"] = (top - step * ORDER_GAP) - (entry.score - entry.structure.get("order", 0.0))
    floor = top - len(order) * ORDER_GAP
    chosen = {id(e) for e in order}
    rest = [e for e in members if id(e) not in chosen]
    for entry in rest:
        if entry.score > floor:
            entry.structure["order"] = floor - entry.score
    return order + rest


def structure(index: RetrievalIndex, lexicon: Lexicon, scored: dict[str, Scored], shares: dict[int, float],
              connection: str | None, n_terms: int, weights: list[float]) -> None:
    """Bridges between the best tables of each routed unit, then the unit's fill."""
    routed = [unit for unit, share in sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))
              if share >= ROUTED_SHARE][:MAX_ROUTED]
    for unit in routed:
        members = sorted((e for e in scored.values() if e.table.unit == unit), key=lambda e: (-e.score, e.table.doc_id))
        members = greedy(members, weights)
        best = members[:BEST_TABLES]
        if not best:
            continue
        ids = [e.table.doc_id for e in best]
        links = _neighbours(index, ids)
        found: dict[str, set[str]] = {}
        for owner in ids:
            for other in links.get(owner, set()):
                found.setdefault(_canonical(lexicon, other), set()).add(owner)
        for other, owners in sorted(found.items()):
            pairs = [(a, b) for a in sorted(owners) for b in sorted(owners) if a < b
                     and b not in links.get(a, set()) and other not in (a, b)
                     and _complementary(scored[a], scored[b])]
            if not pairs:
                continue
            a, b = max(pairs, key=lambda p: (min(scored[p[0]].score, scored[p[1]].score), p))
            entry = _entry(lexicon, scored, other, n_terms, connection, shares)
            if entry is None or "order" in entry.structure:  # placed by the greedy order already
                continue
            floor = min(scored[a].score, scored[b].score) * BRIDGE
            if entry.score < floor:
                entry.structure["bridge"] = floor - entry.score
                entry.flags.append(f"bridge:{_public(a)},{_public(b)}")
                entry.reached = entry.reached or ("bridge" if not any(entry.strengths) else None)
        anchor = best[0]
        fill = {other for owner in ids[:FILL_FROM] for other in links.get(owner, set())}
        unit_tables = lexicon.units.get(unit, [])
        small = [t for t in unit_tables if t not in lexicon.folded] if len(unit_tables) <= SMALL_UNIT else []
        for rank_, other in enumerate([*sorted(fill), *sorted(set(small) - fill)]):
            entry = _entry(lexicon, scored, _canonical(lexicon, other), n_terms, connection, shares)
            if entry is None or entry.table.unit != unit:
                continue
            share = FILL if rank_ < len(fill) else FILL / 2
            lift = anchor.coverage * share - entry.coverage
            if lift > 0 and "bridge" not in entry.structure and "order" not in entry.structure:
                entry.structure["fill"] = lift
                if not any(entry.strengths):
                    entry.reached = "fill"


def fill_to_depth(index: RetrievalIndex, lexicon: Lexicon, scored: dict[str, Scored], lead: int, n_terms: int,
                  connection: str | None, shares: dict[int, float], depth: int) -> None:
    """A question few tables match still gets ``depth`` of them: the lead unit's tables nearest (by foreign
    keys, up to REACH joins) to its best ones, nearest first and the better connected first within a
    distance, below every table that matched and flagged ``reached`` (issue #17: too few answers)."""
    missing = depth - len(scored)
    if missing <= 0:
        return
    members = sorted((e for e in scored.values() if e.table.unit == lead), key=lambda e: (-e.score, e.table.doc_id))
    floor = min((e.score for e in scored.values()), default=0.0)
    frontier = [e.table.doc_id for e in members[:BEST_TABLES]]
    seen = set(scored)
    for distance in range(1, REACH + 1):
        links = _neighbours(index, frontier)
        reached: dict[str, int] = {}
        for owner in frontier:
            for other in links.get(owner, set()):
                other = _canonical(lexicon, other)
                if other not in seen:
                    reached[other] = reached.get(other, 0) + 1
        ranked = sorted(reached, key=lambda t: (-reached[t], t))
        for position, table_id in enumerate(ranked):
            if missing <= 0:
                return
            entry = _entry(lexicon, scored, table_id, n_terms, connection, shares)
            if entry is None or entry.table.unit != lead:
                continue
            entry.structure["fill"] = floor - entry.score - (distance + position / (len(ranked) + 1)) * ORDER_GAP
            entry.reached = "fill"
            missing -= 1
        seen.update(ranked)
        frontier = ranked
        if not frontier:
            return


def _share_slots(scored: dict[str, Scored], shares: dict[int, float]) -> None:
    """Past its UNIT_SLOTS best tables a unit's tables lose their routing bonus: the list's remaining slots
    go to the best tables of the units routed almost as well, so a question routed to the wrong one of two
    schemas that share vocabulary (customers, orders, sales) still finds its tables lower down. When the
    runner-up is as good as tied with the best (CONTESTED), each keeps CONTESTED_SLOTS: the runner-up's
    best few tables then come before the leader's sixth to eighth."""
    by_unit: dict[int, list[Scored]] = {}
    for entry in sorted(scored.values(), key=lambda e: (-e.score, e.table.doc_id)):
        by_unit.setdefault(entry.table.unit, []).append(entry)
    ranked = sorted(shares.values(), reverse=True)
    slots = CONTESTED_SLOTS if len(ranked) > 1 and ranked[1] >= CONTESTED else UNIT_SLOTS
    for members in by_unit.values():
        for entry in members[slots:]:
            entry.structure["slots"] = -(entry.route + entry.structure.get("lead", 0.0))


def _complementary(a: Scored, b: Scored) -> bool:
    """Two tables answer different parts of the question (neither's matched terms contain the other's)."""
    ma, mb = a.matched(), b.matched()
    return bool(ma - mb) and bool(mb - ma)


def _best_columns(bases: dict[str, float], found: dict[str, Candidate], depth: int) -> list[str]:
    """The ``depth`` columns that rank first, in the order the final ranking gives them (nothing later moves a
    column's score): only they can reach a result list, so only their rows are read (a question's best
    tables match a hundred columns or more)."""
    def fused(column_id: str) -> float:
        held = found.get(column_id)
        return bases[column_id] + (sum(held.bonuses.values()) if held is not None else 0.0)

    return sorted(bases, key=lambda column_id: (-round(fused(column_id), 9), column_id))[:depth]


def _canonical(lexicon: Lexicon, table_id: str) -> str:
    return lexicon.folded.get(table_id, table_id)


def _entry(lexicon: Lexicon, scored: dict[str, Scored], table_id: str, n_terms: int,
           connection: str | None, shares: dict[int, float]) -> Scored | None:
    entry = scored.get(table_id)
    if entry is None:
        table = lexicon.tables.get(table_id)
        if table is None or (connection is not None and table.connection != connection):
            return None
        entry = scored[table_id] = Scored(table, [0.0] * n_terms, [None] * n_terms, [0.0] * n_terms)
        entry.route = ROUTE * shares.get(table.unit, 0.0) ** ROUTE_POWER
    return entry


def _views_after_tables(best: list[Scored]) -> None:
    """A view restates the words of the tables it reads (``film_list`` holds film, category and actor columns),
    so it covers a question as well as they do together; it is lowered by VIEW so the tables an analyst
    joins come first and the view follows as a shortcut. The list is re-sorted in place."""
    for entry in best:
        if entry.table.view:
            entry.structure["view"] = -VIEW
            entry.flags.append("view")
    best.sort(key=lambda e: (-e.score, e.table.doc_id))


def _public(doc_id: str) -> str:
    return doc_id.split(":", 2)[-1]


def apply(index: RetrievalIndex, lexicon: Lexicon, found: dict[str, Candidate], terms: Sequence[Term], *,
          connection: str | None, depth: int) -> None:
    """Add the best ``depth`` tables and their matched columns to ``found``, scored in first ranks."""
    weights = idfs(terms, lexicon)
    scored = score_tables(terms, weights, lexicon, connection)
    if not scored:
        return
    shares = route(terms, weights, lexicon, scored)
    for entry in scored.values():
        entry.route = ROUTE * shares.get(entry.table.unit, 0.0) ** ROUTE_POWER
    lead = max(shares, key=lambda unit: (shares[unit], -unit)) if shares else None
    for entry in scored.values():
        if entry.table.unit == lead:
            entry.structure["lead"] = UNIT_LEAD
    structure(index, lexicon, scored, shares, connection, len(terms), weights)
    for entry in scored.values():
        if entry.table.rows:
            entry.structure["populated"] = POPULATED
    _share_slots(scored, shares)
    if lead is not None:
        fill_to_depth(index, lexicon, scored, lead, len(terms), connection, shares, depth)
    best = sorted(scored.values(), key=lambda e: (-e.score, e.table.doc_id))[:depth]
    columns: dict[str, tuple[Scored, float]] = {}
    for entry in best:
        for i, column in enumerate(entry.columns):
            if column is not None and entry.strengths[i] > 0:
                previous = columns.get(column)
                strength = weights[i] * entry.strengths[i]
                if previous is None or previous[1] < strength:
                    columns[column] = (entry, strength)
    rows = {row["id"]: row for row in index.rows([e.table.doc_id for e in best])}
    _views_after_tables(best)
    unit_rank = first_rank()
    for position, entry in enumerate(best, start=1):
        row = rows.get(entry.table.doc_id)
        if row is None:
            continue
        candidate = found.setdefault(row["id"], candidate_from_row(row))
        candidate.lanes["catalog"] = {"rank": position, "raw": round(entry.score, 4)}
        candidate.base = entry.coverage * unit_rank
        candidate.bonuses["route"] = round(entry.route * unit_rank, 6)
        for name, value in entry.structure.items():
            candidate.bonuses[name] = round(value * unit_rank, 6)
        candidate.flags.extend(entry.flags)
        if entry.table.copies:
            candidate.flags.append(f"{len(entry.table.copies)} partitions or copies folded in")
        candidate.reached = candidate.reached or entry.reached
    bases = {column_id: found[entry.table.doc_id].fused * COLUMN_SHARE + strength * 1e-4 * unit_rank
             for column_id, (entry, strength) in columns.items() if entry.table.doc_id in found}
    picked = _best_columns(bases, found, depth)
    rows = {row["id"]: row for row in index.rows(picked)}
    for column_id in picked:
        row = rows.get(column_id)
        if row is None:
            continue
        entry, strength = columns[column_id]
        candidate = found.setdefault(column_id, candidate_from_row(row))
        candidate.lanes["catalog"] = {"rank": 0, "raw": round(strength, 4)}
        candidate.base = bases[column_id]
