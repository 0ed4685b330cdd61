"""Templates by table, in stable bands: the staged content the table and pattern digests read.

Every table a parsed template touches gets the template (each side of a join counts). Numbers never
reach the staged files: executions, users, runtimes, error rates and column/join frequencies are
reported as bands, so a table whose usage moved a little stages the same bytes and costs no work
(the content hash in the manifest decides, see ``stage.work_units``).

Frequencies are execution-weighted shares of the table's executions (a template with zero recorded
executions weighs one): ``high`` >= 50 %, ``mid`` >= 10 %, ``low`` below. Lists are sorted by band, then
name; top templates by executions band, then distinct-users band, then template id -- a rank inside a
band would move with every small fluctuation.

Two stats place a table in its own workload rather than on an absolute scale:

* ``workloadTier``: the table's executions against the connection's busiest table, in the frequency
  bands (``high``: at least half as often as the busiest), so the most-used tables of a small warehouse
  stand out where ``executionsBucket`` says ``10-100`` for all of them;
* ``recencyBucket``: how long before the history's newest execution the table was last queried
  (``current`` under 7 days, ``recent`` under 30, ``older`` beyond; ``unknown`` when the source has no
  times, as pg_stat_statements). Measured against the history's own end, not the clock, so a log read
  twice stages the same bytes.

Pattern input (``patterns-input.json``): every template in compact form (id, canonical SQL, the tables
it touches, its bands, the dialect), sorted by id -- the audit log of the run and what a patterns
provider reads -- plus the candidate table sets: templates grouped by the exact set of tables they touch
(two tables or more) whose templates were run by at least ``min_pattern_users`` distinct users (a
lower bound: the largest distinct-user count of one template, or the union of their top users).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from packs.historic_sql.filters import parse_time
from packs.historic_sql.models import AggregatedTemplate
from packs.historic_sql.parsed import CLAUSES, ColumnUse, JoinEdge, ParsedTemplate, paused_gc

Bands = tuple[tuple[float, str], ...]  # (exclusive upper bound, label); the last band is open
EXECUTION_BANDS: Bands = (
    (10, "<10"), (100, "10-100"), (1_000, "100-1k"), (5_000, "1k-5k"), (50_000, "5k-50k"), (float("inf"), ">50k"))
USER_BANDS: Bands = ((1, "0"), (2, "1"), (6, "2-5"), (21, "6-20"), (float("inf"), ">20"))
RUNTIME_BANDS: Bands = (
    (100, "<100ms"), (1_000, "100ms-1s"), (10_000, "1s-10s"), (60_000, "10s-1m"), (float("inf"), ">1m"))
ERROR_BANDS: Bands = ((1e-12, "none"), (0.01, "<1%"), (0.1, "1-10%"), (float("inf"), ">10%"))
FREQUENCY_BANDS: Bands = ((0.1, "low"), (0.5, "mid"), (float("inf"), "high"))
RECENCY_BANDS: Bands = ((7, "current"), (30, "recent"), (float("inf"), "older"))  # days before the newest
FREQUENCY_RANK = {"high": 0, "mid": 1, "low": 2}
TOP_TEMPLATES = 5
TOP_USERS = 5
_UPPERS = {bands: [upper for upper, _ in bands[:-1]] for bands in
           (EXECUTION_BANDS, USER_BANDS, RUNTIME_BANDS, ERROR_BANDS, FREQUENCY_BANDS, RECENCY_BANDS)}


def _index(value: float, bands: Bands) -> int:
    return bisect.bisect_right(_UPPERS[bands], value)


def band(value: float | None, bands: Bands) -> str:
    return "unknown" if value is None else bands[_index(value, bands)][1]


@dataclass(frozen=True)
class Bucketed:
    tables: dict[str, dict[str, Any]]  # table key -> JSON-ready staged content
    patterns: dict[str, Any]  # patterns-input.json: every template, and the candidate table sets
    totals: dict[str, dict[str, Any]] = field(default_factory=dict)  # exact numbers: manifest only, never hashed
    set_totals: dict[str, dict[str, int]] = field(default_factory=dict)  # per candidate set ("a,b"): the same

    @property
    def table_sets(self) -> list[dict[str, Any]]:
        sets: list[dict[str, Any]] = self.patterns["tableSets"]
        return sets


class _Template:
    """One template's bands and sort order, computed once."""

    __slots__ = ("bands", "order", "template")

    def __init__(self, template: AggregatedTemplate) -> None:
        executions = _index(template.stats.executions, EXECUTION_BANDS)
        users = _index(template.stats.distinctUsers, USER_BANDS)
        self.template = template
        self.order = (-executions, -users, template.templateId)  # highest bands first, then id
        self.bands = {"executionsBucket": EXECUTION_BANDS[executions][1],
                      "distinctUsersBucket": USER_BANDS[users][1]}


