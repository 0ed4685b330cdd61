"""PostgreSQL: ``pg_stat_statements`` of the current database, after a probe that names every missing piece.

The probe (``probe(conn)``) checks, in order, and returns a finding with the exact fix for each:

    extension_unavailable  error    the contrib package is not installed on the server
    library_not_loaded     error    pg_stat_statements is not in shared_preload_libraries
    extension_missing      error    CREATE EXTENSION was never run in this database
    tracking_disabled      error    pg_stat_statements.track = none
    insufficient_privilege warning  neither superuser nor pg_read_all_stats: other roles' statements are hidden
    no_toplevel            warning  PostgreSQL before 14: nested statements are counted too, no reset time
    entries_evicted        warning  pg_stat_statements_info.dealloc > 0: raise pg_stat_statements.max
    stats_reset            info     since when the counters run (there is no per-execution history)

The read takes one row per (statement, role) of the current database (top-level statements only
where the ``toplevel`` column exists), normalizes each statement's text and sums ``calls`` and
``rows`` per template, so literal variants and IN lists of different lengths that PostgreSQL
counts under different query ids end up in one template. Roles are named through ``pg_roles``.

Runtime percentiles are an *estimate*: pg_stat_statements keeps only the mean, the (population)
standard deviation, the minimum and the maximum. The entries of one template are pooled exactly
(mean and variance from the per-entry sums), then a log-normal distribution with that mean and
variance gives p50 = mean / sqrt(1 + cv^2) and p95 = exp(mu + 1.645 sigma), both clipped to
[min, max]. Query latencies are right-skewed, which a log-normal fits better than a normal; a
template whose runs all took the same time gets p50 = p95 = mean.

What PostgreSQL cannot say: failures (``errorRate`` is 0), when a statement last ran (``lastSeen``
is None), and a time window (the counters run since the last reset; ``firstSeen`` is that reset,
or the entry's own ``stats_since`` on PostgreSQL 17+). The reader runs on the shared PostgreSQL driver
(``khive.connections.postgres``): a read-only session with a statement timeout, the search path pinned,
and connection errors without the password; it never writes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import sql

from khive.connections.config import ConnectionConfig
from khive.connections.postgres import PostgresDriver
from khive.connections.types import PROBE_SQL_MARK
from khive.errors import KhiveError
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.filters import SERVICE_ACCOUNT, AccountRules, iso, parse_time
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding, TemplateStats
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.readers._common import ReaderResult, error, finish, info, text_markers, top_users, warning

_Z95 = 1.6448536269514722  # standard normal quantile at 0.95

_PROBE_SQL = PROBE_SQL_MARK + """
SELECT current_setting('server_version_num')::int AS version, current_user AS role, r.rolsuper AS superuser,
       pg_catalog.pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER') AS read_all_stats,
       current_database() AS database,
       (SELECT n.nspname FROM pg_catalog.pg_extension AS e
        JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_stat_statements') AS extension_schema,
       EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'pg_stat_statements') AS available,
       current_setting('pg_stat_statements.track', true) AS track,
       current_setting('pg_stat_statements.max', true) AS max_entries
FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user
"""
_COLUMNS_SQL = PROBE_SQL_MARK + """
SELECT a.attname FROM pg_catalog.pg_attribute AS a
WHERE a.attrelid = pg_catalog.to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped
"""


@dataclass(frozen=True)
class Plan:
    """What the probe learned that the read needs."""

    schema: str
    columns: frozenset[str]
    stats_reset: datetime | None = None


class HistoryDriver(PostgresDriver):
    """The shared driver, named apart in pg_stat_activity (its own statements are left out of history)."""

    application_name = "khive-historic-sql"


def connect(dsn: str, timeout_s: float, *, connection: str = "historicSql") -> HistoryDriver:
    """A driver for the history role's connection string; it connects on first use (``connection_failed``)."""
    config = ConnectionConfig(driver="postgres", url="env:KHIVE_HISTORY_URL", statement_timeout_s=timeout_s)
    return HistoryDriver(connection, config, {"url": dsn})


