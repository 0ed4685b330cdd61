"""Query-history readers: PostgreSQL against a real server, log files on disk, BigQuery and Snowflake on recordings.

BigQuery and Snowflake cannot run here: their aggregation SQL is checked against golden files and
their parsing against recorded rows, shaped as the client libraries return them (google-cloud-
bigquery: lower-case keys, lists; snowflake-connector-python's DictCursor: upper-case keys, ARRAY
as JSON text), in ``fixtures/``. Regenerate the golden SQL (review the diff!)::

    KHIVE_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/packs/historic_sql/test_readers.py -k golden
"""

from __future__ import annotations

import gzip
import json
import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pgcluster
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from khive.errors import KhiveError
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.filters import PARSE_FALLBACK, SERVICE_ACCOUNT
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding
from packs.historic_sql.readers import ReaderResult
from packs.historic_sql.readers.bigquery import aggregation_sql as bigquery_sql
from packs.historic_sql.readers.bigquery import read_bigquery
from packs.historic_sql.readers.logfile import read_logfile
from packs.historic_sql.readers.postgres import estimate_percentiles, read_postgres
from packs.historic_sql.readers.snowflake import TEXT_KEY, read_snowflake
from packs.historic_sql.readers.snowflake import aggregation_sql as snowflake_sql

FIXTURES = Path(__file__).parent / "fixtures"
REGEN = os.environ.get("KHIVE_REGEN_GOLDEN") == "1"
NOW = datetime(2026, 5, 11, 12, 0, tzinfo=UTC)
Rows = list[dict[str, Any]]


def codes(findings: list[ProbeFinding]) -> dict[str, ProbeFinding]:
    return {finding.code: finding for finding in findings}


def by_sql(result: ReaderResult, fragment: str) -> AggregatedTemplate:
    matches = [t for t in result.templates if fragment in t.canonicalSql]
    assert len(matches) == 1, f"{fragment!r} in {[t.canonicalSql for t in result.templates]}"
    return matches[0]


def golden(name: str, text: str) -> None:
    path = FIXTURES / "golden" / name
    if REGEN:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; regenerate with KHIVE_REGEN_GOLDEN=1"


# ---- PostgreSQL: a real server ---------------------------------------------------------------------------------

TPCH = """
CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL);
CREATE TABLE customer (c_custkey int PRIMARY KEY, c_name text, c_nationkey int REFERENCES nation,
                       c_mktsegment text, c_acctbal numeric(12, 2));
CREATE TABLE orders (o_orderkey int PRIMARY KEY, o_custkey int REFERENCES customer, o_orderdate date,
                     o_totalprice numeric(12, 2), o_orderstatus char(1));
CREATE TABLE lineitem (l_orderkey int REFERENCES orders, l_linenumber int, l_quantity int, l_returnflag char(1),
                       l_shipdate date, PRIMARY KEY (l_orderkey, l_linenumber));
INSERT INTO nation SELECT n, (ARRAY['FRANCE', 'GERMANY', 'JAPAN', 'BRAZIL'])[n + 1] FROM generate_series(0, 3) AS n;
INSERT INTO customer SELECT c, 'Customer ' || c, c % 4, (ARRAY['BUILDING', 'MACHINERY', 'AUTOMOBILE'])[c % 3 + 1],
                            c * 10.5 FROM generate_series(1, 60) AS c;
INSERT INTO orders SELECT o, o % 60 + 1, DATE '1995-01-01' + o, o * 3.25, 'O' FROM generate_series(1, 400) AS o;
INSERT INTO lineitem SELECT o, l, l * 2, (ARRAY['A', 'N', 'R'])[l], DATE '1995-01-05' + o
FROM generate_series(1, 400) AS o, generate_series(1, 3) AS l;
"""
QUERY_A = ("SELECT n.n_name, COUNT(*) AS orders, SUM(o.o_totalprice) AS revenue FROM customer AS c "
           "JOIN orders AS o ON o.o_custkey = c.c_custkey JOIN nation AS n ON n.n_nationkey = c.c_nationkey "
           "WHERE c.c_mktsegment = '{segment}' AND o.o_orderdate >= DATE '{since}' AND n.n_name IN ({names}) "
           "GROUP BY n.n_name ORDER BY revenue DESC")
