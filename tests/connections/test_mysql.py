"""The MySQL/MariaDB driver against a real throwaway MariaDB (tests/mysqlserver.py), through the dispatcher.

The reader logs in as a user with SELECT on one database only; the write checks log in as root, so
what refuses the write is the read-only session, not a missing privilege.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mysqlserver import Server

from khive.bootstrap import open_runtime
from khive.connections.config import ConnectionConfig
from khive.connections.driver import open_driver
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import KhiveError
from khive.scaffold import init_project

Call = Callable[[str], Awaitable[dict[str, Any]]]

SHOP = """
CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(80) NOT NULL, email VARCHAR(120),
                        segment ENUM('consumer', 'smb', 'enterprise') NOT NULL DEFAULT 'consumer')
  COMMENT 'Everyone who ever bought';
CREATE TABLE orders (id BIGINT UNSIGNED PRIMARY KEY, customer_id INT NOT NULL,
                     status VARCHAR(20) NOT NULL DEFAULT 'placed' COMMENT 'placed, shipped or refunded',
                     total DECIMAL(12, 2), placed_at DATETIME,
                     CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id));
CREATE VIEW order_totals AS SELECT customer_id, SUM(total) AS total FROM orders GROUP BY customer_id;
INSERT INTO customers VALUES (1, 'Ann', 'ann@example.com', 'smb'), (2, 'Bo', 'bo@example.com', 'consumer'),
                             (3, 'Cy', NULL, 'enterprise');
INSERT INTO orders VALUES (10, 1, 'shipped', 12.50, '2026-03-01 10:00:00'), (11, 1, 'shipped', 99.99, NULL),
                          (12, 2, 'placed', 5.00, '2026-03-02 09:30:00'), (13, 3, 'refunded', 0.10, NULL);
CREATE TABLE matrix (
  n INT, big BIGINT UNSIGNED, price DECIMAL(12, 2), ratio DOUBLE, single FLOAT, flag TINYINT(1), bits BIT(4),
  yr YEAR, label ENUM('a', 'b'), tags SET('x', 'y', 'z'), doc JSON, raw VARBINARY(8), body BLOB, note TEXT,
  day DATE, local DATETIME(3), instant TIMESTAMP NULL, clock TIME(1), span TIME, place POINT);