@dataclass
class _Totals:
    """Running totals over templates: of one set of co-touched tables, then of one table."""

    total: int = 0  # execution weight
    executions: int = 0
    last_seen: str | None = None  # the newest lastSeen (ISO 8601 UTC text, compared as text)
    max_users: int = 0
    errors: float = 0.0
    users: set[str] = field(default_factory=set)
    runtimes: list[int] = field(default_factory=lambda: [0] * len(RUNTIME_BANDS))  # execution weight per band
    members: list[_Template] = field(default_factory=list)
    top: list[_Template] = field(default_factory=list)  # the best ``top_templates`` members, best first
    groups: list[list[_Template]] = field(default_factory=list)  # a table's members, by table set
    tops: list[list[_Template]] = field(default_factory=list)  # and the best of each set
    clauses: dict[tuple[str, str], int] = field(default_factory=dict)
    joins: dict[tuple[str, tuple[tuple[str, str], ...]], int] = field(default_factory=dict)

    def add(self, other: _Totals) -> None:
        self.total += other.total
        self.executions += other.executions
        self.max_users = max(self.max_users, other.max_users)
        if other.last_seen is not None and (self.last_seen is None or other.last_seen > self.last_seen):
            self.last_seen = other.last_seen
        self.errors += other.errors
        self.users |= other.users
        self.runtimes = [mine + theirs for mine, theirs in zip(self.runtimes, other.runtimes, strict=True)]
        self.groups.append(other.members)
        self.tops.append(other.top)


def bucketize(templates: Sequence[AggregatedTemplate], parsed: Mapping[str, ParsedTemplate], *,
              top_templates: int = TOP_TEMPLATES, min_pattern_users: int = 2) -> Bucketed:
    """Per-table content from the templates that parsed and touch a known table; the pattern input."""
    with paused_gc():
        # totals are kept per exact table set (a few hundred) and spread over the tables once at the end
        sets: dict[tuple[str, ...], _Totals] = defaultdict(_Totals)
        # column uses by template weight (a handful of weights) and join sets (a few hundred distinct ones):
        # counted in C and multiplied out once, instead of a dict update per use of every template
        uses_by_weight: dict[int, list[ColumnUse]] = defaultdict(list)
        join_sets: dict[tuple[JoinEdge, ...], int] = defaultdict(int)
        for template in templates:
            result = parsed.get(template.templateId)
            if result is None or result.error is not None or not result.tables:
                continue
            stats, prepared, acc = template.stats, _Template(template), sets[result.tables]
            weight = max(stats.executions, 1)
            acc.total += weight
            acc.executions += stats.executions
            acc.max_users = max(acc.max_users, stats.distinctUsers)
            if stats.lastSeen is not None and (acc.last_seen is None or stats.lastSeen > acc.last_seen):
                acc.last_seen = stats.lastSeen
            acc.errors += stats.errorRate * weight
            acc.users.update(template.topUsers)
            if stats.p95RuntimeMs is not None:
                acc.runtimes[_index(stats.p95RuntimeMs, RUNTIME_BANDS)] += weight
            acc.members.append(prepared)
            uses_by_weight[weight] += result.columns  # unique per template
            if result.joins:
                join_sets[result.joins] += weight
        clause_weights: Counter[ColumnUse] = Counter()
        for weight, uses in uses_by_weight.items():
            for use, count in Counter(uses).items():
                clause_weights[use] += count * weight
        join_weights: dict[tuple[str, str, tuple[tuple[str, str], ...]], int] = defaultdict(int)
        for edges, weight in join_sets.items():
            for joined in _joins(edges):
                join_weights[joined] += weight
        for acc in sets.values():  # each table takes the best of its sets' best
            acc.top = heapq.nsmallest(top_templates, acc.members, key=_order)
        tables: dict[str, _Totals] = defaultdict(_Totals)
        for names, acc in sets.items():
            for name in names:
                tables[name].add(acc)
        for (table, clause, column), weight in clause_weights.items():
            tables[table].clauses[(clause, column)] = weight
        for (table, other, pairs), weight in join_weights.items():
            tables[table].joins[(other, pairs)] = weight
        busiest = max((acc.executions for acc in tables.values()), default=0)
        newest = _moment(max((acc.last_seen for acc in tables.values() if acc.last_seen), default=None))
        content = {name: _content(name, acc, top_templates, busiest, newest) for name, acc in sorted(tables.items())}
        totals = {name: {"executions": acc.executions, "templates": sum(len(group) for group in acc.groups),
                         "distinctUsers": _users(acc), "lastSeen": acc.last_seen}
                  for name, acc in sorted(tables.items())}
        candidates = _table_sets(sets, min_pattern_users)
        doc = {"templates": _compact(templates, parsed), "tableSets": [entry for _, entry in candidates]}
        set_totals = {",".join(names): {"executions": sets[names].executions, "distinctUsers": _users(sets[names]),
                                        "templates": len(sets[names].members)} for names, _ in candidates}
        return Bucketed(content, doc, totals, set_totals)


def _users(acc: _Totals) -> int:
    """Distinct users, a lower bound: the most of one template, or the union of the templates' top users."""
    return max(acc.max_users, len(acc.users))


