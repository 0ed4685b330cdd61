"""In-memory noise filters over aggregated templates, plus the per-user and per-text recognisers readers use.

The warehouse readers push what they can into their SQL (statement types, time window, service
accounts, catalog views); everything here runs on the templates every reader returns, so a log
file and ``pg_stat_statements`` are cleaned the same way. ``apply_filters`` drops, first reason
wins:

    noise            SHOW, DESCRIBE, EXPLAIN, SET, USE, BEGIN, COMMIT, VACUUM... (kind NOISE)
    ddl              CREATE/ALTER/DROP/TRUNCATE/GRANT/COMMENT (CREATE TABLE ... AS SELECT stays)
    non-analytical   anything else that is not SELECT/INSERT/UPDATE/DELETE/MERGE/CTAS (CALL, COPY)
    system-catalog   every table read is a catalog: pg_catalog, information_schema, pg_*, sqlite_*,
                     duckdb_*(), SNOWFLAKE.ACCOUNT_USAGE, region-*.INFORMATION_SCHEMA
    trivial-probe    a SELECT that reads no table (SELECT 1, SELECT version(), SELECT now())
    orchestrator:X   tool X's queries when its mode is ``exclude``
    mostly-failing   errorRate above ``filters.maxErrorRate`` (0.5)
    min-executions   fewer than ``minExecutions`` executions
    outside-window   last seen before ``windowDays`` ago (templates without lastSeen stay)

Service accounts are decided per execution by the readers (``AccountRules``), because a
template run by a person and by a bot must keep the person's runs when the bot is excluded.
Orchestrators are recognised by the conventions their queries carry (``orchestrator_markers``):

    dbt       the query comment ``/* {"app": "dbt", "dbt_version": ...} */``
    looker    ``-- Looker Query Context '{...}'``, LOOKER_SCRATCH / LOOKER_* names, LR$ / LC$ PDTs
    metabase  ``-- Metabase:: userID: 1 queryType: MBQL queryHash: ...``
    redash    ``/* Username: ..., Query ID: ..., Queue: ... */``
    hex       ``-- Hex query metadata: {...}``
    tableau   the ``"Custom SQL Query"`` alias and ``#Tableau_*`` temporary tables
    khive     ``/* khive:scan */``, ``/* khive:query */``, ``/* khive:probe */``: khive's own sampling,
              what agents ran through sql.execute and sl.query, and the history probes (excluded by
              default: agents' traffic is not "what analysts run"; ADR 0032)
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from packs.historic_sql.config import FilterMode, HistoricSqlConfig, ServiceAccountRule
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding
from packs.historic_sql.normalize import ANALYTICAL_KINDS, NormalizedSql, Normalizer

SERVICE_ACCOUNT = "service-account"
PARSE_FALLBACK = "parse-fallback"  # marker: normalized by the regex fallback, tables may be incomplete

ORCHESTRATORS: dict[str, re.Pattern[str]] = {
    "dbt": re.compile(r"\"app\"\s*:\s*\"dbt\"|\"dbt_version\"\s*:", re.I),
    "looker": re.compile(r"--\s*Looker Query Context|\b(?i:looker_scratch)\b|\bLOOKER_[A-Z0-9_]+|\bL[RC]\$\w+"),
    "metabase": re.compile(r"--\s*Metabase\b", re.I),
    "redash": re.compile(r"/\*\s*Username:[^*]*?Query ID:", re.I),
    "hex": re.compile(r"--\s*Hex query metadata", re.I),
    "tableau": re.compile(r"\"Custom SQL Query\"|#Tableau_\w+", re.I),
    # khive's own sampling, agents' queries and probes (khive.connections.types *_SQL_MARK)
    "khive": re.compile(r"/\*\s*khive:(?:scan|query|probe)\s*\*/"),
}
_SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast", "performance_schema", "account_usage",
                             "organization_usage", "reader_account_usage", "data_sharing_usage"})
_SYSTEM_NAME_RE = re.compile(r"(?:pg_|sqlite_|duckdb_)")


# one case-insensitive pass that every marked text matches: most texts carry no marker and stop here
_ANY_ORCHESTRATOR = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in ORCHESTRATORS.values()), re.I)
# ... and before it, substrings every marker contains: a substring test is ~50x cheaper than that regex
_HINTS = ("dbt", "looker", "lr$", "lc$", "metabase", "query id:", "hex query metadata", "custom sql query",
          "#tableau_", "khive:")


def orchestrator_markers(sql: str) -> set[str]:
    """The tools whose conventions this raw query text carries (comments included)."""
    lowered = sql.lower()
    if not any(hint in lowered for hint in _HINTS) or not _ANY_ORCHESTRATOR.search(sql):
        return set()
    return {name for name, pattern in ORCHESTRATORS.items() if pattern.search(sql)}


class AccountRules:
    """Service-account rules in order, first match wins; decisions cached per user name."""

    def __init__(self, rules: Sequence[ServiceAccountRule]):
        self.rules = list(rules)
        self._compiled = [(re.compile(rule.pattern, re.I), rule.mode) for rule in rules]
        self._decided: dict[str, FilterMode | None] = {}

    def decide(self, user: str | None) -> FilterMode | None:
        """``exclude`` / ``include`` / ``mark-only`` from the first matching rule; None when none matches."""
        if not user or not self._compiled:
            return None
        if user not in self._decided:
            self._decided[user] = next((mode for pattern, mode in self._compiled if pattern.search(user)), None)
        return self._decided[user]


@functools.lru_cache(maxsize=4096)  # a run asks about a few hundred names tens of thousands of times
def is_system_table(name: str) -> bool:
    parts = name.lower().split(".")
    return any(part in _SYSTEM_SCHEMAS for part in parts[:-1]) or bool(_SYSTEM_NAME_RE.match(parts[-1]))


def drop_reason(template: AggregatedTemplate, facts: NormalizedSql, config: HistoricSqlConfig,
                window_start: datetime) -> str | None:
    """Why this template is noise (the first reason, in the module docstring's order), or None to keep it."""
    if facts.kind in ("NOISE", "DDL"):
        return facts.kind.lower()
    if facts.kind not in ANALYTICAL_KINDS:
        return "non-analytical"
    if facts.tables and all(is_system_table(name) for name in facts.tables):
        return "system-catalog"
    reads_table = any(not name.endswith("()") for name in facts.tables)
    if config.filters.dropTrivialProbes and facts.kind == "SELECT" and not reads_table:
        return "trivial-probe"
    if template.markers:  # most templates carry none: no modes to look up
        modes = config.filters.orchestrators.modes()
        for marker in template.markers:
            if modes.get(marker) == "exclude":
                return f"orchestrator:{marker}"
    stats = template.stats
    if stats.errorRate > config.filters.maxErrorRate:
        return "mostly-failing"
    if stats.executions < config.minExecutions:
        return "min-executions"
    last_seen = parse_time(stats.lastSeen)
    if last_seen is not None and last_seen < window_start:
        return "outside-window"
    return None


@dataclass(frozen=True)
class FilterOutcome:
    kept: list[AggregatedTemplate]
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> templates dropped

    def finding(self) -> ProbeFinding | None:
        if not self.dropped:
            return None
        total = sum(self.dropped.values())
        detail = ", ".join(f"{count} {reason}" for reason, count in sorted(self.dropped.items()))
        return ProbeFinding(severity="info", code="filtered",
                            message=f"kept {len(self.kept)} templates, dropped {total} as noise: {detail}",
                            fix="tune historicSql.minExecutions / windowDays / filters in khive.yaml")


def apply_filters(templates: Sequence[AggregatedTemplate], config: HistoricSqlConfig, *,
                  normalizer: Normalizer | None = None, now: datetime | None = None) -> FilterOutcome:
    """Drop noise (see the module docstring), settle orchestrator markers by mode, sort by executions."""
    window_start = (now or datetime.now(UTC)) - timedelta(days=config.windowDays)
    modes = config.filters.orchestrators.modes()
    normalizers: dict[str, Normalizer] = {normalizer.dialect: normalizer} if normalizer else {}
    kept: list[AggregatedTemplate] = []
    dropped: Counter[str] = Counter()
    for template in templates:
        if template.dialect not in normalizers:
            normalizers[template.dialect] = Normalizer(template.dialect)
        facts = _facts(normalizers[template.dialect], template)
        reason = drop_reason(template, facts, config, window_start)
        if reason is not None:
            dropped[reason] += 1
            continue
        markers = [marker for marker in template.markers if modes.get(marker) != "include"]
        kept.append(template if markers == template.markers else template.model_copy(update={"markers": markers}))
    kept.sort(key=lambda t: (-t.stats.executions, t.templateId))
    return FilterOutcome(kept=kept, dropped=dict(dropped))


def _facts(normalizer: Normalizer, template: AggregatedTemplate) -> NormalizedSql:
    known = normalizer.known(template.templateId)
    return known if known is not None else normalizer.normalize(template.canonicalSql)


def parse_time(value: object) -> datetime | None:
    """A timestamp as readers meet it: datetime, ISO 8601 text (naive means UTC), or epoch seconds
    (milliseconds above 1e11, as text too: BigQuery's REST API sends ``"1.7146E9"``). None if unreadable."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("Z", "z"):  # ISO 8601 in UTC, as the readers write it: never a number, skip float()
            try:
                return parse_time(datetime.fromisoformat(text))
            except ValueError:
                return None
        try:
            number = float(text)
        except ValueError:
            try:
                return parse_time(datetime.fromisoformat(text))
            except ValueError:
                return None
        return parse_time(number)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000 if abs(value) > 1e11 else value, UTC)
        except (ValueError, OverflowError, OSError):  # nan, inf, out of range
            return None
    return None


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