QUERY_B = ("SELECT l_returnflag, SUM(l_quantity) AS quantity FROM lineitem "
           "WHERE l_shipdate <= DATE '1998-12-01' - {days} GROUP BY l_returnflag")


@dataclass(frozen=True)
class Workload:
    dsn: str
    alice: str
    bob: str


def _as(dsn: str, role: str) -> str:
    return make_conninfo(dsn, user=role)


def _query_a(rng: random.Random) -> str:
    names = ", ".join(f"'{name}'" for name in rng.sample(["FRANCE", "GERMANY", "JAPAN", "BRAZIL"], rng.randint(1, 3)))
    return QUERY_A.format(segment=rng.choice(["BUILDING", "MACHINERY", "AUTOMOBILE"]),
                          since=f"1995-{rng.randint(1, 12):02d}-01", names=names)


@pytest.fixture
def tpch(pg_database: str) -> Iterator[Workload]:
    suffix = uuid.uuid4().hex[:8]
    alice, bob = f"alice_{suffix}", f"bob_{suffix}"  # roles are cluster-wide: unique per test
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute(TPCH)  # psycopg sends a parameterless script as one simple query
        for role in (alice, bob):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
        conn.execute("SELECT pg_stat_statements_reset()")
    rng = random.Random(3)
    with psycopg.connect(_as(pg_database, alice), autocommit=True) as conn:
        for _ in range(7):
            conn.execute(_query_a(rng))
        for _ in range(6):  # noise, run often enough that only the noise filter can drop it
            conn.execute("SET work_mem = '8MB'")
            conn.execute("SHOW work_mem")
            conn.execute("SELECT 1")
    with psycopg.connect(_as(pg_database, bob), autocommit=True) as conn:
        for _ in range(3):
            conn.execute(_query_a(rng))
        for days in (30, 60, 90, 120, 150):
            conn.execute(QUERY_B.format(days=days))
    yield Workload(dsn=pg_database, alice=alice, bob=bob)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        for role in (alice, bob):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.mark.postgres
def test_postgres_reader_sums_calls_across_users_and_literal_variants(tpch: Workload) -> None:
    result = read_postgres(tpch.dsn, HistoricSqlConfig(enabled=True), now=NOW)
    a = by_sql(result, "FROM customer AS c JOIN orders AS o")
    assert a.stats.executions == 10  # 7 by alice + 3 by bob, over several query ids (IN lists of 1-3 names)
    assert a.stats.distinctUsers == 2 and a.topUsers == [tpch.alice, tpch.bob]
    assert "c.c_mktsegment = ? AND o.o_orderdate >= CAST(? AS DATE) AND n.n_name IN (?)" in a.canonicalSql
    b = by_sql(result, "FROM lineitem")
    assert b.stats.executions == 5 and b.stats.distinctUsers == 1 and b.topUsers == [tpch.bob]
    assert len(result.templates) == 2  # SET, SHOW, SELECT 1, the setup and the reader's own catalog queries: noise
    assert not any(t.canonicalSql.startswith(("SET", "SHOW")) for t in result.templates)
    for template in (a, b):
        stats = template.stats
        assert stats.errorRate == 0.0 and stats.lastSeen is None and stats.firstSeen is not None
        assert stats.p50RuntimeMs is not None and stats.p95RuntimeMs is not None
        assert 0 <= stats.p50RuntimeMs <= stats.p95RuntimeMs
        assert template.markers == [] and template.dialect == "postgres"
    assert b.stats.rowsProduced == 5 * 3  # three return flags per run
    found = codes(result.findings)
    assert set(found) == {"stats_reset", "filtered"}
    assert "noise" in found["filtered"].message and "trivial-probe" in found["filtered"].message