def probe(conn: PostgresDriver) -> tuple[list[ProbeFinding], Plan | None]:
    """Findings about the setup; a plan when pg_stat_statements can be read (possibly partially)."""
    facts = next(iter(conn.read(_PROBE_SQL)), None)
    if facts is None:  # current_user is always in pg_roles; a proxy that says otherwise gets a finding
        return [error("probe_failed", "the server did not describe the current role", "connect directly")], None
    findings: list[ProbeFinding] = []
    database, role = facts["database"], facts["role"]
    loaded = facts["track"] is not None
    if facts["extension_schema"] is None and not facts["available"]:
        findings.append(error("extension_unavailable",
                              "the pg_stat_statements extension is not installed on this server",
                              "install the PostgreSQL contrib package for this server version, add "
                              "pg_stat_statements to shared_preload_libraries, restart, then run "
                              f"CREATE EXTENSION pg_stat_statements; in database {database}"))
        return findings, None
    if not loaded:
        findings.append(error("library_not_loaded", "pg_stat_statements is not loaded (shared_preload_libraries)",
                              "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements';  -- keep any "
                              "libraries already listed there; then restart PostgreSQL"))
    if facts["extension_schema"] is None:
        findings.append(error("extension_missing", f"pg_stat_statements is not installed in database {database}",
                              f"CREATE EXTENSION pg_stat_statements;  -- as a superuser, in database {database}"))
    if facts["track"] == "none":
        findings.append(error("tracking_disabled", "pg_stat_statements.track is 'none': nothing is recorded",
                              "ALTER SYSTEM SET pg_stat_statements.track = 'top'; SELECT pg_reload_conf();"))
    if not facts["superuser"] and not facts["read_all_stats"]:
        findings.append(warning("insufficient_privilege",
                                f"role {role} is neither superuser nor a member of pg_read_all_stats: only its own "
                                "statements are visible, other roles' show as <insufficient privilege>",
                                f"GRANT pg_read_all_stats TO {_ident(role)};"))
    if not loaded or facts["extension_schema"] is None or facts["track"] == "none":
        return findings, None
    schema = facts["extension_schema"]
    view = f"{_ident(schema)}.pg_stat_statements"
    columns = frozenset(row["attname"] for row in conn.read(_COLUMNS_SQL, (view,)))
    stats_reset = None
    if facts["version"] < 140000 or "toplevel" not in columns:
        findings.append(warning("no_toplevel", "PostgreSQL before 14 (or pg_stat_statements before 1.9): statements "
                                               "run inside functions count too, and the reset time is unknown",
                                "upgrade to PostgreSQL 14 or later, then ALTER EXTENSION pg_stat_statements UPDATE;"))
    else:
        info_row = next(iter(conn.read(sql.SQL(PROBE_SQL_MARK + " SELECT dealloc, stats_reset FROM "
                                               "{}.pg_stat_statements_info").format(sql.Identifier(schema)))), None)
        if info_row is not None:
            stats_reset = parse_time(info_row["stats_reset"])  # the driver hands timestamps over as ISO text
            if info_row["dealloc"]:
                current = int(facts["max_entries"] or 5000)
                findings.append(warning("entries_evicted",
                                        f"{info_row['dealloc']} times the least-used entries were evicted since "
                                        f"{iso(stats_reset)}: rare templates are missing, counts are lower bounds",
                                        f"ALTER SYSTEM SET pg_stat_statements.max = {current * 2};  -- then "
                                        "restart PostgreSQL"))
            findings.append(info("stats_reset", f"counters run since {iso(stats_reset)}; windowDays cannot apply "
                                                "(pg_stat_statements keeps totals, not executions)",
                                 "to make it a window, reset on a schedule: SELECT pg_stat_statements_reset();"))
    return findings, Plan(schema=schema, columns=columns, stats_reset=stats_reset)


def statements_query(plan: Plan) -> sql.Composed:
    """One row per (statement, role) of the current database; top-level statements where PostgreSQL says so."""
    exec_time = "_exec_time" if "total_exec_time" in plan.columns else "_time"  # renamed in PostgreSQL 13
    since = sql.SQL(", s.stats_since") if "stats_since" in plan.columns else sql.SQL("")
    toplevel = sql.SQL(" AND s.toplevel") if "toplevel" in plan.columns else sql.SQL("")
    return sql.SQL(PROBE_SQL_MARK + """
SELECT s.queryid, s.query, COALESCE(r.rolname, s.userid::text) AS username, s.calls, s.rows,
       s.{total} AS total_ms, s.{stddev} AS stddev_ms, s.{low} AS min_ms, s.{high} AS max_ms{since}
FROM {schema}.pg_stat_statements AS s
LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.userid
WHERE s.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()){toplevel}
""").format(total=sql.Identifier(f"total{exec_time}"), stddev=sql.Identifier(f"stddev{exec_time}"),
            low=sql.Identifier(f"min{exec_time}"), high=sql.Identifier(f"max{exec_time}"), since=since,
            schema=sql.Identifier(plan.schema), toplevel=toplevel)


