"""BigQuery and Snowflake for real: the vendors' client libraries against local servers speaking their wire format.

google-cloud-bigquery talks to ``FakeBigQuery`` (jobs.query over REST, ``endpoint:`` + ``credentials:
anonymous``) and snowflake-connector-python to ``FakeSnowflake`` (login and query requests over HTTP, the
url's ``host``/``port``/``protocol``); both serve recorded answers of the documented shapes
(tests/warehouse_fakes.py). Everything goes through the dispatcher: ``scan.run``, ``sql.execute``,
``historic_sql.probe`` and ``historic_sql.ingest``. Without the extras these tests skip, unless
KHIVE_REQUIRE_CLIENTS=1 (CI), where they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from warehouse_fakes import (
    Failure,
    FakeBigQuery,
    FakeSnowflake,
    Result,
    fake_bigquery,
    fake_snowflake,
    result_of,
    snowflake_url,
)

from khive.bootstrap import open_runtime
from khive.connections.bigquery import BigQueryDriver
from khive.connections.config import ConnectionConfig
from khive.connections.snowflake import SnowflakeDriver
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from khive.scaffold import init_project
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.readers import bigquery as bq_history
from packs.historic_sql.readers import snowflake as sf_history

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).parents[1] / "connections" / "fixtures"
HISTORY = Path(__file__).parent / "historic_sql" / "fixtures"
Call = Callable[[str], Awaitable[dict[str, Any]]]
SCAN_MARK = re.compile(r"khive:scan")


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
        if os.environ.get("KHIVE_REQUIRE_CLIENTS") == "1":
            pytest.fail(f"KHIVE_REQUIRE_CLIENTS=1 but {module} is not installed (pip install 'khive[{extra}]')",
                        pytrace=False)
        pytest.skip(f"{module} is not installed (pip install 'khive[{extra}]')")


def recorded(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def recent(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded history rows moved into the last days, so today's ingest window keeps them."""
    now = datetime.now(UTC).replace(microsecond=0)
    moved = []
    for row in rows:
        keys = {key.lower(): key for key in row}
        moved.append({**row, keys["first_seen"]: now - timedelta(days=30), keys["last_seen"]: now - timedelta(days=1)})
    return moved


def project_with(root: Path, connection: str) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n" + connection))
    return root


def caller(runtime: Runtime) -> Call:
    async def call(text: str) -> dict[str, Any]:
        envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
        (result,) = envelope["results"]
        return dict(result["result"]) if result["ok"] else {"error": result["error"]}

    return call


# ---- BigQuery --------------------------------------------------------------------------------------------------

BQ_CATALOG_TYPES = {"catalog_name": "STRING", "schema_name": "STRING", "location": "STRING", "table_catalog": "STRING",
                    "table_schema": "STRING", "table_name": "STRING", "table_type": "STRING",
                    "column_name": "STRING", "ordinal_position": "INT64", "is_nullable": "STRING",
                    "data_type": "STRING", "column_default": "STRING", "description": "STRING",
                    "option_value": "STRING", "total_rows": "INT64", "constraint_schema": "STRING",
                    "constraint_name": "STRING", "constraint_type": "STRING",
                    "position_in_unique_constraint": "INT64"}
BQ_HISTORY_TYPES = {"template_key": "STRING", "sample_sql": "STRING", "executions": "INT64",
                    "distinct_users": "INT64", "first_seen": "TIMESTAMP", "last_seen": "TIMESTAMP",
                    "p50_ms": "INT64", "p95_ms": "INT64", "failures": "INT64", "rows_produced": "INT64",
                    "service_account_executions": "INT64", "top_users": "ARRAY<STRING>"}
BQ_CONFIG = ConnectionConfig(driver="bigquery", project="acme-analytics", region="US",
                             schemas={"exclude": ["scratch"]})
HISTORY_SETTINGS = HistoricSqlConfig(enabled=True, windowDays=90, minExecutions=2)