@pytest.mark.postgres
def test_postgres_reader_applies_service_account_rules_per_role(tpch: Workload) -> None:
    excluded = read_postgres(tpch.dsn, HistoricSqlConfig.model_validate(
        {"filters": {"serviceAccounts": [{"pattern": "^bob_", "mode": "exclude"}]}}), now=NOW)
    a = by_sql(excluded, "FROM customer AS c")
    assert (a.stats.executions, a.topUsers) == (7, [tpch.alice])
    assert "lineitem" not in " ".join(t.canonicalSql for t in excluded.templates)  # B only ran as bob
    assert codes(excluded.findings)["service_accounts_excluded"].message.startswith("8 executions")
    marked = read_postgres(tpch.dsn, HistoricSqlConfig.model_validate(
        {"filters": {"serviceAccounts": [{"pattern": "^BOB_", "mode": "mark-only"}]}}), now=NOW)
    assert by_sql(marked, "FROM lineitem").markers == [SERVICE_ACCOUNT]
    assert by_sql(marked, "FROM customer AS c").markers == [SERVICE_ACCOUNT]  # bob ran A too


@pytest.mark.postgres
def test_postgres_probe_missing_extension_in_another_database(postgres_dsn: str) -> None:
    name = pgcluster.create_database(postgres_dsn)
    try:
        result = read_postgres(make_conninfo(postgres_dsn, dbname=name), HistoricSqlConfig())
    finally:
        pgcluster.drop_database(postgres_dsn, name)
    assert result.templates == []
    missing = codes(result.findings)["extension_missing"]
    assert missing.severity == "error" and name in missing.message
    assert missing.fix.startswith("CREATE EXTENSION pg_stat_statements;")


@pytest.mark.postgres
def test_postgres_probe_non_privileged_role(tpch: Workload) -> None:
    result = read_postgres(_as(tpch.dsn, tpch.alice), HistoricSqlConfig(), now=NOW)
    privilege = codes(result.findings)["insufficient_privilege"]
    assert privilege.severity == "warning" and "pg_read_all_stats" in privilege.message
    assert privilege.fix == f'GRANT pg_read_all_stats TO "{tpch.alice}";'
    assert "hidden_statements" in codes(result.findings)  # bob's entries read as <insufficient privilege>
    a = by_sql(result, "FROM customer AS c")
    assert (a.stats.executions, a.topUsers) == (7, [tpch.alice])  # only alice's own runs are visible


@pytest.mark.postgres
def test_postgres_probe_tracking_disabled(tpch: Workload) -> None:
    dsn = make_conninfo(tpch.dsn, options="-c pg_stat_statements.track=none")
    result = read_postgres(dsn, HistoricSqlConfig())
    disabled = codes(result.findings)["tracking_disabled"]
    assert result.templates == [] and disabled.severity == "error"
    assert disabled.fix == "ALTER SYSTEM SET pg_stat_statements.track = 'top'; SELECT pg_reload_conf();"


@pytest.mark.postgres
def test_postgres_reader_session_is_read_only(tpch: Workload) -> None:
    from packs.historic_sql.readers.postgres import connect

    with connect(tpch.dsn, 5.0) as conn, pytest.raises(KhiveError) as refused:
        conn.read("CREATE TABLE nope (a int)")
    assert refused.value.code == "read_only_violation"


def test_postgres_connection_failure_is_a_finding_without_the_password() -> None:
    result = read_postgres("host=/nonexistent/khive-sock dbname=shop user=x password=s3cret-pw", HistoricSqlConfig())
    failed = codes(result.findings)["connection_failed"]
    assert result.templates == [] and failed.severity == "error"
    assert "dbname=shop" in failed.message and "s3cret-pw" not in failed.message


def test_percentile_estimate_from_mean_and_stddev() -> None:
    assert estimate_percentiles(12.0, 0.0, 12.0, 12.0) == (12.0, 12.0)
    p50, p95 = estimate_percentiles(100.0, 150.0, 5.0, 4000.0)  # skewed: median below the mean, p95 well above
    assert p50 < 100.0 < p95 <= 4000.0
    assert estimate_percentiles(100.0, 1000.0, 20.0, 250.0) == (20.0, 250.0)  # clipped to what was observed


