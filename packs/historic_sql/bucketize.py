"""Templates by table, in stable bands: the staged content the table digest reads.

Every table a parsed template touches gets the template (each side of a join counts). Numbers never
reach the staged files: executions, users, runtimes, error rates and column/join frequencies are
reported as bands, so a table whose usage moved a little stages the same bytes and costs no work
(the content hash in the manifest decides, see ``stage.work_units``).

Frequencies are execution-weighted shares of the table's executions (a template with zero recorded
executions weighs one): ``high`` >= 50 %, ``mid`` >= 10 %, ``low`` below. Lists are sorted by band, then
name; top templates by executions band, then distinct-users band, then template id -- a rank inside a
band would move with every small fluctuation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from packs.historic_sql.models import AggregatedTemplate
from packs.historic_sql.parsed import CLAUSES, ParsedTemplate

# (exclusive upper bound, label); the last band is open
EXECUTION_BANDS: tuple[tuple[float, str], ...] = (
    (10, "<10"), (100, "10-100"), (1_000, "100-1k"), (5_000, "1k-5k"), (50_000, "5k-50k"), (float("inf"), ">50k"))
USER_BANDS: tuple[tuple[float, str], ...] = ((1, "0"), (2, "1"), (6, "2-5"), (21, "6-20"), (float("inf"), ">20"))
RUNTIME_BANDS: tuple[tuple[float, str], ...] = (
    (100, "<100ms"), (1_000, "100ms-1s"), (10_000, "1s-10s"), (60_000, "10s-1m"), (float("inf"), ">1m"))
ERROR_BANDS: tuple[tuple[float, str], ...] = ((1e-12, "none"), (0.01, "<1%"), (0.1, "1-10%"), (float("inf"), ">10%"))
FREQUENCY_BANDS: tuple[tuple[float, str], ...] = ((0.1, "low"), (0.5, "mid"), (float("inf"), "high"))
FREQUENCY_RANK = {"high": 0, "mid": 1, "low": 2}
TOP_TEMPLATES = 5
TOP_USERS = 5


def band(value: float | None, bands: tuple[tuple[float, str], ...]) -> str:
    if value is None:
        return "unknown"
    for upper, label in bands:
        if value < upper:
            return label
    return bands[-1][1]


def rank(label: str, bands: tuple[tuple[float, str], ...]) -> int:
    """Position of ``label`` counted from the top band (0 = highest)."""
    labels = [name for _, name in bands]
    return len(labels) - 1 - labels.index(label) if label in labels else len(labels)


def template_bands(template: AggregatedTemplate) -> dict[str, str]:
    return {"executionsBucket": band(template.stats.executions, EXECUTION_BANDS),
            "distinctUsersBucket": band(template.stats.distinctUsers, USER_BANDS)}


def _weight(template: AggregatedTemplate) -> int:
    return max(template.stats.executions, 1)


def _p95(weighted: list[tuple[float, int]]) -> float | None:
    """The execution-weighted 95th percentile of the templates' p95 runtimes."""
    if not weighted:
        return None
    weighted.sort()
    total = sum(w for _, w in weighted)
    seen = 0
    for value, w in weighted:
        seen += w
        if seen >= 0.95 * total:
            return value
    return weighted[-1][0]


def _frequency(weight: int, total: int) -> str:
    return band(weight / total if total else 0.0, FREQUENCY_BANDS)


def bucketize(templates: Sequence[AggregatedTemplate], parsed: Mapping[str, ParsedTemplate], *,
              top_templates: int = TOP_TEMPLATES) -> dict[str, dict[str, Any]]:
    """Table key -> the JSON-ready staged content for that table."""
    by_table: dict[str, list[AggregatedTemplate]] = defaultdict(list)
    for template in templates:
        result = parsed.get(template.templateId)
        if result is not None and result.error is None:
            for table in result.tables:
                by_table[table].append(template)
    return {table: _table(table, members, parsed, top_templates) for table, members in sorted(by_table.items())}