@pytest.fixture
def bigquery() -> Iterator[FakeBigQuery]:
    _require("google.cloud.bigquery", "bigquery")
    with fake_bigquery() as service:
        yield service


@pytest.fixture
async def bq_call(bigquery: FakeBigQuery, tmp_path: Path) -> AsyncIterator[Call]:
    root = project_with(tmp_path / "proj", f"""  bq:
    driver: bigquery
    project: acme-analytics
    region: US
    endpoint: {bigquery.url}
    credentials: anonymous
    statement_timeout_s: 40
    schemas: {{exclude: [scratch]}}
    historicSql: {{enabled: true, windowDays: 90, minExecutions: 2}}
""")
    runtime = open_runtime(root, {})
    yield caller(runtime)
    await runtime.aclose()


def record_bigquery_catalog(service: FakeBigQuery) -> None:
    results = recorded(FIXTURES / "bigquery_catalog.json")
    driver = BigQueryDriver("bq", BQ_CONFIG, {})
    for name, sql in {**driver.catalog_queries(), **driver.constraint_queries(["crm", "sales"])}.items():
        service.on(sql, result_of(results[name], BQ_CATALOG_TYPES))


def record_bigquery_samples(service: FakeBigQuery) -> None:
    region = [{"col": 0, "v": region, "n": n, "d": 2, "z": 0, "t": 10} for region, n in (("EMEA", 7), ("APAC", 3))]
    service.on(lambda sql: "khive:scan" in sql and "`customers`" in sql,  # its first sampled column: region
               result_of(region, {"col": "INT64", "v": "STRING", "n": "INT64", "d": "INT64", "z": "INT64",
                                  "t": "INT64"}))
    service.on(SCAN_MARK, Result([("col", "INT64"), ("v", "STRING"), ("n", "INT64"), ("d", "INT64"),
                                  ("z", "INT64"), ("t", "INT64")]))


async def test_bigquery_scan_runs_through_the_client_library(bq_call: Call, bigquery: FakeBigQuery,
                                                             tmp_path: Path) -> None:
    record_bigquery_catalog(bigquery)
    record_bigquery_samples(bigquery)
    report = await bq_call('scan.run(connection="bq")')
    assert "error" not in report, report
    assert (report["counts"]["tables"], report["counts"]["views"], report["counts"]["foreignKeys"]) == (2, 2, 1)
    run = tmp_path / "proj/raw-sources/bq/live-database" / report["syncId"]
    tables = {f"{t['db']}.{t['name']}": t for t in json.loads((run / "tables.json").read_text())["tables"]}
    orders = tables["sales.orders"]
    assert orders["comment"] == 'One row per order, "gift" orders included' and orders["estimatedRows"] == 98000
    assert orders["foreignKeys"][0]["refTable"] == "customers"
    region = next(column for column in tables["crm.customers"]["columns"] if column["name"] == "region")
    assert (region["samples"]["values"], region["samples"]["frequencies"]) == (["EMEA", "APAC"], [7, 3])
    # what went over the wire: one jobs.query per statement, standard SQL, the connection's timeout as the job's
    queries = [body for path, body in bigquery.requests if path.startswith("/bigquery/v2/projects/acme-analytics/")]
    assert len(queries) == len(bigquery.statements) and len(queries) >= 9
    assert {(body["useLegacySql"], body["jobTimeoutMs"], body["labels"]["khive"]) for body in queries} == {
        (False, "40000", "query")}


BQ_MATRIX = Result(
    [("n", "INT64"), ("big", "INT64"), ("price", "NUMERIC"), ("tiny", "BIGNUMERIC"), ("ratio", "FLOAT64"),
     ("nan", "FLOAT64"), ("name", "STRING"), ("flag", "BOOL"), ("raw", "BYTES"), ("at", "TIMESTAMP"),
     ("day", "DATE"), ("local", "DATETIME"), ("clock", "TIME"), ("doc", "JSON"), ("place", "GEOGRAPHY"),
     ("span", "INTERVAL"), ("tags", "ARRAY<INT64>"), ("home", "STRUCT<city STRING, zip INT64>")],
    [[1, 2**60, Decimal("12.50"), "0.000000000000000000000000000000000000001", 0.1, float("nan"), "Ann", True,
      b"\x00\xff", datetime(2024, 3, 10, 12, 0, 0, 123456, tzinfo=UTC), date(2024, 3, 10), datetime(2024, 3, 10, 12, 0),
      time(12, 34, 56, 789000), '{"a": 1.5, "b": 12345678901234567890}', "POINT(1 2)", "1-2 3 4:05:06.5", [1, 2],
      {"city": "Oslo", "zip": 150}],
     [None] * 18, [None] * 18])