# ---- log files -------------------------------------------------------------------------------------------------


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_logfile_jsonl_aggregates_and_reports_malformed_lines(tmp_path: Path) -> None:
    start = NOW - timedelta(days=3)
    lines: list[str] = []
    for n in range(8):  # template A: 8 runs by 3 users, 2 failed
        lines.append(json.dumps({"sql": f"SELECT * FROM orders WHERE customer_id = {n} AND status = 's{n}'",
                                 "user": ["ana", "bo", "cy", "ana"][n % 4],
                                 "started_at": (start + timedelta(hours=n)).isoformat(),
                                 "duration_ms": 10 * (n + 1), "rows": n, "error": "timeout" if n in (2, 5) else None}))
    lines[2:2] = ["{not json", "[1, 2, 3]", "", json.dumps({"user": "x"})]
    lines.append(json.dumps({"sql": "SELECT 1 FROM orders", "started_at": "last tuesday"}))
    lines.append(json.dumps({"sql": "SELECT 1 FROM orders", "duration_ms": "fast"}))
    lines.append(json.dumps({"sql": "SELECT 1 FROM orders", "duration_ms": -3}))
    for n in range(5):  # template B: dbt, no users, no durations
        dbt = f'/* {{"app": "dbt", "invocation_id": "{n}"}} */'
        lines.append(json.dumps({"sql": f"{dbt} INSERT INTO marts.daily SELECT day, COUNT(*) FROM events "
                                        f"WHERE day > '2026-01-0{n + 1}' GROUP BY day"}))
    lines.append(json.dumps({"sql": "SET search_path = analytics"}))
    path = write_jsonl(tmp_path / "history.jsonl", lines)
    result = read_logfile(path, HistoricSqlConfig(), dialect="postgres", now=NOW)

    a = by_sql(result, "FROM orders")
    assert a.canonicalSql == "SELECT * FROM orders WHERE customer_id = ? AND status = ?"
    stats = a.stats
    assert (stats.executions, stats.distinctUsers, stats.errorRate, stats.rowsProduced) == (8, 3, 0.25, 28)
    assert a.topUsers == ["ana", "bo", "cy"]
    assert stats.firstSeen == "2026-05-08T12:00:00Z" and stats.lastSeen == "2026-05-08T19:00:00Z"
    assert (stats.p50RuntimeMs, stats.p95RuntimeMs) == (45.0, 76.5)  # exact below the reservoir size
    b = by_sql(result, "INTO marts.daily")
    assert b.markers == ["dbt"] and b.stats.executions == 5 and b.stats.distinctUsers == 0
    assert b.stats.p50RuntimeMs is None and b.stats.rowsProduced is None and b.stats.firstSeen is None
    assert len(result.templates) == 2

    found = [f for f in result.findings if f.code == "malformed_line"]
    assert [f.message for f in found] == [
        "history.jsonl line 3: not valid JSON (Expecting property name enclosed in double quotes, column 2)",
        "history.jsonl line 4: expected a JSON object, found list",
        "history.jsonl line 6: no sql",
        "history.jsonl line 13: started_at is not a timestamp: 'last tuesday'",
        "history.jsonl line 14: duration_ms must be a number, found 'fast'",
        "history.jsonl line 15: duration_ms must be a non-negative number, found -3",
    ]
    summary = codes(result.findings)["malformed_lines"]
    assert summary.severity == "warning"
    assert summary.message.startswith("6 of 20 records in history.jsonl were malformed")