def _table(table: str, members: list[AggregatedTemplate], parsed: Mapping[str, ParsedTemplate],
           top_templates: int) -> dict[str, Any]:
    total = sum(_weight(t) for t in members)
    clause_weights: dict[tuple[str, str], int] = defaultdict(int)
    join_weights: dict[tuple[str, tuple[tuple[str, str], ...]], int] = defaultdict(int)
    users: set[str] = set()
    runtimes: list[tuple[float, int]] = []
    errors = 0.0
    for template in members:
        weight, result = _weight(template), parsed[template.templateId]
        for clause, column in {(use.clause, use.column) for use in result.columns if use.table == table}:
            clause_weights[(clause, column)] += weight
        for other, pairs in _joins_of(table, result).items():
            join_weights[(other, pairs)] += weight
        users.update(template.topUsers)
        if template.stats.p95RuntimeMs is not None:
            runtimes.append((template.stats.p95RuntimeMs, weight))
        errors += template.stats.errorRate * weight
    distinct_users = max([len(users), *(t.stats.distinctUsers for t in members)])
    columns: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (clause, column), weight in clause_weights.items():
        columns[clause].append((column, _frequency(weight, total)))
    joins: list[dict[str, Any]] = [
        {"withTable": other, "on": [list(pair) for pair in pairs], "freq": _frequency(weight, total)}
        for (other, pairs), weight in sorted(join_weights.items(),
                                             key=lambda i: (FREQUENCY_RANK[_frequency(i[1], total)], i[0]))]
    top = sorted(members, key=lambda t: (rank(band(t.stats.executions, EXECUTION_BANDS), EXECUTION_BANDS),
                                         rank(band(t.stats.distinctUsers, USER_BANDS), USER_BANDS), t.templateId))
    return {
        "table": table,
        "stats": {"executionsBucket": band(sum(t.stats.executions for t in members), EXECUTION_BANDS),
                  "distinctUsersBucket": band(distinct_users, USER_BANDS),
                  "p95RuntimeBucket": band(_p95(runtimes), RUNTIME_BANDS),
                  "errorRateBucket": band(errors / total if total else 0.0, ERROR_BANDS)},
        "columnsByClause": {clause: [list(entry) for entry in sorted(columns[clause],
                                                                     key=lambda e: (FREQUENCY_RANK[e[1]], e[0]))]
                            for clause in CLAUSES if clause in columns},
        "observedJoins": joins,
        "topTemplates": [{"id": t.templateId, "canonicalSql": t.canonicalSql, **template_bands(t),
                          "topUsers": sorted(t.topUsers[:TOP_USERS])} for t in top[:top_templates]],
    }


def _joins_of(table: str, result: ParsedTemplate) -> dict[str, tuple[tuple[str, str], ...]]:
    """Other table -> sorted (this column, other column) pairs of one template's joins with ``table``."""
    pairs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for edge in result.joins:
        if edge.left_table == table:
            pairs[edge.right_table].add((edge.left_column, edge.right_column))
        if edge.right_table == table:
            pairs[edge.left_table].add((edge.right_column, edge.left_column))
    return {other: tuple(sorted(found)) for other, found in pairs.items()}


def pattern_sets(templates: Sequence[AggregatedTemplate], parsed: Mapping[str, ParsedTemplate], *,
                 sql_per_set: int = TOP_TEMPLATES) -> list[dict[str, Any]]:
    """Co-occurring table sets (two tables or more) with their templates, for the patterns digest.

    Every template is listed by id with its bands; the canonical SQL rides along for the top
    ``sql_per_set`` of each set only, which keeps the file a reading size on warehouses with tens of
    thousands of templates (the rest stay reachable by id in the per-table files' sources).
    """
    groups: dict[tuple[str, ...], list[AggregatedTemplate]] = defaultdict(list)
    for template in templates:
        result = parsed.get(template.templateId)
        if result is not None and result.error is None and len(result.tables) > 1:
            groups[result.tables].append(template)
    out: list[dict[str, Any]] = []
    for tables, members in groups.items():
        members.sort(key=lambda t: (rank(band(t.stats.executions, EXECUTION_BANDS), EXECUTION_BANDS),
                                    rank(band(t.stats.distinctUsers, USER_BANDS), USER_BANDS), t.templateId))
        users = max([len({u for t in members for u in t.topUsers}), *(t.stats.distinctUsers for t in members)])
        entries = [{"id": t.templateId, **template_bands(t)} for t in members]
        for entry, template in zip(entries[:sql_per_set], members, strict=False):
            entry["canonicalSql"] = template.canonicalSql
        out.append({"tables": list(tables),
                    "executionsBucket": band(sum(t.stats.executions for t in members), EXECUTION_BANDS),
                    "distinctUsersBucket": band(users, USER_BANDS), "templates": entries})
    out.sort(key=lambda s: (rank(s["executionsBucket"], EXECUTION_BANDS), s["tables"]))
    return out