async def test_bigquery_sql_execute_returns_every_type_by_the_value_rule(bq_call: Call,
                                                                         bigquery: FakeBigQuery) -> None:
    bigquery.on(re.compile(r"FROM matrix"), BQ_MATRIX)
    result = await bq_call('sql.execute(connection="bq", sql="SELECT * FROM matrix", limit=2, timeout_s=5)')
    assert [column["type"] for column in result["columns"]] == [kind.split("<")[0] if kind.startswith("STRUCT")
                                                                else kind for _, kind in BQ_MATRIX.columns]
    assert result["rows"][0] == [
        1, "1152921504606846976", "12.50", "0.000000000000000000000000000000000000001", 0.1, "NaN", "Ann", True,
        "\\x00ff", "2024-03-10T12:00:00.123456+00:00", "2024-03-10", "2024-03-10T12:00:00", "12:34:56.789",
        {"a": 1.5, "b": "12345678901234567890"}, "POINT(1 2)", "P1Y2M3DT4H5M6.5S", [1, 2], {"city": "Oslo", "zip": 150}]
    assert result["rows"][1] == [None] * 16 + [[], None]  # BigQuery has no NULL arrays
    assert result["truncated"] is True and result["timeout"] == {"seconds": 5, "source": "request"}
    body = bigquery.requests[-1][1]
    assert (body["maxResults"], body["jobTimeoutMs"]) == (3, "5000")  # the limit plus one row, the agent's timeout


@pytest.mark.parametrize(("failure", "code", "words"), [
    (Failure("Access Denied: Table acme-analytics:sales.orders: User does not have permission to query table",
             status=403, reason="accessDenied"), "permission_denied", "Access Denied"),
    (Failure("Job timed out after 5 sec", status=400, reason="timeout"), "statement_timeout", "the limit was"),
    (Failure("Unrecognized name: nope at [1:8]", status=400, reason="invalidQuery"), "query_failed",
     "Unrecognized name"),
    (Failure("Request had invalid authentication credentials.", status=401, reason="authError"),
     "connection_failed", "cannot reach BigQuery"),
])
async def test_bigquery_errors_keep_the_service_reason(bq_call: Call, bigquery: FakeBigQuery, failure: Failure,
                                                       code: str, words: str) -> None:
    bigquery.on(re.compile("orders"), failure)
    error = (await bq_call('sql.execute(connection="bq", sql="SELECT nope FROM sales.orders")'))["error"]
    assert error["code"] == code and words in error["message"], error
    assert "/bigquery/v2/" not in error["message"]  # the service's words, not the request line


def record_bigquery_probe(service: FakeBigQuery, *, jobs: int = 1203, history: Failure | None = None) -> None:
    queries = bq_history.probe_sql(HISTORY_SETTINGS, project="acme-analytics", region="US")
    service.on(queries["catalog"], result_of([{"datasets": 3}], {"datasets": "INT64"}))
    service.on(queries["history"], history or result_of(
        [{"jobs": jobs, "users": 14 if jobs else 0, "latest": datetime(2026, 5, 10, 17, 45, tzinfo=UTC) if jobs
          else None}], {"jobs": "INT64", "users": "INT64", "latest": "TIMESTAMP"}))