def test_logfile_csv_with_multiline_sql_wrong_field_counts_and_error_text(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    rows = ["sql,user,started_at,duration_ms,rows,error"]
    for n in range(6):
        multiline = f"SELECT region,\n       SUM(amount)\nFROM sales\nWHERE day = '2026-05-0{n + 1}'\nGROUP BY region"
        rows.append(f'"{multiline}",'
                    f"ana,2026-05-0{n + 1}T08:00:00Z,{100 + n},{n},{'ERROR: canceling statement' if n == 0 else ''}")
    rows.insert(3, "SELECT 1 FROM sales,bo")  # two fields for six columns
    rows.append("")
    path.write_text("\n".join(rows), encoding="utf-8")
    result = read_logfile(path, HistoricSqlConfig(), dialect="postgres", now=NOW)
    (only,) = result.templates
    assert only.canonicalSql == "SELECT region, SUM(amount) FROM sales WHERE day = ? GROUP BY region"
    assert (only.stats.executions, only.stats.rowsProduced, only.stats.p50RuntimeMs) == (6, 15, 102.5)
    assert only.stats.errorRate == round(1 / 6, 6)
    (bad,) = [f for f in result.findings if f.code == "malformed_line"]
    assert bad.message == "history.csv line 12: expected 6 CSV fields, found 2"  # a record after two 5-line ones


def test_logfile_csv_without_sql_column_and_missing_file_are_findings(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    path.write_text("query,user\nSELECT 1,ana\n", encoding="utf-8")
    result = read_logfile(path, HistoricSqlConfig(), dialect="postgres")
    assert result.templates == [] and "no sql column" in codes(result.findings)["file_unreadable"].message
    missing = read_logfile(tmp_path / "nope.jsonl", HistoricSqlConfig(), dialect="postgres")
    assert codes(missing.findings)["file_unreadable"].severity == "error"


def test_logfile_gzip_window_and_detection_by_content(tmp_path: Path) -> None:
    records = [{"sql": "SELECT * FROM t WHERE a = 1", "started_at": (NOW - timedelta(days=days)).isoformat()}
               for days in (1, 2, 3, 4, 5, 200, 300)]
    path = tmp_path / "history.log.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(json.dumps(record) for record in records))
    result = read_logfile(path, HistoricSqlConfig(), dialect="postgres", now=NOW)
    (only,) = result.templates
    assert only.stats.executions == 5
    assert codes(result.findings)["outside_window"].message == "2 executions older than 90 days skipped"


def test_logfile_reservoir_is_bounded_deterministic_and_close(tmp_path: Path) -> None:
    rng = random.Random(11)
    path = write_jsonl(tmp_path / "big.jsonl", [
        json.dumps({"sql": f"SELECT * FROM events WHERE id = {n}", "duration_ms": rng.uniform(0, 1000)})
        for n in range(20_000)])
    first = read_logfile(path, HistoricSqlConfig(), dialect="postgres", reservoir_size=256, now=NOW).templates[0]
    again = read_logfile(path, HistoricSqlConfig(), dialect="postgres", reservoir_size=256, now=NOW).templates[0]
    assert first == again
    assert first.stats.executions == 20_000
    assert first.stats.p50RuntimeMs is not None and abs(first.stats.p50RuntimeMs - 500) < 80
    assert first.stats.p95RuntimeMs is not None and abs(first.stats.p95RuntimeMs - 950) < 40


def test_logfile_percentiles_weigh_each_raw_text_by_its_executions(tmp_path: Path) -> None:
    # one text run 7,500 times at 100 ms (its reservoir keeps 256 of them) and 2,500 literal variants
    # run once at 900 ms: three quarters of the executions took 100 ms, whatever the reservoirs kept
    heavy = [json.dumps({"sql": "SELECT * FROM events WHERE id = 1", "duration_ms": 100})] * 7_500
    light = [json.dumps({"sql": f"SELECT * FROM events WHERE id = {n + 2}", "duration_ms": 900}) for n in range(2_500)]
    path = write_jsonl(tmp_path / "mixed.jsonl", light[:1_000] + heavy + light[1_000:])
    (template,) = read_logfile(path, HistoricSqlConfig(), dialect="postgres", reservoir_size=256, now=NOW).templates
    assert (template.stats.executions, template.stats.p50RuntimeMs, template.stats.p95RuntimeMs) == (10_000, 100, 900)
    few = write_jsonl(tmp_path / "few.jsonl", [json.dumps({"sql": f"SELECT * FROM events WHERE id = {n % 3}",
                                                           "duration_ms": n * 10}) for n in range(10)])
    (exact,) = read_logfile(few, HistoricSqlConfig(), dialect="postgres", now=NOW).templates
    assert (exact.stats.p50RuntimeMs, exact.stats.p95RuntimeMs) == (45.0, 85.5)  # all ten, across three texts


def test_logfile_unparseable_sql_is_kept_and_flagged(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "odd.jsonl", [json.dumps({"sql": f"SELECT a FROM t WHERE ((a = {n}"})
                                                for n in range(6)])
    result = read_logfile(path, HistoricSqlConfig(), dialect="postgres", now=NOW)
    (only,) = result.templates
    assert only.markers == [PARSE_FALLBACK] and only.canonicalSql == "SELECT a FROM t WHERE ((a = ?"
    assert "parse_fallback" in codes(result.findings)


# ---- BigQuery: golden SQL and recorded rows --------------------------------------------------------------------

WAREHOUSE_CONFIG = HistoricSqlConfig.model_validate({"enabled": True, "windowDays": 90, "minExecutions": 5, "filters": {
    "serviceAccounts": [{"pattern": "^svc-bi@", "mode": "include"},
                        {"pattern": r"^(etl|fivetran)[-_]", "mode": "exclude"},
                        {"pattern": r"^dbt-runner@|^metabase_svc$", "mode": "mark-only"}]}})


def recorded(name: str) -> Rows:
    rows: Rows = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return rows


def test_golden_bigquery_history_sql() -> None:
    golden("bigquery_history.sql", bigquery_sql(WAREHOUSE_CONFIG, project="acme-analytics", region="US") + ";\n")


def test_golden_snowflake_history_sql() -> None:
    golden("snowflake_history.sql", snowflake_sql(WAREHOUSE_CONFIG) + ";\n")


def test_bigquery_reader_parses_recorded_rows() -> None:
    seen: list[str] = []

    def runner(query: str) -> Rows:
        seen.append(query)
        return recorded("bigquery_history_rows.json")

    result = read_bigquery(runner, WAREHOUSE_CONFIG, project="acme-analytics", region="US", now=NOW)
    assert seen == [bigquery_sql(WAREHOUSE_CONFIG, project="acme-analytics", region="US")]
    revenue = by_sql(result, "SUM(amount) AS revenue")
    assert revenue.stats.model_dump() == {
        "executions": 412, "distinctUsers": 9, "firstSeen": "2026-02-11T08:02:13.511000Z",
        "lastSeen": "2026-05-10T17:45:02.007000Z", "p50RuntimeMs": 1840.0, "p95RuntimeMs": 9120.0,
        "errorRate": round(3 / 412, 6), "rowsProduced": 2884}
    assert revenue.canonicalSql.endswith("WHERE order_date >= ? GROUP BY region ORDER BY revenue DESC")
    customers = by_sql(result, "crm.customers")  # two BigQuery hashes, one template: IN lists collapse
    assert customers.canonicalSql.endswith("WHERE customer_id IN (?)")
    assert (customers.stats.executions, customers.stats.distinctUsers) == (40, 3)
    assert (customers.stats.p50RuntimeMs, customers.stats.p95RuntimeMs, customers.stats.errorRate) == (390.0, 1200.0,
                                                                                                        0.025)
    assert customers.topUsers == ["fin@acme.com", "ana@acme.com", "gus@acme.com", "hal@acme.com"]
    assert (customers.stats.firstSeen, customers.stats.lastSeen) == ("2026-03-20T08:00:00Z", "2026-05-10T08:00:00Z")
    dbt = by_sql(result, "marts`.`fct_orders")
    assert dbt.markers == ["dbt", SERVICE_ACCOUNT] and dbt.stats.rowsProduced == 1_250_000
    looker = by_sql(result, "orders_status")
    assert looker.markers == ["looker"] and looker.stats.rowsProduced is None
    assert [t.stats.executions for t in result.templates] == [412, 240, 90, 40]  # SELECT 1, mostly failing: gone
    assert codes(result.findings)["filtered"].message.endswith("1 mostly-failing, 1 trivial-probe")


def test_bigquery_reader_reports_failures_instead_of_raising() -> None:
    def denied(query: str) -> Rows:
        raise RuntimeError("403 Access Denied: Table acme-analytics:region-us.INFORMATION_SCHEMA.JOBS_BY_PROJECT: "
                           "User does not have permission bigquery.jobs.listAll")

    result = read_bigquery(denied, HistoricSqlConfig(windowDays=365), project="acme-analytics")
    found = codes(result.findings)
    assert result.templates == [] and set(found) == {"window_exceeds_retention", "insufficient_privilege"}
    assert "roles/bigquery.resourceViewer" in found["insufficient_privilege"].fix


def test_bigquery_reader_warns_when_the_cap_is_reached() -> None:
    result = read_bigquery(lambda query: recorded("bigquery_history_rows.json"), WAREHOUSE_CONFIG, max_templates=7,
                           now=NOW)
    assert "result_truncated" in codes(result.findings)
    assert "LIMIT 7" in bigquery_sql(WAREHOUSE_CONFIG, max_templates=7)


# ---- Snowflake: golden SQL and recorded rows -------------------------------------------------------------------


def test_snowflake_reader_parses_recorded_rows() -> None:
    result = read_snowflake(lambda query: recorded("snowflake_history_rows.json"), WAREHOUSE_CONFIG, now=NOW)
    metabase = by_sql(result, '"ANALYTICS"."PUBLIC"."ORDERS"')
    assert metabase.markers == ["metabase", SERVICE_ACCOUNT] and metabase.topUsers == ["METABASE_SVC"]
    assert metabase.stats.firstSeen == "2026-03-04T09:12:44.512000Z"  # TIMESTAMP_LTZ, -08:00 in March
    assert metabase.stats.lastSeen == "2026-05-11T06:59:10.001000Z"
    orders = by_sql(result, "STATUS IN (?)")  # two parameterized hashes: Snowflake keeps IN lists apart
    assert orders.canonicalSql == \
        "SELECT ORDER_ID, TOTAL FROM ANALYTICS.PUBLIC.ORDERS WHERE STATUS IN (?) AND REGION = ?"
    assert (orders.stats.executions, orders.stats.distinctUsers, orders.stats.errorRate) == (60, 4, round(4 / 60, 6))
    assert orders.stats.p50RuntimeMs == round((230 * 44 + 150 * 16) / 60, 3) and orders.stats.p95RuntimeMs == 1500.0
    assert orders.topUsers == ["ANA", "BOB", "CY", "DI", "EVE"]
    redash = by_sql(result, "DATE_TRUNC('week'")
    assert redash.markers == ["redash"] and redash.topUsers == ["REDASH"]
    assert len(result.templates) == 3  # current_version(): a trivial probe


def test_snowflake_reader_falls_back_without_hash_columns() -> None:
    seen: list[str] = []

    def runner(query: str) -> Rows:
        seen.append(query)
        if "query_parameterized_hash" in query:
            raise RuntimeError("000904 (42000): SQL compilation error: error line 3 at position 11\n"
                               "invalid identifier 'QUERY_PARAMETERIZED_HASH'")
        return recorded("snowflake_history_rows.json")

    result = read_snowflake(runner, WAREHOUSE_CONFIG, now=NOW)
    assert len(seen) == 2 and f"{TEXT_KEY} AS template_key" in seen[1]
    assert codes(result.findings)["query_hash_unavailable"].fix == \
        "SELECT SYSTEM$ENABLE_BEHAVIOR_CHANGE_BUNDLE('2023_06');"
    assert len(result.templates) == 3


def test_snowflake_reader_reports_missing_privileges() -> None:
    def denied(query: str) -> Rows:
        raise RuntimeError("002003 (02000): SQL compilation error: Database 'SNOWFLAKE' does not exist or not "
                           "authorized.")

    result = read_snowflake(denied, WAREHOUSE_CONFIG)
    denial = codes(result.findings)["insufficient_privilege"]
    assert result.templates == [] and denial.fix.startswith("GRANT IMPORTED PRIVILEGES ON DATABASE SNOWFLAKE")


def test_logfile_csv_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes("\ufeffsql,user\n".encode() + b"SELECT a FROM t WHERE b = 1,ana\n" * 5)
    (only,) = read_logfile(path, HistoricSqlConfig(), dialect="postgres", now=NOW).templates
    assert (only.stats.executions, only.topUsers) == (5, ["ana"])