"""
MATRIX_ROW = ("INSERT INTO matrix VALUES (-7, 18446744073709551615, 12.50, 0.1, 3.14, 1, b'0101', 2024, 'b', 'x,z', "
              "'{\"a\": 1.10, \"b\": 12345678901234567890}', X'00FF', X'CAFE', 'héllo', '2024-03-10', "
              "'2024-03-10 12:34:56.789', '2024-03-10 12:00:00', '12:34:56.5', '-30:00:00', "
              "ST_GeomFromText('POINT(1 2)'))")
ZERO_DATES = "INSERT INTO matrix (n, day, local) VALUES (0, '0000-00-00', '0000-00-00 00:00:00')"


@pytest.fixture
def shop(mysql_server: Server) -> Iterator[dict[str, str]]:
    import pymysql

    name = f"shop_{uuid.uuid4().hex[:8]}"
    password = "r3ader-" + uuid.uuid4().hex[:6]
    root = pymysql.connect(unix_socket=str(mysql_server.socket), user="root", autocommit=True)
    with root.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
        cursor.execute(f"USE {name}")
        cursor.execute("SET SESSION sql_mode = ''")  # zero dates, as old applications still write them
        for statement in [*SHOP.split(";"), MATRIX_ROW, ZERO_DATES, "INSERT INTO matrix (n) VALUES (NULL)"]:
            if statement.strip():
                cursor.execute(statement)
        cursor.execute(f"CREATE USER '{name}'@'localhost' IDENTIFIED BY '{password}'")
        cursor.execute(f"GRANT SELECT, SHOW VIEW ON {name}.* TO '{name}'@'localhost'")
        cursor.execute(f"ANALYZE TABLE {name}.customers, {name}.orders")
    socket = mysql_server.socket
    yield {"name": name, "password": password,
           "reader": f"mysql://{name}:{password}@localhost/{name}?unix_socket={socket}",
           "root": f"mysql://root@localhost/{name}?unix_socket={socket}"}
    with root.cursor() as cursor:
        cursor.execute(f"DROP DATABASE {name}")
        cursor.execute(f"DROP USER '{name}'@'localhost'")
    root.close()


@pytest.fixture
async def call(shop: dict[str, str], tmp_path: Path) -> AsyncIterator[Call]:
    root = tmp_path / "proj"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n  shop:\n    driver: mysql\n"
                                                 "    url: env:SHOP_URL\n    statement_timeout_s: 20\n"))
    runtime = open_runtime(root, {"SHOP_URL": shop["reader"]})

    async def call(text: str) -> dict[str, Any]:
        envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
        (result,) = envelope["results"]
        return dict(result["result"]) if result["ok"] else {"error": result["error"]}

    yield call
    await runtime.aclose()


def driver_for(url: str, timeout: float = 20) -> Any:
    return open_driver("shop", ConnectionConfig(driver="mysql", url="env:SHOP_URL", statement_timeout_s=timeout),
                       secrets={"url": url})


pytestmark = pytest.mark.anyio


async def test_mysql_scan_reads_tables_keys_comments_and_samples(call: Call, shop: dict[str, str],
                                                                 tmp_path: Path) -> None:
    report = await call('scan.run(connection="shop")')
    assert "error" not in report, report
    assert (report["counts"]["tables"], report["counts"]["views"], report["counts"]["foreignKeys"]) == (3, 1, 1)
    run = tmp_path / "proj/raw-sources/shop/live-database" / report["syncId"]
    tables = {f"{t['db']}.{t['name']}": t for t in json.loads((run / "tables.json").read_text())["tables"]}
    name = shop["name"]
    assert set(tables) == {f"{name}.customers", f"{name}.orders", f"{name}.matrix", f"{name}.order_totals"}
    customers, orders = tables[f"{name}.customers"], tables[f"{name}.orders"]
    assert customers["comment"] == "Everyone who ever bought" and customers["estimatedRows"] == 3
    assert tables[f"{name}.order_totals"]["kind"] == "view"
    assert orders["foreignKeys"] == [{"name": "fk_orders_customer", "columns": ["customer_id"], "refCatalog": None,
                                      "refDb": name, "refTable": "customers", "refColumns": ["id"]}]
    columns = {column["name"]: column for column in orders["columns"]}
    assert columns["id"]["primaryKey"] and columns["id"]["normalizedType"] == "integer"
    assert columns["status"]["comment"] == "placed, shipped or refunded"
    assert columns["total"]["nativeType"] == "decimal(12,2)" and columns["total"]["normalizedType"] == "number"
    assert columns["status"]["samples"]["values"] == ["shipped", "placed", "refunded"]
    assert columns["total"]["samples"]["values"][0] in ("0.10", "5.00", "12.50", "99.99")  # exact decimals
    segment = next(c for c in customers["columns"] if c["name"] == "segment")
    assert segment["normalizedType"] == "string" and sorted(segment["samples"]["values"]) == [
        "consumer", "enterprise", "smb"]
    email = next(c for c in customers["columns"] if c["name"] == "email")
    assert email["samples"]["skipped"] == "sensitive-name"
    probe = await call('historic_sql.probe(connection="shop")')
    assert probe["status"] == "warning" and probe["findings"][-1]["code"] == "no_history_source"


async def test_mysql_values_follow_the_value_rule(call: Call, mysql_server: Server) -> None:
    result = await call('sql.execute(connection="shop", sql="SELECT * FROM matrix ORDER BY n DESC", limit=2)')
    assert "error" not in result, result
    assert result["truncated"] is True
    names = [column["name"] for column in result["columns"]]
    row = dict(zip(names, result["rows"][0], strict=True))
    mariadb = "mariadb" in mysql_server.version.lower()
    assert row == {
        "n": 0, "big": None, "price": None, "ratio": None, "single": None, "flag": None, "bits": None, "yr": None,
        "label": None, "tags": None, "doc": None, "raw": None, "body": None, "note": None,
        "day": "0000-00-00", "local": "0000-00-00 00:00:00.000",  # zero dates are no date: MySQL's own text
        "instant": None, "clock": None, "span": None, "place": None}
    row = dict(zip(names, result["rows"][1], strict=True))
    place = row.pop("place")
    assert place.startswith("\\x") and place.endswith("000000000000f03f0000000000000040")  # WKB of POINT(1 2)
    assert row == {
        "n": -7, "big": "18446744073709551615", "price": "12.50", "ratio": 0.1, "single": 3.14, "flag": 1,
        "bits": "0101", "yr": 2024, "label": "b", "tags": "x,z",
        # MariaDB's JSON is a LONGTEXT alias and comes back as its text; MySQL's JSON type as the value
        "doc": '{"a": 1.10, "b": 12345678901234567890}' if mariadb else {"a": 1.1, "b": "12345678901234567890"},
        "raw": "\\x00ff", "body": "\\xcafe", "note": "héllo", "day": "2024-03-10", "local": "2024-03-10T12:34:56.789",
        "instant": "2024-03-10T12:00:00+00:00", "clock": "12:34:56.5",
        "span": "P-1DT-6H"}  # -30:00:00 is no time of day: an interval, each field with its sign
    types = dict(zip(names, [column["type"] for column in result["columns"]], strict=True))
    assert [types[name] for name in ("price", "big", "bits", "day", "label", "raw", "body", "note")] == [
        "DECIMAL", "BIGINT", "BIT", "DATE", "CHAR", "VARBINARY", "BLOB", "TEXT"]


async def test_mysql_semantic_layer_query_by_month(call: Call) -> None:
    assert "error" not in await call('scan.run(connection="shop")')
    assert "error" not in await call('sl.bootstrap(connection="shop")')
    result = await call('sl.query(connection="shop", measures=["orders.orders_count"], '
                        'dimensions=["orders.placed_at"], time_grain="month", include=["sql"])')
    assert "error" not in result, result
    # two orders in March 2026 (DATE_TRUNC rendered for MySQL by sqlglot), two without a date
    assert sorted(result["rows"], key=lambda row: str(row[0])) == [["2026-03-01", 2], [None, 2]]


async def test_mysql_agent_sql_goes_through_the_gate(call: Call) -> None:
    for sql in ("DELETE FROM orders", "SET SESSION TRANSACTION READ WRITE", "SELECT * FROM orders FOR UPDATE"):
        refused = await call(f'sql.execute(connection="shop", sql="{sql}")')
        assert refused["error"]["code"] == "sql_refused", sql
    slept = await call('sql.execute(connection="shop", sql="SELECT SLEEP(10)")')
    assert slept["error"]["code"] == "sql_refused" and "sleep()" in slept["error"]["message"]
    counted = await call('sql.execute(connection="shop", sql="SELECT status, COUNT(*) AS n FROM orders '
                         'GROUP BY status ORDER BY n DESC, status")')
    assert counted["rows"] == [["shipped", 2], ["placed", 1], ["refunded", 1]]


@pytest.mark.parametrize("sql", ["INSERT INTO orders VALUES (99, 1, 'placed', 1.00, NULL)",
                                 "CREATE TABLE scratch (a INT)"])
def test_mysql_session_refuses_writes_even_for_root(shop: dict[str, str], sql: str) -> None:
    driver = driver_for(shop["root"])
    try:
        with pytest.raises(KhiveError) as caught:
            driver.execute(sql, limit=10, timeout_s=5)
        assert caught.value.code in ("read_only_violation", "query_failed"), caught.value.message
        assert "read only" in caught.value.message.lower() or "READ ONLY" in caught.value.message, \
            caught.value.message
        assert driver.execute("SELECT COUNT(*) FROM orders", limit=1, timeout_s=5).rows == [[4]]
    finally:
        driver.close()


def test_mysql_one_statement_per_call_and_a_statement_timeout(shop: dict[str, str]) -> None:
    driver = driver_for(shop["reader"])
    try:
        with pytest.raises(KhiveError) as caught:
            driver.execute("SELECT 1; SELECT 2", limit=10, timeout_s=5)
        assert caught.value.code == "query_failed"  # the server parses one statement: the rest is a syntax error
        with pytest.raises(KhiveError) as caught:
            driver.execute("SELECT SLEEP(5) FROM orders", limit=10, timeout_s=0.5)
        assert caught.value.code == "statement_timeout" and caught.value.details["timeout_s"] == 0.5
        assert driver.execute("SELECT 1 AS one", limit=1, timeout_s=5).rows == [[1]]  # the session survives
    finally:
        driver.close()


def test_mysql_connection_failure_names_the_target_never_the_password(shop: dict[str, str]) -> None:
    wrong = shop["reader"].replace(shop["password"], "not-the-password-xyz")
    driver = driver_for(wrong)
    with pytest.raises(KhiveError) as caught:
        driver.execute("SELECT 1", limit=1, timeout_s=5)
    assert caught.value.code == "connection_failed"
    assert shop["name"] in caught.value.message and "not-the-password-xyz" not in caught.value.message


def test_mysql_catalog_is_four_queries_whatever_the_tables(shop: dict[str, str], mysql_server: Server) -> None:
    import pymysql

    root = pymysql.connect(unix_socket=str(mysql_server.socket), user="root", database=shop["name"], autocommit=True)
    with root.cursor() as cursor:
        for i in range(40):
            cursor.execute(f"CREATE TABLE wide_{i} (id INT PRIMARY KEY, customer_id INT REFERENCES customers (id))")
    root.close()
    driver = driver_for(shop["root"])
    sent: list[str] = []
    original = driver._fetch

    def counting(queries: list[tuple[str, Any]]) -> Any:
        sent.extend(sql for sql, _ in queries)
        return original(queries)

    driver._fetch = counting
    try:
        snapshot = driver.read_catalog()
    finally:
        driver.close()
    assert len(snapshot.tables) == 44 and len(sent) == 4
    assert {table.db for table in snapshot.tables} == {shop["name"]}  # root sees mysql, sys, ...: never scanned


def test_mysql_without_a_database_scans_what_schemas_include_names(shop: dict[str, str]) -> None:
    url = shop["root"].replace(f"/{shop['name']}?", "/?")
    for schemas, expected in (({"include": [shop["name"]]}, {shop["name"]}), ({"include": ["mysql", "sys"]}, set())):
        config = ConnectionConfig(driver="mysql", url="env:SHOP_URL", schemas=schemas)
        driver = open_driver("shop", config, secrets={"url": url})
        try:
            assert {table.db for table in driver.read_catalog().tables} == expected
        finally:
            driver.close()


async def test_mysql_history_comes_from_a_query_log(shop: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "logged"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n  shop:\n    driver: mysql\n"
                                                 "    url: env:SHOP_URL\n    historicSql: {enabled: true, "
                                                 "queryLog: logs/queries.jsonl, minExecutions: 2}\n"))
    runs = [("SELECT `status`, COUNT(*) FROM `orders` WHERE placed_at >= '2026-0{m}-01' GROUP BY `status`", user)
            for m, user in ((1, "ann"), (2, "bo"), (3, "ann"))]
    runs += [("SELECT c.name, SUM(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id "
              "GROUP BY c.name", "cy")] * 2
    (root / "logs").mkdir()
    (root / "logs/queries.jsonl").write_text("".join(
        json.dumps({"sql": sql, "user": user, "started_at": f"2026-11-2{i}T10:00:00Z", "duration_ms": 40, "rows": 3})
        + "\n" for i, (sql, user) in enumerate(runs)), encoding="utf-8")
    runtime = open_runtime(root, {"SHOP_URL": shop["reader"]})
    try:
        async def call(text: str) -> dict[str, Any]:
            envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
            (result,) = envelope["results"]
            return dict(result["result"]) if result["ok"] else {"error": result["error"]}

        assert "error" not in await call('scan.run(connection="shop")')
        ingested = await call('historic_sql.ingest(connection="shop")')
        assert "error" not in ingested, ingested
        orders = await call(f'historic_sql.usage(connection="shop", table="{shop["name"]}.orders")')
    finally:
        await runtime.aclose()
    assert ingested["counts"]["templates"] == 2  # the three status counts are one template
    # the join's second run (the log's fifth line, 2026-11-24) is the newest that read orders
    assert orders["totals"] == {"executions": 5, "templates": 2, "distinctUsers": 3, "lastSeen": "2026-11-24T10:00:00Z"}
    assert "status" in orders["usage"]["commonGroupBys"]


async def test_mysql_stops_reading_rows_that_outgrow_the_result(call: Call) -> None:
    # 40 rows of 1 MB: the whole result was fetched into the daemon before any row was looked at; now reading
    # stops once 2 MiB (8 x the 256 KiB cap) were read, and the session is clean for the next statement
    rows = "SELECT 0 AS i UNION ALL " + " UNION ALL ".join(f"SELECT {i}" for i in range(1, 40))
    result = await call(f'sql.execute(connection="shop", sql="SELECT i, REPEAT(\'z\', 1000000) AS body '
                        f'FROM ({rows}) AS t ORDER BY i", limit=40)')
    assert "error" not in result, result
    assert result["truncated"] and 1 <= result["rowCount"] <= 9
    assert result["rows"][0][0] == 0 and result["rows"][0][1].startswith("z" * 1000)
    assert any("reading stopped" in note for note in result["notes"])
    again = await call('sql.execute(connection="shop", sql="SELECT COUNT(*) AS n FROM orders")')
    assert again["rows"] == [[4]] and not again["truncated"]