async def test_bigquery_probe_earns_its_ok_by_reading_the_job_history(bq_call: Call, bigquery: FakeBigQuery) -> None:
    record_bigquery_probe(bigquery)
    result = await bq_call('historic_sql.probe(connection="bq")')
    assert result["status"] == "ok", result
    found = {finding["code"]: finding for finding in result["findings"]}
    assert found["catalog_visible"]["message"].startswith("3 datasets visible")
    assert found["history_readable"]["message"].startswith("1203 query jobs by 14 users in the last 90 days")
    assert set(bq_history.probe_sql(HISTORY_SETTINGS, project="acme-analytics", region="US").values()) <= set(
        bigquery.statements)


async def test_khive_doctor_probes_the_bigquery_history(bq_call: Call, bigquery: FakeBigQuery, tmp_path: Path) -> None:
    record_bigquery_probe(bigquery)
    done = subprocess.run([sys.executable, "-m", "khive.cli", "--project", str(tmp_path / "proj"), "doctor", "--json"],
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                               "KHIVE_NO_DAEMON": "1"}, capture_output=True, text=True, timeout=180, check=False)
    checks = {check["request"]: check for check in json.loads(done.stdout)["checks"]}
    probe = checks['historic_sql.probe(connection="bq")']
    assert probe["ok"] and probe["result"]["status"] == "ok", probe


async def test_bigquery_probe_names_what_to_grant(bq_call: Call, bigquery: FakeBigQuery) -> None:
    record_bigquery_probe(bigquery, history=Failure(
        "Access Denied: Table acme-analytics:region-us.INFORMATION_SCHEMA.JOBS_BY_PROJECT: User does not have "
        "permission bigquery.jobs.listAll", status=403, reason="accessDenied"))
    result = await bq_call('historic_sql.probe(connection="bq")')
    assert result["status"] == "error"
    denied = next(f for f in result["findings"] if f["code"] == "insufficient_privilege")
    assert "roles/bigquery.resourceViewer" in denied["fix"] and "bigquery.jobs.listAll" in denied["message"]


async def test_bigquery_probe_without_history_is_a_warning(bq_call: Call, bigquery: FakeBigQuery) -> None:
    record_bigquery_probe(bigquery, jobs=0)
    result = await bq_call('historic_sql.probe(connection="bq")')
    assert result["status"] == "warning"
    assert next(f for f in result["findings"] if f["code"] == "no_history")["fix"].startswith("set region:")


async def test_bigquery_ingest_reads_the_job_history(bq_call: Call, bigquery: FakeBigQuery) -> None:
    record_bigquery_catalog(bigquery)
    bigquery.on(SCAN_MARK, Result([("col", "INT64"), ("v", "STRING"), ("n", "INT64"), ("d", "INT64"),
                                   ("z", "INT64"), ("t", "INT64")]))
    bigquery.on(bq_history.aggregation_sql(HISTORY_SETTINGS, project="acme-analytics", region="US"),
                result_of(recent(recorded(HISTORY / "bigquery_history_rows.json")), BQ_HISTORY_TYPES))
    assert "error" not in await bq_call('scan.run(connection="bq")')
    ingested = await bq_call('historic_sql.ingest(connection="bq")')
    assert "error" not in ingested, ingested
    assert ingested["counts"]["templates"] == 4, ingested["findings"]
    orders = await bq_call('historic_sql.usage(connection="bq", table="sales.orders")')
    assert orders["totals"]["executions"] == 412 + 240 + 90  # the revenue report, Looker's status count, dbt's build


# ---- Snowflake -------------------------------------------------------------------------------------------------