def _moment(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def workload_tier(executions: int, busiest: int) -> str:
    """The table's executions against the busiest table's, in the frequency bands."""
    return band(executions / busiest if busiest else 0.0, FREQUENCY_BANDS)


def recency(last_seen: str | None, newest: datetime | None) -> str:
    """Days from the table's last execution to the history's newest, in RECENCY_BANDS; unknown without times."""
    seen = _moment(last_seen)
    if seen is None or newest is None:
        return "unknown"
    return band((newest - seen).total_seconds() / 86400, RECENCY_BANDS)


def _order(member: _Template) -> tuple[int, int, str]:
    return member.order


def _joins(edges: tuple[JoinEdge, ...]) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """(table, other table, sorted (table column, other column) pairs) of one template's join edges, both
    directions."""
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for left_table, left_column, right_table, right_column in edges:  # unique
        pairs[(left_table, right_table)].append((left_column, right_column))
        pairs[(right_table, left_table)].append((right_column, left_column))
    return [(table, other, tuple(sorted(found)) if len(found) > 1 else (found[0],))
            for (table, other), found in pairs.items()]


def _p95_band(weights: list[int]) -> str:
    """The band of the execution-weighted 95th percentile of the templates' p95 runtimes, from the weight
    in each band: the percentile is the first value whose cumulative weight reaches 95 %, and every value
    of a lower band sorts before it, so its band is the first whose cumulative weight does."""
    total = sum(weights)
    if not total:
        return "unknown"
    threshold, seen = 0.95 * total, 0
    for (_, label), weight in zip(RUNTIME_BANDS, weights, strict=True):
        seen += weight
        if seen >= threshold:
            return label
    return RUNTIME_BANDS[-1][1]


def _frequency(weight: int, total: int) -> str:
    return band(weight / total if total else 0.0, FREQUENCY_BANDS)


def _content(name: str, acc: _Totals, top_templates: int, busiest: int, newest: datetime | None) -> dict[str, Any]:
    total = acc.total
    columns: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (clause, column), weight in acc.clauses.items():
        columns[clause].append((column, _frequency(weight, total)))
    joins = sorted(((_frequency(weight, total), other, pairs) for (other, pairs), weight in acc.joins.items()),
                   key=lambda j: (FREQUENCY_RANK[j[0]], j[1], j[2]))
    top = heapq.nsmallest(top_templates, itertools.chain.from_iterable(acc.tops), key=_order)
    return {
        "table": name,
        "stats": {"executionsBucket": band(acc.executions, EXECUTION_BANDS),
                  "distinctUsersBucket": band(_users(acc), USER_BANDS),
                  "p95RuntimeBucket": _p95_band(acc.runtimes),
                  "errorRateBucket": band(acc.errors / total if total else 0.0, ERROR_BANDS),
                  "recencyBucket": recency(acc.last_seen, newest),
                  "workloadTier": workload_tier(acc.executions, busiest)},
        "columnsByClause": {clause: [list(entry) for entry in sorted(columns[clause],
                                                                     key=lambda e: (FREQUENCY_RANK[e[1]], e[0]))]
                            for clause in CLAUSES if clause in columns},
        "observedJoins": [{"withTable": other, "on": [list(pair) for pair in pairs], "freq": freq}
                          for freq, other, pairs in joins],
        "topTemplates": [{"id": m.template.templateId, "canonicalSql": m.template.canonicalSql, **m.bands,
                          "topUsers": sorted(m.template.topUsers[:TOP_USERS])} for m in top],
    }


def _table_sets(sets: dict[tuple[str, ...], _Totals], min_users: int) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Candidate patterns: sets of two tables or more run by ``min_users`` people or more, most executed first."""
    out: list[tuple[int, tuple[str, ...], dict[str, Any]]] = []
    for tables, acc in sets.items():
        users = _users(acc)
        if len(tables) < 2 or users < min_users:
            continue
        executions = _index(acc.executions, EXECUTION_BANDS)
        entries = [{"id": m.template.templateId, **m.bands} for m in sorted(acc.members, key=_order)]
        out.append((-executions, tables, {"tables": list(tables), "executionsBucket": EXECUTION_BANDS[executions][1],
                                          "distinctUsersBucket": band(users, USER_BANDS), "templates": entries}))
    out.sort(key=lambda item: item[:2])
    return [(tables, entry) for _, tables, entry in out]


def _compact(templates: Sequence[AggregatedTemplate], parsed: Mapping[str, ParsedTemplate]) -> list[dict[str, Any]]:
    """Every template the reader kept, in the seed's compact form, by id (parse failures touch no table)."""
    out = []
    for template in sorted(templates, key=lambda t: t.templateId):
        result = parsed.get(template.templateId)
        out.append({"id": template.templateId, "canonicalSql": template.canonicalSql,
                    "tablesTouched": list(result.tables) if result is not None else [],
                    "executionsBucket": band(template.stats.executions, EXECUTION_BANDS),
                    "distinctUsersBucket": band(template.stats.distinctUsers, USER_BANDS),
                    "dialect": template.dialect})
    return out