@dataclass
class _Pooled:
    """Exact pooling of pg_stat_statements entries: sums of calls, times and squared times."""

    canonical: str
    calls: int = 0
    rows: int = 0
    total_ms: float = 0.0
    squares_ms: float = 0.0
    low_ms: float = math.inf
    high_ms: float = 0.0
    since: datetime | None = None
    users: Counter[str] = field(default_factory=Counter)
    markers: set[str] = field(default_factory=set)

    def add(self, row: dict[str, Any], user: str) -> None:
        calls = int(row["calls"] or 0)
        if calls <= 0:
            return
        mean, stddev = float(row["total_ms"] or 0) / calls, float(row["stddev_ms"] or 0)
        self.calls += calls
        self.rows += int(row["rows"] or 0)
        self.total_ms += mean * calls
        self.squares_ms += calls * (stddev * stddev + mean * mean)
        self.low_ms = min(self.low_ms, float(row["min_ms"] or 0))
        self.high_ms = max(self.high_ms, float(row["max_ms"] or 0))
        self.users[user] += calls
        since = parse_time(row.get("stats_since"))
        if since is not None and (self.since is None or since < self.since):
            self.since = since

    def template(self, template_id: str, reset: datetime | None) -> AggregatedTemplate:
        mean = self.total_ms / self.calls
        variance = max(self.squares_ms / self.calls - mean * mean, 0.0)
        p50, p95 = estimate_percentiles(mean, math.sqrt(variance), self.low_ms, self.high_ms)
        stats = TemplateStats(executions=self.calls, distinctUsers=len(self.users), firstSeen=iso(self.since or reset),
                              lastSeen=None, p50RuntimeMs=p50, p95RuntimeMs=p95, errorRate=0.0, rowsProduced=self.rows)
        return AggregatedTemplate(templateId=template_id, canonicalSql=self.canonical, dialect="postgres", stats=stats,
                                  topUsers=top_users(self.users), markers=sorted(self.markers))


def estimate_percentiles(mean: float, stddev: float, low: float, high: float) -> tuple[float, float]:
    """(p50, p95) of a log-normal distribution with this mean and standard deviation, clipped to [low, high]."""
    if mean <= 0 or stddev <= 0:
        return round(mean, 3), round(mean, 3)
    sigma2 = math.log1p((stddev / mean) ** 2)
    mu = math.log(mean) - sigma2 / 2
    p50, p95 = math.exp(mu), math.exp(mu + _Z95 * math.sqrt(sigma2))

    def clip(value: float) -> float:
        return round(min(max(value, low), high), 3)

    return clip(p50), clip(p95)


def read_postgres(dsn: str, config: HistoricSqlConfig, *, now: datetime | None = None,
                  timeout_s: float = 30.0) -> ReaderResult:
    """Probe, then read and aggregate ``pg_stat_statements`` for the database ``dsn`` names."""
    try:
        with connect(dsn, timeout_s) as conn:
            findings, plan = probe(conn)
            if plan is None:
                return ReaderResult([], findings)
            rows = conn.read(statements_query(plan))
    except KhiveError as exc:
        if exc.code != "connection_failed":
            raise
        return ReaderResult([], [connection_failed(exc)])
    normalizer = Normalizer("postgres", config.redactionPatterns)
    rules = AccountRules(config.filters.serviceAccounts)
    pooled: dict[str, _Pooled] = {}
    hidden = excluded = 0
    for row in rows:
        if row["queryid"] is None or row["query"] is None:
            hidden += 1  # another role's statement, without pg_read_all_stats
            continue
        user = str(row["username"])
        decision = rules.decide(user)
        if decision == "exclude":
            excluded += int(row["calls"] or 0)
            continue
        normalized = normalizer.normalize(row["query"])
        entry = pooled.setdefault(normalized.template_id, _Pooled(normalized.canonical_sql))
        entry.add(row, user)
        entry.markers |= text_markers(row["query"], normalized)
        if decision == "mark-only":
            entry.markers.add(SERVICE_ACCOUNT)
    if hidden:
        findings.append(info("hidden_statements", f"{hidden} entries of other roles were not readable"))
    if excluded:
        findings.append(info("service_accounts_excluded", f"{excluded} executions by excluded service accounts"))
    templates = [entry.template(template, plan.stats_reset) for template, entry in pooled.items() if entry.calls]
    return finish(templates, findings, config, normalizer, now)


def connection_failed(exc: KhiveError) -> ProbeFinding:
    """The driver's connection error (its message never holds the password) as a finding."""
    return error("connection_failed", exc.message, "check the connection string and that the server accepts this role")


def _ident(name: str) -> str:
    """``name`` quoted as a PostgreSQL identifier, for the SQL a fix shows."""
    return '"' + name.replace('"', '""') + '"'