SF_CATALOG_TYPES = {"TABLE_CATALOG": "text", "TABLE_SCHEMA": "text", "TABLE_NAME": "text", "TABLE_TYPE": "text",
                    "ROW_COUNT": "fixed", "COMMENT": "text", "COLUMN_NAME": "text", "ORDINAL_POSITION": "fixed",
                    "IS_NULLABLE": "text", "DATA_TYPE": "text", "CHARACTER_MAXIMUM_LENGTH": "fixed",
                    "NUMERIC_PRECISION": "fixed", "NUMERIC_SCALE": "fixed", "COLUMN_DEFAULT": "text",
                    "created_on": "text", "database_name": "text", "schema_name": "text",
                    "table_name": "text", "column_name": "text", "key_sequence": "fixed", "constraint_name": "text",
                    "rely": "text", "comment": "text", "pk_database_name": "text", "pk_schema_name": "text",
                    "pk_table_name": "text", "pk_column_name": "text", "fk_database_name": "text",
                    "fk_schema_name": "text", "fk_table_name": "text", "fk_column_name": "text",
                    "update_rule": "text", "delete_rule": "text", "fk_name": "text", "pk_name": "text",
                    "deferrability": "text"}
SF_HISTORY_TYPES = {"TEMPLATE_KEY": "text", "SAMPLE_SQL": "text", "EXECUTIONS": "fixed", "DISTINCT_USERS": "fixed",
                    "FIRST_SEEN": "timestamp_tz", "LAST_SEEN": "timestamp_tz", "P50_MS": "real", "P95_MS": "real",
                    "FAILURES": "fixed", "ROWS_PRODUCED": "fixed", "SERVICE_ACCOUNT_EXECUTIONS": "fixed",
                    "TOP_USERS": "array"}
SF_CONFIG = ConnectionConfig(driver="snowflake", url="env:SNOWFLAKE_URL", schemas={"exclude": ["staging"]})


@pytest.fixture
def snowflake() -> Iterator[FakeSnowflake]:
    _require("snowflake.connector", "snowflake")
    with fake_snowflake() as service:
        yield service


async def open_snowflake(root: Path, service: FakeSnowflake, *, password: str = "s3cret"
                         ) -> tuple[Runtime, Call]:
    project_with(root, """  snow:
    driver: snowflake
    url: env:SNOWFLAKE_URL
    statement_timeout_s: 40
    schemas: {exclude: [staging]}
    historicSql: {enabled: true, windowDays: 90, minExecutions: 2}
""")
    runtime = open_runtime(root, {"SNOWFLAKE_URL": snowflake_url(service, password=password)})
    return runtime, caller(runtime)


@pytest.fixture
async def sf_call(snowflake: FakeSnowflake, tmp_path: Path) -> AsyncIterator[Call]:
    runtime, call = await open_snowflake(tmp_path / "proj", snowflake)
    yield call
    await runtime.aclose()


def record_snowflake_catalog(service: FakeSnowflake) -> None:
    results = recorded(FIXTURES / "snowflake_catalog.json")
    for name, sql in SnowflakeDriver("snow", SF_CONFIG, {}).catalog_queries().items():
        service.on(sql, result_of(results[name], SF_CATALOG_TYPES))
    service.on(SCAN_MARK, Result([("COL", "fixed"), ("V", "text"), ("N", "fixed"), ("D", "fixed"), ("Z", "fixed"),
                                  ("T", "fixed")]))


async def test_snowflake_scan_logs_in_and_reads_the_catalog(sf_call: Call, snowflake: FakeSnowflake,
                                                            tmp_path: Path) -> None:
    record_snowflake_catalog(snowflake)
    report = await sf_call('scan.run(connection="snow")')
    assert "error" not in report, report
    run = tmp_path / "proj/raw-sources/snow/live-database" / report["syncId"]
    tables = {f"{t['db']}.{t['name']}": t for t in json.loads((run / "tables.json").read_text())["tables"]}
    orders = tables["SALES.ORDERS"]
    assert orders["foreignKeys"][0]["refTable"] == "CUSTOMERS" and orders["estimatedRows"] == 98000
    assert "STAGING.RAW_ORDERS" not in tables
    (login,) = snowflake.logins
    assert (login["ACCOUNT_NAME"], login["LOGIN_NAME"]) == ("acme-test", "reader")
    # the session: autocommit off, so every statement is followed by its rollback
    assert snowflake.statements.count("ROLLBACK") == len([s for s in snowflake.statements if s != "ROLLBACK"])


