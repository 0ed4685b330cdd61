"""Shared by the BigQuery and Snowflake readers: one aggregation query shape, built with sqlglot, and its rows.

The query has four parts; only the first differs by warehouse (``WarehouseSpec``):

    executions   one row per finished query in the window, with uniform column names, the
                 warehouse-side noise filters (statement types, catalog views, client chatter)
                 and ``account_rule``: the first service-account rule matching the user
                 (``exclude`` / ``include`` / ``mark-only`` / ``none``)
    stats        per template key: MIN(text) as the sample, count, distinct users, first/last
                 time, approximate p50/p95 of elapsed ms, failures, rows, runs by marked
                 accounts; HAVING count >= minExecutions
    users        per template key, its five heaviest users (QUALIFY ROW_NUMBER() <= 5)
    top_users    those users as an array, heaviest first

Executions of ``exclude`` accounts are left out of ``stats`` and ``users``, so a template run by
people and by a bot keeps the people's numbers. Service-account patterns are matched by the
warehouse's own regex engine (RE2 in BigQuery, Snowflake's POSIX-style one), case-insensitively:
keep them to the common subset (anchors, classes, ``\\.``). The result is capped at
``max_templates`` rows, most executed first; a full result is reported as a warning.

Rows come back as the client libraries give them: BigQuery with lower-case keys, Snowflake's
DictCursor with upper-case ones (and ARRAY columns as JSON text). Keys are lower-cased, numbers
coerced, and rows whose samples normalize to one template id are merged: counts, failures and
rows add up, first/last seen take the extremes, p95 the maximum, p50 the execution-weighted mean,
distinct users the maximum (a lower bound: the warehouse grouped them apart).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

from khive.errors import KhiveError
from packs.historic_sql.config import HistoricSqlConfig, ServiceAccountRule
from packs.historic_sql.filters import SERVICE_ACCOUNT, iso, parse_time
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding, TemplateStats
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.readers._common import TOP_USERS, error, text_markers, warning

# statement / query types that read tables; DDL, SHOW, USE, scripts' parent jobs and the like stay out
STATEMENT_TYPES = ("SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE_TABLE_AS_SELECT")
MAX_TEMPLATES = 50_000
Rows = list[dict[str, Any]]
Runner = Callable[[str], Rows]


@dataclass(frozen=True)
class WarehouseSpec:
    dialect: str
    source: exp.Table
    columns: dict[str, str]  # uniform name -> expression over the source, in the warehouse's dialect
    conditions: Sequence[str]  # the warehouse-side noise filters
    user_column: str
    regex_match: Callable[[exp.Expr, str], exp.Expr]  # (column, pattern) -> case-insensitive match
    percentile: Callable[[str, float], str]  # (column, fraction) -> approximate quantile expression
    count_if: str  # COUNTIF / COUNT_IF
    top_users: str  # ordered array of user_name by n


def aggregation_sql(spec: WarehouseSpec, config: HistoricSqlConfig, *, max_templates: int = MAX_TEMPLATES) -> str:
    dialect = spec.dialect

    def parse(text: str) -> exp.Expr:
        return sqlglot.parse_one(text, read=dialect)

    rules = config.filters.serviceAccounts
    columns = [parse(text) if text == name else exp.alias_(parse(text), name) for name, text in spec.columns.items()]
    columns.append(exp.alias_(_account_rule(spec, rules), "account_rule"))
    executions = sqlglot.select(*columns).from_(spec.source).where(*spec.conditions, dialect=dialect)
    kept = "account_rule <> 'exclude'" if any(rule.mode == "exclude" for rule in rules) else None

    def over_kept() -> exp.Select:
        base = sqlglot.select().from_("executions")
        return base.where(kept, dialect=dialect) if kept else base

    stats = (over_kept().select(
        "template_key", "MIN(query_text) AS sample_sql", "COUNT(*) AS executions",
        "COUNT(DISTINCT user_name) AS distinct_users", "MIN(executed_at) AS first_seen",
        "MAX(executed_at) AS last_seen", f"{spec.percentile('elapsed_ms', 0.5)} AS p50_ms",
        f"{spec.percentile('elapsed_ms', 0.95)} AS p95_ms", f"{spec.count_if}(failed) AS failures",
        "SUM(rows_produced) AS rows_produced",
        f"{spec.count_if}(account_rule = 'mark-only') AS service_account_executions", dialect=dialect)
        .group_by("template_key").having(f"COUNT(*) >= {int(config.minExecutions)}", dialect=dialect))
    users = (over_kept().select("template_key", "user_name", "COUNT(*) AS n")
             .group_by("template_key", "user_name")
             .qualify(f"ROW_NUMBER() OVER (PARTITION BY template_key ORDER BY COUNT(*) DESC, user_name) <= {TOP_USERS}",
                      dialect=dialect))
    top = sqlglot.select("template_key", f"{spec.top_users} AS top_users", dialect=dialect).from_("users") \
        .group_by("template_key")
    final = (sqlglot.select(*(f"s.{name}" for name in _STATS_COLUMNS), "t.top_users")
             .from_("stats AS s")
             .join("top_users AS t", on="t.template_key = s.template_key", join_type="left")
             .order_by("s.executions DESC", "s.template_key", dialect=dialect)
             .limit(int(max_templates))
             .with_("executions", as_=executions).with_("stats", as_=stats).with_("users", as_=users)
             .with_("top_users", as_=top))
    return final.sql(dialect, pretty=True)


_STATS_COLUMNS = ("template_key", "sample_sql", "executions", "distinct_users", "first_seen", "last_seen", "p50_ms",
                  "p95_ms", "failures", "rows_produced", "service_account_executions")


def _account_rule(spec: WarehouseSpec, rules: Sequence[ServiceAccountRule]) -> exp.Expr:
    none = exp.Literal.string("none")
    if not rules:
        return none
    user = sqlglot.parse_one(spec.user_column, read=spec.dialect)
    return exp.Case(ifs=[exp.If(this=spec.regex_match(user.copy(), rule.pattern), true=exp.Literal.string(rule.mode))
                         for rule in rules], default=none)


def client_failure(exc: Exception, where: str) -> ProbeFinding | None:
    """The finding for a failure that is not the query's: the client library is missing, or the warehouse
    cannot be reached or refuses the credentials (None for anything else)."""
    if not isinstance(exc, KhiveError) or exc.code not in ("driver_unavailable", "connection_failed"):
        return None
    fix = str(exc.details.get("fix") or "check the connection's credentials and url in khive.yaml")
    if exc.code == "driver_unavailable":
        return error("client_library_missing", exc.message, fix)
    return error("connection_failed", f"cannot reach {where}: {exc.message}", fix)


def retention_warnings(config: HistoricSqlConfig, retention_days: int, keeps: str) -> list[ProbeFinding]:
    """A warning when windowDays reaches past the history the warehouse keeps (``keeps`` says what it keeps)."""
    if config.windowDays <= retention_days:
        return []
    return [warning("window_exceeds_retention",
                    f"windowDays is {config.windowDays} but {keeps}",
                    f"set historicSql.windowDays to {retention_days} or less")]


def truncation_warnings(rows: Rows, max_templates: int) -> list[ProbeFinding]:
    """A warning when the aggregation came back with the cap of rows: rarer templates were left out."""
    if len(rows) < max_templates:
        return []
    return [warning("result_truncated", f"the aggregation returned the cap of {max_templates} templates: "
                                        "rarer templates were left out",
                    "raise historicSql.minExecutions or shorten windowDays")]


def first_row(rows: Rows) -> dict[str, Any]:
    """A one-row probe result with lower-case keys (Snowflake answers in upper case)."""
    return {str(key).lower(): value for key, value in (rows[0] if rows else {}).items()}


# ---- rows ----------------------------------------------------------------------------------------------------


@dataclass
class _Merged:
    canonical: str
    executions: int = 0
    failures: int = 0
    distinct_users: int = 0
    first: datetime | None = None
    last: datetime | None = None
    p50_weighted: float = 0.0
    p50_weight: int = 0
    p95: float | None = None
    rows: int | None = None
    users: list[str] = field(default_factory=list)
    markers: set[str] = field(default_factory=set)

    def add(self, row: dict[str, Any]) -> None:
        executions = _int(row.get("executions")) or 0
        self.executions += executions
        self.failures += _int(row.get("failures")) or 0
        self.distinct_users = max(self.distinct_users, _int(row.get("distinct_users")) or 0)
        for moment in (parse_time(row.get("first_seen")), parse_time(row.get("last_seen"))):
            if moment is not None:
                self.first = moment if self.first is None else min(self.first, moment)
                self.last = moment if self.last is None else max(self.last, moment)
        p50, p95 = _float(row.get("p50_ms")), _float(row.get("p95_ms"))
        if p50 is not None:
            self.p50_weighted += p50 * executions
            self.p50_weight += executions
        if p95 is not None:
            self.p95 = p95 if self.p95 is None else max(self.p95, p95)
        rows = _int(row.get("rows_produced"))
        if rows is not None:
            self.rows = (self.rows or 0) + rows
        self.users.extend(user for user in _users(row.get("top_users")) if user not in self.users)
        if _int(row.get("service_account_executions")):
            self.markers.add(SERVICE_ACCOUNT)

    def template(self, template_id: str, dialect: str) -> AggregatedTemplate:
        p50 = round(self.p50_weighted / self.p50_weight, 3) if self.p50_weight else None
        stats = TemplateStats(executions=self.executions, distinctUsers=self.distinct_users, firstSeen=iso(self.first),
                              lastSeen=iso(self.last), p50RuntimeMs=p50, p95RuntimeMs=self.p95,
                              errorRate=round(min(self.failures / self.executions, 1.0), 6), rowsProduced=self.rows)
        return AggregatedTemplate(templateId=template_id, canonicalSql=self.canonical, dialect=dialect, stats=stats,
                                  topUsers=self.users[:TOP_USERS], markers=sorted(self.markers))


def templates_from_rows(rows: Iterable[dict[str, Any]], normalizer: Normalizer) -> list[AggregatedTemplate]:
    """The aggregation query's rows (as the client returns them) -> one template per normalized template id."""
    merged: dict[str, _Merged] = {}
    for raw in rows:
        row = {str(key).lower(): value for key, value in raw.items()}
        sample = row.get("sample_sql")
        if not isinstance(sample, str) or not sample.strip() or not _int(row.get("executions")):
            continue
        normalized = normalizer.normalize(sample)
        entry = merged.setdefault(normalized.template_id, _Merged(normalized.canonical_sql))
        entry.add(row)
        entry.markers |= text_markers(sample, normalized)
    return [entry.template(template, normalizer.dialect) for template, entry in merged.items()]


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else int(number)


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _users(value: Any) -> list[str]:
    if isinstance(value, str):  # Snowflake's connector hands ARRAY columns over as JSON text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return [str(user) for user in value if user] if isinstance(value, list) else []