SF_MATRIX = Result(
    [("N", "fixed"), ("PRICE", "fixed(12,2)"), ("BIG", "fixed"), ("RATIO", "real"), ("NAME", "text"),
     ("FLAG", "boolean"), ("DAY", "date"), ("CLOCK", "time"), ("LOCAL", "timestamp_ntz"), ("AT", "timestamp_ltz"),
     ("ZONED", "timestamp_tz"), ("RAW", "binary"), ("DOC", "variant"), ("LIST", "array")],
    [[7, Decimal("12.50"), 12345678901234567890123, 1.5, "Ann", True, date(2024, 3, 10), time(12, 34, 56, 789000),
      datetime(2024, 3, 10, 12, 0, 0, 123456), datetime(2024, 3, 10, 12, 0, tzinfo=UTC),
      datetime(2024, 3, 10, 12, 0, tzinfo=timezone(timedelta(hours=-8))), b"\x00\xff",
      '{"a": 1.10, "b": 12345678901234567890}', [1, 2]],
     [None] * 14])


async def test_snowflake_sql_execute_returns_every_type_by_the_value_rule(sf_call: Call,
                                                                          snowflake: FakeSnowflake) -> None:
    snowflake.on(re.compile("FROM MATRIX", re.IGNORECASE), SF_MATRIX)
    result = await sf_call('sql.execute(connection="snow", sql="SELECT * FROM matrix", timeout_s=5)')
    assert [column["type"] for column in result["columns"]] == [
        "NUMBER", "NUMBER", "NUMBER", "FLOAT", "VARCHAR", "BOOLEAN", "DATE", "TIME", "TIMESTAMP_NTZ",
        "TIMESTAMP_LTZ", "TIMESTAMP_TZ", "BINARY", "VARIANT", "ARRAY"]
    assert result["rows"] == [
        [7, "12.50", "12345678901234567890123", 1.5, "Ann", True, "2024-03-10", "12:34:56.789",
         "2024-03-10T12:00:00.123456", "2024-03-10T12:00:00+00:00", "2024-03-10T12:00:00-08:00", "\\x00ff",
         {"a": 1.1, "b": "12345678901234567890"}, [1, 2]],
        [None] * 14]
    # the agent's timeout_s became the session's statement timeout before the statement ran
    ran = [s for s in snowflake.statements if s != "ROLLBACK"]
    assert ran[-2:] == ["ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 5", ran[-1]] and "matrix" in ran[-1]


@pytest.mark.parametrize(("failure", "code"), [
    (Failure("Statement reached its statement or warehouse timeout of 40 second(s) and was canceled.",
             code="000630", sqlstate="57014"), "statement_timeout"),
    (Failure("Insufficient privileges to operate on table 'ORDERS'", code="003001", sqlstate="42501"),
     "permission_denied"),
    (Failure("SQL compilation error: error line 1 at position 7 invalid identifier 'NOPE'", code="000904",
             sqlstate="42000"), "query_failed"),
])
async def test_snowflake_errors_map_to_khive_codes(sf_call: Call, snowflake: FakeSnowflake, failure: Failure,
                                                   code: str) -> None:
    snowflake.on(re.compile("ORDERS"), failure)
    error = (await sf_call('sql.execute(connection="snow", sql="SELECT NOPE FROM SALES.ORDERS")'))["error"]
    assert error["code"] == code and failure.message in error["message"], error


async def test_snowflake_login_failure_names_the_account_never_the_password(tmp_path: Path) -> None:
    _require("snowflake.connector", "snowflake")
    refusal = Failure("Incorrect username or password was specified.", code="390100", sqlstate="08004")
    with fake_snowflake(login_error=refusal) as service:
        runtime, call = await open_snowflake(tmp_path / "proj", service, password="hunter2-secret")
        try:
            error = (await call('sql.execute(connection="snow", sql="SELECT 1")'))["error"]
            probed = await call('historic_sql.probe(connection="snow")')
        finally:
            await runtime.aclose()
    assert error["code"] == "connection_failed" and "acme-test" in error["message"], error
    assert "Incorrect username or password" in error["message"] and "hunter2" not in json.dumps(error)
    assert probed["status"] == "error" and probed["findings"][-1]["code"] == "connection_failed"


def record_snowflake_probe(service: FakeSnowflake, *, warehouse: str | None = "WH",
                           history: Failure | None = None) -> None:
    queries = sf_history.probe_sql(HISTORY_SETTINGS)
    service.on(queries["session"], result_of([{"ROLE": "READER", "WAREHOUSE": warehouse, "USER_NAME": "KHIVE"}],
                                             {"ROLE": "text", "WAREHOUSE": "text", "USER_NAME": "text"}))
    service.on(queries["catalog"], result_of([{"TABLES": 42}], {"TABLES": "fixed"}))
    service.on(queries["history"], history or result_of(
        [{"QUERIES": 5120, "USERS": 9, "LATEST": datetime(2026, 5, 10, 23, 59, tzinfo=UTC), "HASHED": 5120}],
        {"QUERIES": "fixed", "USERS": "fixed", "LATEST": "timestamp_ltz", "HASHED": "fixed"}))


async def test_snowflake_probe_earns_its_ok_by_reading_query_history(sf_call: Call, snowflake: FakeSnowflake) -> None:
    record_snowflake_probe(snowflake)
    result = await sf_call('historic_sql.probe(connection="snow")')
    assert result["status"] == "ok", result
    found = {finding["code"]: finding for finding in result["findings"]}
    assert found["catalog_visible"]["message"] == "42 tables visible to role READER"
    assert found["history_readable"]["message"].startswith("5120 queries by 9 users in the last 90 days")


async def test_snowflake_probe_names_the_grant_for_the_sessions_role(sf_call: Call, snowflake: FakeSnowflake) -> None:
    record_snowflake_probe(snowflake, history=Failure(
        "SQL compilation error: Database 'SNOWFLAKE' does not exist or not authorized.", code="002003"))
    result = await sf_call('historic_sql.probe(connection="snow")')
    assert result["status"] == "error"
    denied = next(f for f in result["findings"] if f["code"] == "insufficient_privilege")
    assert denied["fix"].startswith("GRANT IMPORTED PRIVILEGES ON DATABASE SNOWFLAKE TO ROLE READER;")


async def test_snowflake_probe_without_a_warehouse_stops_with_the_fix(sf_call: Call,
                                                                      snowflake: FakeSnowflake) -> None:
    record_snowflake_probe(snowflake, warehouse=None)
    result = await sf_call('historic_sql.probe(connection="snow")')
    assert result["status"] == "error"
    assert result["findings"][-1]["code"] == "no_warehouse" and "warehouse=NAME" in result["findings"][-1]["fix"]
    assert sf_history.probe_sql(HISTORY_SETTINGS)["history"] not in snowflake.statements


async def test_snowflake_ingest_reads_query_history(sf_call: Call, snowflake: FakeSnowflake) -> None:
    record_snowflake_catalog(snowflake)
    rows = recent(recorded(HISTORY / "snowflake_history_rows.json"))
    for row in rows:  # the recorded queries read PUBLIC.ORDERS; the recorded catalog calls it SALES.ORDERS
        row["SAMPLE_SQL"] = row["SAMPLE_SQL"].replace('"PUBLIC"', '"SALES"').replace(".PUBLIC.", ".SALES.")
    snowflake.on(sf_history.aggregation_sql(HISTORY_SETTINGS), result_of(rows, SF_HISTORY_TYPES))
    assert "error" not in await sf_call('scan.run(connection="snow")')
    ingested = await sf_call('historic_sql.ingest(connection="snow")')
    assert "error" not in ingested, ingested
    orders = await sf_call('historic_sql.usage(connection="snow", table="SALES.ORDERS")')
    # Metabase's status count, the two IN-list variants as one template, the weekly report; version() is noise
    assert (ingested["counts"]["templates"], orders["totals"]["executions"]) == (3, 318 + 44 + 16 + 52)
