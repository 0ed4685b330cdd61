"""Database drivers against real engines: a SQLite file, a DuckDB file and a throwaway PostgreSQL.

Every engine gets the same shop: customers with a two-column primary key, orders with a
two-column foreign key to them, a view, skewed ``status`` values (70 active / 20 churned / 9 trial /
1 NULL), sensitive columns (``email``, ``password_hash``) and one long ``notes`` text. BigQuery and
Snowflake catalog SQL is checked here against golden files and its parsing against recorded
INFORMATION_SCHEMA / SHOW results in ``fixtures/``; their client libraries run against local servers in
tests/packs/test_warehouse_clients.py, MySQL against MariaDB in test_mysql.py.

Regenerate the golden SQL (review the diff!)::

    KHIVE_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/connections/test_drivers.py -k golden
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pgcluster
import psycopg
import pytest

from khive.connections.bigquery import BigQueryDriver
from khive.connections.catalog import Column, ColumnSample, ForeignKey, Table
from khive.connections.config import ConnectionConfig
from khive.connections.driver import open_driver
from khive.connections.duckdb import DuckDbDriver
from khive.connections.postgres import PostgresDriver
from khive.connections.snowflake import SnowflakeDriver
from khive.connections.sqlite import SqliteDriver
from khive.connections.types import dimension_type, is_sensitive, normalize_type, sample_sql
from khive.errors import KhiveError

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "golden"
REGEN = os.environ.get("KHIVE_REGEN_GOLDEN") == "1"
SLOW_SQL = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r"
POLICY = {"max_values": 2, "max_text_length": 10, "sample_rows": 100}
STATUSES = ["active"] * 70 + ["churned"] * 20 + ["trial"] * 9 + [None]
LONG_NOTE = "x" * 200


def col(name: str, ordinal: int, native: str, normalized: str, dimension: str, *, nullable: bool = True,
        default: str | None = None, pk: bool = False, comment: str | None = None) -> Column:
    return Column(name=name, ordinal=ordinal, native_type=native, normalized_type=normalized,
                  dimension_type=dimension, nullable=nullable, default=default, primary_key=pk, comment=comment)


def config(driver: str, **extra: Any) -> ConnectionConfig:
    target = {"url": "env:SHOP_URL"} if driver == "postgres" else {"path": "shop.db"}
    if driver in ("bigquery", "snowflake"):
        target = {}
    extra.setdefault("sample_values", POLICY)
    return ConnectionConfig.model_validate({"driver": driver, **target, **extra})


def customer_rows() -> list[tuple[Any, ...]]:
    return [("eu" if i < 60 else "us", i, f"Customer {i}", f"c{i}@example.com", b"\x00\xffhash", STATUSES[i])
            for i in range(100)]


def order_rows() -> list[tuple[Any, ...]]:
    return [(i, "eu" if i < 60 else "us", i, i * 10, LONG_NOTE if i == 1 else "ok") for i in range(1, 51)]


def count_calls(obj: Any, method: str) -> list[str]:
    """Record the SQL of every call to ``obj.method`` (catalog query counting)."""
    seen: list[str] = []
    original = getattr(obj, method)

    def wrapper(sql: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(sql)
        return original(sql, *args, **kwargs)

    setattr(obj, method, wrapper)
    return seen


def count_statements(driver: PostgresDriver) -> list[str]:
    """Record the SQL of every statement the PostgreSQL driver's catalog reads send (they go in batches)."""
    seen: list[str] = []
    original = driver._fetch_many

    def wrapper(queries: list[tuple[str, Any]], **kwargs: Any) -> Any:
        seen.extend(sql for sql, _params in queries)
        return original(queries, **kwargs)

    driver._fetch_many = wrapper  # type: ignore[method-assign]
    return seen


def samples_by_column(samples: list[ColumnSample]) -> dict[str, ColumnSample]:
    return {f"{s.table}.{s.column}": s for s in samples}


def assert_fails_fast(code: str, run: Callable[[], object], within: float = 5.0) -> KhiveError:
    started = time.monotonic()
    with pytest.raises(KhiveError) as caught:
        run()
    assert caught.value.code == code, caught.value.message
    assert time.monotonic() - started < within
    return caught.value


# ---- type helpers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("native", "dialect", "expected"), [
    ("varchar(255)", "", "string"), ("character varying", "postgres", "string"), ("text", "postgres", "string"),
    ("int4", "postgres", "integer"), ("bigint", "postgres", "integer"), ("numeric(12,2)", "postgres", "number"),
    ("numeric(10,0)", "postgres", "integer"), ("double precision", "postgres", "number"),
    ("DECIMAL", "duckdb", "number"), ("TIMESTAMP WITH TIME ZONE", "duckdb", "timestamp"),
    ("timestamp(3) without time zone", "postgres", "timestamp"), ("timestamptz", "postgres", "timestamp"),
    ("date", "postgres", "date"), ("time with time zone", "postgres", "time"), ("bool", "postgres", "boolean"),
    ("bytea", "postgres", "binary"), ("BLOB", "sqlite", "binary"), ("jsonb", "postgres", "json"),
    ("uuid", "postgres", "uuid"), ("interval", "postgres", "interval"), ("integer[]", "postgres", "array"),
    ("character varying(20)[]", "postgres", "array"), ('"char"', "postgres", "string"),
    ("HUGEINT", "duckdb", "integer"), ("STRUCT(a INTEGER, b VARCHAR[])", "duckdb", "json"),
    ("INTEGER[]", "duckdb", "array"), ("STRUCT(a INTEGER)[]", "duckdb", "array"), ("LIST(INTEGER)", "duckdb", "array"),
    ("MAP(VARCHAR, INTEGER)", "duckdb", "json"), ("ENUM('a', 'b')", "duckdb", "string"),
    ("INT64", "bigquery", "integer"), ("FLOAT64", "bigquery", "number"), ("STRING", "bigquery", "string"),
    ("BYTES", "bigquery", "binary"), ("ARRAY<STRUCT<a INT64>>", "bigquery", "array"),
    ("STRUCT<city STRING, zip STRING>", "bigquery", "json"), ("GEOGRAPHY", "bigquery", "other"),
    ("NUMERIC(12, 2)", "bigquery", "number"), ("BIGNUMERIC", "bigquery", "number"),
    ("NUMBER(38,0)", "snowflake", "integer"), ("NUMBER(12,2)", "snowflake", "number"),
    ("NUMBER", "snowflake", "integer"), ("VARCHAR", "snowflake", "string"), ("VARIANT", "snowflake", "json"),
    ("OBJECT", "snowflake", "json"), ("ARRAY", "snowflake", "array"), ("TIMESTAMP_NTZ", "snowflake", "timestamp"),
    ("TIMESTAMP_LTZ(9)", "snowflake", "timestamp"),
    ("UNSIGNED BIG INT", "sqlite", "integer"), ("NATIVE CHARACTER(70)", "sqlite", "string"),
    ("DATETIME", "sqlite", "timestamp"), ("", "sqlite", "other"), ("MONEYISH", "sqlite", "number"),
    ("inet", "postgres", "other"), ("tsvector", "postgres", "other"),
])
def test_normalize_type(native: str, dialect: str, expected: str) -> None:
    assert normalize_type(native, dialect) == expected


@pytest.mark.parametrize(("normalized", "name", "pk", "fk", "native", "expected"), [
    ("integer", "customer_id", False, False, "", "identifier"),
    ("integer", "customerId", False, False, "", "identifier"),
    ("integer", "CUSTOMER_ID", False, False, "", "identifier"),
    ("string", "region", True, False, "", "identifier"),
    ("integer", "parent", False, True, "", "identifier"),
    ("uuid", "token_ref", False, False, "", "identifier"),
    ("date", "day", True, False, "", "time"),
    ("timestamp", "placed_at", False, False, "", "time"),
    ("boolean", "is_gift", False, False, "", "boolean"),
    ("number", "amount", False, False, "", "numeric"),
    ("integer", "quantity", False, False, "", "numeric"),
    ("integer", "status_code", False, False, "", "categorical"),
    ("integer", "paid", False, False, "", "numeric"),
    ("string", "status", False, False, "text", "categorical"),
    ("string", "product_description", False, False, "text", "text"),
    ("string", "notes", False, False, "TEXT", "text"),
    ("string", "body", False, False, "varchar(80)", "text"),
    ("string", "headline", False, False, "varchar(2000)", "text"),
    ("string", "headline", False, False, "LONGTEXT", "text"),
    ("string", "country", False, False, "VARCHAR(255)", "categorical"),
    ("json", "profile", False, False, "", "other"),
])
def test_dimension_type(normalized: Any, name: str, pk: bool, fk: bool, native: str, expected: str) -> None:
    assert dimension_type(normalized, name, pk, fk, native=native) == expected


def test_is_sensitive() -> None:
    policy = config("sqlite").sample_values
    assert is_sensitive("email", "text", policy) == "sensitive-name"
    assert is_sensitive("password_hash", "bytea", policy) == "secret-name"  # a credential's name, before the type
    assert is_sensitive("api_key", "text", policy.model_copy(update={"sensitive_patterns": []})) == "secret-name"
    assert is_sensitive("token_count", "integer", policy) is None  # a count of tokens, not a token
    assert is_sensitive("CUSTOMER_EMAIL", "VARCHAR", policy) == "sensitive-name"
    assert is_sensitive("photo", "BLOB", policy) == "binary"
    assert is_sensitive("payload", "jsonb", policy) == "sensitive-type"
    assert is_sensitive("tags", "ARRAY<STRING>", policy) == "sensitive-type"
    assert is_sensitive("area", "GEOGRAPHY", policy) == "sensitive-type"
    assert is_sensitive("status", "text", policy) is None
    assert is_sensitive("email", "text", policy.model_copy(update={"sensitive_patterns": []})) is None
    with pytest.raises(KhiveError, match="not a valid regex"):
        is_sensitive("x", "text", policy.model_copy(update={"sensitive_patterns": ["("]}))


# ---- SQLite -------------------------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE customers (
    region TEXT NOT NULL, id INTEGER NOT NULL, name VARCHAR(80), email TEXT, password_hash BLOB,
    status TEXT DEFAULT 'active', photo BLOB,
    PRIMARY KEY (region, id)
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, region TEXT NOT NULL, customer_id INTEGER NOT NULL, amount NUMERIC(12,2),
    notes TEXT, placed_at TIMESTAMP,
    FOREIGN KEY (region, customer_id) REFERENCES customers (region, id)
);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders);
CREATE VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 100;
"""


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(SQLITE_SCHEMA)
        conn.executemany("INSERT INTO customers (region, id, name, email, password_hash, status) "
                         "VALUES (?, ?, ?, ?, ?, ?)", customer_rows())
        conn.executemany("INSERT INTO orders (id, region, customer_id, amount, notes) VALUES (?, ?, ?, ?, ?)",
                         order_rows())
    conn.close()
    return path


@pytest.fixture
def sqlite_driver(sqlite_path: Path) -> Iterator[SqliteDriver]:
    with SqliteDriver("shop", config("sqlite"), {"path": str(sqlite_path)}) as driver:
        yield driver


def test_sqlite_catalog(sqlite_driver: SqliteDriver, sqlite_path: Path) -> None:
    fk = ForeignKey(columns=("region", "customer_id"), ref_catalog="shop", ref_db="main", ref_table="customers",
                    ref_columns=("region", "id"))
    expected = (
        Table(catalog="shop", db="main", name="big_orders", kind="view", columns=(
            col("id", 1, "INTEGER", "integer", "identifier"),
            col("amount", 2, "NUMERIC(12,2)", "number", "numeric"),
        )),
        Table(catalog="shop", db="main", name="customers", columns=(
            col("region", 1, "TEXT", "string", "identifier", nullable=False, pk=True),
            col("id", 2, "INTEGER", "integer", "identifier", nullable=False, pk=True),
            col("name", 3, "VARCHAR(80)", "string", "categorical"),
            col("email", 4, "TEXT", "string", "categorical"),
            col("password_hash", 5, "BLOB", "binary", "other"),
            col("status", 6, "TEXT", "string", "categorical", default="'active'"),
            col("photo", 7, "BLOB", "binary", "other"),
        )),
        Table(catalog="shop", db="main", name="orders", columns=(
            col("id", 1, "INTEGER", "integer", "identifier", nullable=False, pk=True),
            col("region", 2, "TEXT", "string", "identifier", nullable=False),
            col("customer_id", 3, "INTEGER", "integer", "identifier", nullable=False),
            col("amount", 4, "NUMERIC(12,2)", "number", "numeric"),
            col("notes", 5, "TEXT", "string", "text"),
            col("placed_at", 6, "TIMESTAMP", "timestamp", "time"),
        ), foreign_keys=(fk,)),
        Table(catalog="shop", db="main", name="refunds", columns=(
            col("id", 1, "INTEGER", "integer", "identifier", nullable=False, pk=True),
            col("order_id", 2, "INTEGER", "integer", "identifier"),
        ), foreign_keys=(ForeignKey(columns=("order_id",), ref_catalog="shop", ref_db="main", ref_table="orders",
                                    ref_columns=("id",)),)),  # REFERENCES orders: its primary key
    )
    queries = count_calls(sqlite_driver, "_run")
    snapshot = sqlite_driver.read_catalog()
    assert snapshot.tables == expected
    assert (snapshot.connection, snapshot.driver, snapshot.catalog) == ("shop", "sqlite", "shop")
    assert snapshot.capability_gaps == ("comments",)
    assert snapshot.warnings == ("no sqlite_stat1 table: row estimates unknown (run ANALYZE on the file to get them)",)
    assert len(queries) == 4  # columns, keys, row estimates, shadow tables

    with sqlite3.connect(sqlite_path) as conn:
        conn.execute("ANALYZE")
    conn.close()
    with SqliteDriver("shop", config("sqlite"), {"path": str(sqlite_path)}) as fresh:
        analyzed = fresh.read_catalog()
    # an empty table gets no sqlite_stat1 row: unknown, like a table never analysed
    assert {t.name: t.estimated_rows for t in analyzed.tables} == {"big_orders": None, "customers": 100,
                                                                   "orders": 50, "refunds": None}
    assert analyzed.warnings == ()


def test_sqlite_catalog_query_count_does_not_grow_with_tables(tmp_path: Path) -> None:
    path = tmp_path / "wide.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("BEGIN;" + "".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, p INTEGER REFERENCES t0);"
                                              for i in range(40)) + "COMMIT;")
    conn.close()
    with SqliteDriver("wide", config("sqlite"), {"path": str(path)}) as driver:
        queries = count_calls(driver, "_run")
        assert len(driver.read_catalog().tables) == 40
    assert len(queries) == 4  # columns, keys, row estimates and the virtual tables' shadow tables


def test_sqlite_broken_view_is_isolated(sqlite_path: Path) -> None:
    with sqlite3.connect(sqlite_path) as conn:
        conn.executescript("CREATE TABLE gone (a INTEGER); CREATE VIEW stale AS SELECT a FROM gone; DROP TABLE gone;")
    conn.close()
    with SqliteDriver("shop", config("sqlite"), {"path": str(sqlite_path)}) as driver:
        snapshot = driver.read_catalog()
    assert [t.name for t in snapshot.tables] == ["big_orders", "customers", "orders", "refunds"]
    assert snapshot.warnings[0].startswith("view stale: columns unreadable")


def test_sqlite_samples(sqlite_driver: SqliteDriver) -> None:
    tables = {t.name: t for t in sqlite_driver.read_catalog().tables}
    samples = samples_by_column(sqlite_driver.sample([tables["customers"], tables["orders"]]))
    assert samples["customers.status"] == ColumnSample(db="main", table="customers", column="status",
                                                       values=("active", "churned"), frequencies=(70, 20),
                                                       distinct=3, nulls=1, sampled_rows=100)
    assert samples["customers.email"].skipped == "sensitive-name"
    assert samples["customers.password_hash"].skipped == "secret-name"
    assert samples["customers.photo"].skipped == "binary"
    assert samples["customers.photo"].values == ()
    assert samples["customers.region"].values == ("eu", "us")
    assert samples["customers.region"].frequencies == (60, 40)
    assert samples["customers.id"].values == (0, 1)  # integers come back as integers
    assert samples["customers.name"].values == ("Customer 0", "Customer 1")
    assert samples["customers.name"].distinct == 100
    assert samples["orders.notes"].values == ("ok", "xxxxxxxxxx…")
    assert samples["orders.notes"].frequencies == (49, 1)
    assert samples["orders.placed_at"] == ColumnSample(db="main", table="orders", column="placed_at",
                                                       distinct=0, nulls=50, sampled_rows=50)
    assert list(samples) == ["customers.region", "customers.id", "customers.name", "customers.email",  # column order
                             "customers.password_hash", "customers.status", "customers.photo", "orders.id",
                             "orders.region", "orders.customer_id", "orders.amount", "orders.notes", "orders.placed_at"]


def test_only_text_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "wide_values.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE m (total NUMERIC(20,2), at TIMESTAMP, label TEXT, flag BOOLEAN)")
        conn.execute("INSERT INTO m VALUES (123456789012.5, '2024-01-01 10:00:00', 'abcdefghijklmnop', 1)")
    conn.close()
    with SqliteDriver("m", config("sqlite"), {"path": str(path)}) as driver:
        samples = driver.sample(driver.read_catalog().tables)
    assert [s.values for s in samples] == [(123456789012.5,), ("2024-01-01 10:00:00",), ("abcdefghij…",), (True,)]


def test_sqlite_sampling_disabled(sqlite_path: Path) -> None:
    cfg = config("sqlite", sample_values={"enabled": False})
    with SqliteDriver("shop", cfg, {"path": str(sqlite_path)}) as driver:
        assert driver.sample(driver.read_catalog().tables) == []


def test_sqlite_execute_truncates(sqlite_driver: SqliteDriver) -> None:
    result = sqlite_driver.execute("SELECT id, notes FROM orders ORDER BY id", limit=5, timeout_s=5)
    assert result.columns == [{"name": "id", "type": "INTEGER"}, {"name": "notes", "type": "TEXT"}]
    assert result.rows == [[1, LONG_NOTE], [2, "ok"], [3, "ok"], [4, "ok"], [5, "ok"]]
    assert (result.truncated, result.row_count) == (True, 5)
    whole = sqlite_driver.execute("SELECT id FROM orders", limit=50, timeout_s=5)
    assert (whole.truncated, whole.row_count) == (False, 50)


@pytest.mark.parametrize("sql", ["CREATE TABLE x (a int)", "DELETE FROM orders", "CREATE TEMP TABLE y (a int)",
                                 "UPDATE customers SET status = 'gone'"])
def test_sqlite_write_fails_at_the_database(sqlite_driver: SqliteDriver, sqlite_path: Path, sql: str) -> None:
    assert_fails_fast("read_only_violation", lambda: sqlite_driver.execute(sql, limit=10, timeout_s=5))
    assert sqlite_driver.execute("SELECT COUNT(*) FROM orders", limit=1, timeout_s=5).rows == [[50]]


def test_sqlite_query_only_cannot_be_switched_off(sqlite_driver: SqliteDriver) -> None:
    sqlite_driver.execute("PRAGMA query_only = OFF", limit=1, timeout_s=5)
    assert sqlite_driver.execute("PRAGMA query_only", limit=1, timeout_s=5).rows == [[1]]
    assert_fails_fast("read_only_violation", lambda: sqlite_driver.execute("CREATE TEMP TABLE y (a int)", limit=1,
                                                                           timeout_s=5))


def test_sqlite_attach_is_refused(sqlite_driver: SqliteDriver, tmp_path: Path) -> None:
    error = assert_fails_fast("query_failed", lambda: sqlite_driver.execute(
        f"ATTACH '{tmp_path / 'other.db'}' AS other", limit=1, timeout_s=5))
    assert "too many attached databases" in error.message
    assert not (tmp_path / "other.db").exists()


def test_sqlite_timeout(sqlite_driver: SqliteDriver) -> None:
    error = assert_fails_fast("statement_timeout", lambda: sqlite_driver.execute(SLOW_SQL, limit=1, timeout_s=1))
    assert error.details["timeout_s"] == 1
    assert sqlite_driver.execute("SELECT 1", limit=1, timeout_s=1).rows == [[1]]  # the connection survives


def test_sqlite_schema_filter(sqlite_path: Path) -> None:
    with SqliteDriver("shop", config("sqlite", schemas={"exclude": ["ma*"]}), {"path": str(sqlite_path)}) as driver:
        assert driver.read_catalog().tables == ()


def test_sqlite_open_failures(tmp_path: Path) -> None:
    missing = SqliteDriver("shop", config("sqlite"), {"path": str(tmp_path / "nope.sqlite")})
    error = assert_fails_fast("connection_failed", missing.read_catalog)
    assert "'shop'" in error.message and "nope.sqlite" in error.message
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with SqliteDriver("shop", config("sqlite"), {"path": str(garbage)}) as driver:
        assert "not a readable SQLite database" in assert_fails_fast("connection_failed", driver.read_catalog).message


def test_open_driver_uses_the_registry(sqlite_path: Path) -> None:
    driver = open_driver("shop", config("sqlite"), secrets={"path": str(sqlite_path)})
    try:
        assert isinstance(driver, SqliteDriver)
        assert len(driver.read_catalog().tables) == 4
    finally:
        driver.close()


# ---- DuckDB -------------------------------------------------------------------------------------------------

DUCKDB_SCHEMA = """
CREATE SCHEMA crm;
CREATE SCHEMA sales;
CREATE TABLE crm.contacts (id INTEGER PRIMARY KEY, email VARCHAR, profile JSON, tags VARCHAR[],
                           created_at TIMESTAMP WITH TIME ZONE, score HUGEINT);
COMMENT ON TABLE crm.contacts IS 'Marketing contacts';
COMMENT ON COLUMN crm.contacts.email IS 'Primary address';
CREATE TABLE sales.customers (region VARCHAR NOT NULL, id INTEGER NOT NULL, name VARCHAR, email VARCHAR,
                              password_hash BLOB, status VARCHAR DEFAULT 'active', PRIMARY KEY (region, id));
CREATE TABLE sales.orders (id BIGINT PRIMARY KEY, region VARCHAR NOT NULL, customer_id INTEGER NOT NULL,
                           amount DECIMAL(12,2), notes VARCHAR, is_gift BOOLEAN,
                           FOREIGN KEY (region, customer_id) REFERENCES sales.customers (region, id));
COMMENT ON TABLE sales.orders IS 'One row per order';
COMMENT ON COLUMN sales.orders.amount IS 'Gross, in EUR';
CREATE VIEW sales.big_orders AS SELECT id, amount FROM sales.orders WHERE amount > 100;
COMMENT ON VIEW sales.big_orders IS 'Orders over 100';
"""


def values(rows: list[tuple[Any, ...]]) -> str:
    """Rows as one VALUES list (DuckDB's executemany runs a statement per row: slow)."""
    def literal(value: Any) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bytes):
            return "'" + "".join(f"\\x{b:02x}" for b in value) + "'::BLOB"
        return repr(value) if isinstance(value, int | bool) else "'" + str(value).replace("'", "''") + "'"
    return ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)


@pytest.fixture(scope="module")
def duckdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: every DuckDB test opens it read-only."""
    path = tmp_path_factory.mktemp("duckdb") / "shop.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(DUCKDB_SCHEMA)
        conn.execute("INSERT INTO sales.customers (region, id, name, email, password_hash, status) VALUES "
                     + values(customer_rows()))
        conn.execute("INSERT INTO sales.orders (id, region, customer_id, amount, notes, is_gift) VALUES "
                     + values([(*row, row[0] % 10 == 0) for row in order_rows()]))
    return path


@pytest.fixture
def duckdb_driver(duckdb_path: Path) -> Iterator[DuckDbDriver]:
    with DuckDbDriver("shop", config("duckdb"), {"path": str(duckdb_path)}) as driver:
        yield driver


def test_duckdb_catalog(duckdb_driver: DuckDbDriver) -> None:
    expected = (
        Table(catalog="shop", db="crm", name="contacts", comment="Marketing contacts", estimated_rows=0, columns=(
            col("id", 1, "INTEGER", "integer", "identifier", nullable=False, pk=True),
            col("email", 2, "VARCHAR", "string", "categorical", comment="Primary address"),
            col("profile", 3, "JSON", "json", "other"),
            col("tags", 4, "VARCHAR[]", "array", "other"),
            col("created_at", 5, "TIMESTAMP WITH TIME ZONE", "timestamp", "time"),
            col("score", 6, "HUGEINT", "integer", "numeric"),
        )),
        Table(catalog="shop", db="sales", name="big_orders", kind="view", comment="Orders over 100", columns=(
            col("id", 1, "BIGINT", "integer", "identifier"),
            col("amount", 2, "DECIMAL(12,2)", "number", "numeric"),
        )),
        Table(catalog="shop", db="sales", name="customers", estimated_rows=100, columns=(
            col("region", 1, "VARCHAR", "string", "identifier", nullable=False, pk=True),
            col("id", 2, "INTEGER", "integer", "identifier", nullable=False, pk=True),
            col("name", 3, "VARCHAR", "string", "categorical"),
            col("email", 4, "VARCHAR", "string", "categorical"),
            col("password_hash", 5, "BLOB", "binary", "other"),
            col("status", 6, "VARCHAR", "string", "categorical", default="'active'"),
        )),
        Table(catalog="shop", db="sales", name="orders", comment="One row per order", estimated_rows=50, columns=(
            col("id", 1, "BIGINT", "integer", "identifier", nullable=False, pk=True),
            col("region", 2, "VARCHAR", "string", "identifier", nullable=False),
            col("customer_id", 3, "INTEGER", "integer", "identifier", nullable=False),
            col("amount", 4, "DECIMAL(12,2)", "number", "numeric", comment="Gross, in EUR"),
            col("notes", 5, "VARCHAR", "string", "text"),
            col("is_gift", 6, "BOOLEAN", "boolean", "boolean"),
        ), foreign_keys=(ForeignKey(name="orders_region_customer_id_region_id_fkey", columns=("region", "customer_id"),
                                    ref_catalog="shop", ref_db="sales", ref_table="customers",
                                    ref_columns=("region", "id")),)),
    )
    queries = count_calls(duckdb_driver, "_run")
    snapshot = duckdb_driver.read_catalog()
    assert snapshot.tables == expected
    assert (snapshot.catalog, snapshot.warnings, snapshot.capability_gaps) == ("shop", (), ())
    assert len(queries) == 3


@pytest.mark.parametrize(("schemas", "names"), [
    ({"include": ["sales"]}, ["sales.big_orders", "sales.customers", "sales.orders"]),
    ({"exclude": ["s*"]}, ["crm.contacts"]),
    ({"include": ["CRM", "sales"], "exclude": ["sales"]}, ["crm.contacts"]),
    ({"include": ["nothing*"]}, []),
])
def test_duckdb_schema_filter(duckdb_path: Path, schemas: dict[str, list[str]], names: list[str]) -> None:
    with DuckDbDriver("shop", config("duckdb", schemas=schemas), {"path": str(duckdb_path)}) as driver:
        assert [t.qualified for t in driver.read_catalog().tables] == names


def test_duckdb_samples(duckdb_driver: DuckDbDriver, duckdb_path: Path) -> None:
    tables = [t for t in duckdb_driver.read_catalog().tables if t.kind == "table" or t.name == "big_orders"]
    samples = samples_by_column(duckdb_driver.sample(tables))
    assert samples["customers.status"] == ColumnSample(db="sales", table="customers", column="status",
                                                       values=("active", "churned"), frequencies=(70, 20),
                                                       distinct=3, nulls=1, sampled_rows=100)
    assert samples["customers.email"].skipped == "sensitive-name"
    assert samples["customers.password_hash"].skipped == "secret-name"
    assert samples["contacts.email"].skipped == "sensitive-name"
    assert samples["contacts.profile"].skipped == "sensitive-type"
    assert samples["contacts.tags"].skipped == "sensitive-type"
    assert samples["contacts.score"] == ColumnSample(db="crm", table="contacts", column="score", distinct=0, nulls=0,
                                                     sampled_rows=0)
    assert samples["orders.is_gift"].values == (False, True)
    assert samples["orders.is_gift"].frequencies == (45, 5)
    assert samples["orders.amount"].values == ("10.00", "100.00")  # exact decimals: the database's text, scale kept
    assert samples["orders.notes"].values == ("ok", "xxxxxxxxxx…")
    # a view is read only when the policy asks: each sample runs its whole query, and its values can follow the plan
    assert samples["big_orders.amount"] == ColumnSample(db="sales", table="big_orders", column="amount", skipped="view")
    with DuckDbDriver("shop", config("duckdb", sample_values={**POLICY, "views": True}),
                      {"path": str(duckdb_path)}) as views_too:
        assert samples_by_column(views_too.sample(tables))["big_orders.amount"].sampled_rows == 40


def test_duckdb_execute_truncates(duckdb_driver: DuckDbDriver) -> None:
    result = duckdb_driver.execute("SELECT id, amount FROM sales.orders ORDER BY id", limit=2, timeout_s=5)
    assert result.columns == [{"name": "id", "type": "BIGINT"}, {"name": "amount", "type": "DECIMAL(12,2)"}]
    assert [row[0] for row in result.rows] == [1, 2]
    assert (result.truncated, result.row_count) == (True, 2)
    assert duckdb_driver.execute("SELECT 1 AS one", limit=1, timeout_s=5).truncated is False


@pytest.mark.parametrize("sql", ["CREATE TABLE x (a int)", "DELETE FROM sales.orders",
                                 "UPDATE sales.customers SET status = 'gone'"])
def test_duckdb_write_fails_at_the_database(duckdb_driver: DuckDbDriver, sql: str) -> None:
    assert_fails_fast("read_only_violation", lambda: duckdb_driver.execute(sql, limit=10, timeout_s=5))
    assert duckdb_driver.execute("SELECT COUNT(*) FROM sales.orders", limit=1, timeout_s=5).rows == [[50]]


@pytest.mark.parametrize("sql", ["ATTACH '{dir}/other.duckdb' AS other", "COPY sales.orders TO '{dir}/out.csv'",
                                 "SELECT * FROM read_csv('{dir}/out.csv')", "SET enable_external_access = true"])
def test_duckdb_external_access_is_locked(duckdb_driver: DuckDbDriver, tmp_path: Path, sql: str) -> None:
    with pytest.raises(KhiveError) as caught:
        duckdb_driver.execute(sql.format(dir=tmp_path), limit=1, timeout_s=5)
    assert caught.value.code in ("permission_denied", "query_failed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sql", [SLOW_SQL, SLOW_SQL.replace("COUNT(*)", "COUNT(*) * INTERVAL 1 DAY")],
                         ids=["plain", "projected through text"])  # a lossy column is bound, then projected
def test_duckdb_timeout(duckdb_driver: DuckDbDriver, sql: str) -> None:
    assert_fails_fast("statement_timeout", lambda: duckdb_driver.execute(sql, limit=1, timeout_s=1))
    assert duckdb_driver.execute("SELECT 42", limit=1, timeout_s=1).rows == [[42]]


def test_duckdb_open_failure(tmp_path: Path) -> None:
    driver = DuckDbDriver("lake", config("duckdb"), {"path": str(tmp_path / "absent.duckdb")})
    error = assert_fails_fast("connection_failed", driver.read_catalog)
    assert "'lake'" in error.message and "absent.duckdb" in error.message


# ---- PostgreSQL ---------------------------------------------------------------------------------------------

POSTGRES_SCHEMA = """
CREATE SCHEMA crm;
CREATE SCHEMA sales;
CREATE TYPE crm.tier AS ENUM ('gold', 'silver');
CREATE DOMAIN crm.money_eur AS numeric(12,2);
CREATE TABLE crm.customers (
    region text NOT NULL, id integer NOT NULL, name varchar(80), email text, password_hash bytea,
    status text DEFAULT 'active', tier crm.tier, credit crm.money_eur,
    PRIMARY KEY (region, id)
);
COMMENT ON TABLE crm.customers IS 'Everyone who ever bought';
COMMENT ON COLUMN crm.customers.status IS 'Lifecycle state';
CREATE TABLE sales.orders (
    id bigserial PRIMARY KEY, region text NOT NULL, customer_id integer NOT NULL, amount numeric(12,2),
    notes text, placed_at timestamptz, tags text[], meta jsonb,
    FOREIGN KEY (region, customer_id) REFERENCES crm.customers (region, id)
);
COMMENT ON TABLE sales.orders IS 'One row per order';
COMMENT ON COLUMN sales.orders.amount IS 'Gross, in EUR';
CREATE VIEW sales.big_orders AS SELECT id, amount FROM sales.orders WHERE amount > 100;
CREATE MATERIALIZED VIEW sales.customers_by_status AS
    SELECT status, count(*) AS customers FROM crm.customers GROUP BY status;
CREATE TABLE sales.events (day date NOT NULL, kind text, size integer) PARTITION BY RANGE (day);
CREATE TABLE sales.events_2024 PARTITION OF sales.events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE sales.events_2025 PARTITION OF sales.events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
"""


@pytest.fixture(scope="module")
def pg_shop(postgres_dsn: str) -> Iterator[str]:
    """Built once per module: every test here only reads it."""
    name = pgcluster.create_database(postgres_dsn, prefix="khive_shop")
    dsn = psycopg.conninfo.make_conninfo(postgres_dsn, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(POSTGRES_SCHEMA)
        with conn.cursor() as cursor:
            cursor.executemany("INSERT INTO crm.customers (region, id, name, email, password_hash, status) "
                               "VALUES (%s, %s, %s, %s, %s, %s)", customer_rows())
            cursor.executemany("INSERT INTO sales.orders (id, region, customer_id, amount, notes) "
                               "VALUES (%s, %s, %s, %s, %s)", order_rows())
        conn.execute("INSERT INTO sales.events SELECT DATE '2024-06-01' + i, 'click', i FROM generate_series(0, 299) i")
        conn.execute("REFRESH MATERIALIZED VIEW sales.customers_by_status")
        conn.execute("ANALYZE")
    yield dsn
    pgcluster.drop_database(postgres_dsn, name)


@pytest.fixture
def pg_driver(pg_shop: str) -> Iterator[PostgresDriver]:
    with PostgresDriver("warehouse", config("postgres"), {"url": pg_shop}) as driver:
        yield driver


@pytest.mark.postgres
def test_postgres_catalog(pg_driver: PostgresDriver) -> None:
    database = psycopg.conninfo.conninfo_to_dict(pg_driver._url)["dbname"]
    fk = ForeignKey(name="orders_region_customer_id_fkey", columns=("region", "customer_id"), ref_catalog=database,
                    ref_db="crm", ref_table="customers", ref_columns=("region", "id"))
    expected = (
        Table(catalog=database, db="crm", name="customers", comment="Everyone who ever bought", estimated_rows=100,
              columns=(
                  col("region", 1, "text", "string", "identifier", nullable=False, pk=True),
                  col("id", 2, "integer", "integer", "identifier", nullable=False, pk=True),
                  col("name", 3, "character varying(80)", "string", "categorical"),
                  col("email", 4, "text", "string", "categorical"),
                  col("password_hash", 5, "bytea", "binary", "other"),
                  col("status", 6, "text", "string", "categorical", default="'active'::text",
                      comment="Lifecycle state"),
                  col("tier", 7, "crm.tier", "string", "categorical"),
                  col("credit", 8, "crm.money_eur", "number", "numeric"),
              )),
        Table(catalog=database, db="sales", name="big_orders", kind="view", columns=(
            col("id", 1, "bigint", "integer", "identifier"),
            col("amount", 2, "numeric(12,2)", "number", "numeric"),
        )),
        Table(catalog=database, db="sales", name="customers_by_status", kind="materialized_view", estimated_rows=4,
              columns=(
                  col("status", 1, "text", "string", "categorical"),
                  col("customers", 2, "bigint", "integer", "numeric"),
              )),
        Table(catalog=database, db="sales", name="events", estimated_rows=300, columns=(
            col("day", 1, "date", "date", "time", nullable=False),
            col("kind", 2, "text", "string", "categorical"),
            col("size", 3, "integer", "integer", "numeric"),
        )),
        Table(catalog=database, db="sales", name="orders", comment="One row per order", estimated_rows=50, columns=(
            col("id", 1, "bigint", "integer", "identifier", nullable=False, pk=True,
                default="nextval('sales.orders_id_seq'::regclass)"),
            col("region", 2, "text", "string", "identifier", nullable=False),
            col("customer_id", 3, "integer", "integer", "identifier", nullable=False),
            col("amount", 4, "numeric(12,2)", "number", "numeric", comment="Gross, in EUR"),
            col("notes", 5, "text", "string", "text"),
            col("placed_at", 6, "timestamp with time zone", "timestamp", "time"),
            col("tags", 7, "text[]", "array", "other"),
            col("meta", 8, "jsonb", "json", "other"),
        ), foreign_keys=(fk,)),
    )
    queries = count_statements(pg_driver)
    snapshot = pg_driver.read_catalog()
    assert snapshot.tables == expected
    assert (snapshot.catalog, snapshot.driver, snapshot.warnings) == (database, "postgres", ())
    assert len(queries) == 4


@pytest.mark.postgres
def test_postgres_catalog_query_count_does_not_grow_with_tables(pg_database: str) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("".join(f"CREATE TABLE t{i} (id int PRIMARY KEY, p int REFERENCES t0);" for i in range(40)))
    with PostgresDriver("wide", config("postgres"), {"url": pg_database}) as driver:
        queries = count_statements(driver)
        snapshot = driver.read_catalog()
    assert len(snapshot.tables) == 40 and all(t.estimated_rows is None for t in snapshot.tables)  # never analysed
    assert len(queries) == 4


@pytest.mark.postgres
def test_postgres_defaults_are_printed_as_postgres_prints_them(pg_database: str) -> None:
    """Defaults (constants, casts, sequences, functions) and generated columns' expressions, which name other
    columns: each as ``pg_get_expr`` prints it for its table."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE n; CREATE TABLE g (a int DEFAULT 7, b int GENERATED ALWAYS AS (a * 2) STORED, "
                     "c text DEFAULT 'x', d timestamptz DEFAULT now(), e bigint DEFAULT nextval('n'), "
                     "f numeric(4,1) DEFAULT (1.5 + 2), h int GENERATED ALWAYS AS (a + length(c)) STORED)")
        printed = dict(conn.execute("SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute AS a "
                                    "JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                                    "WHERE a.attrelid = 'g'::regclass").fetchall())
    with PostgresDriver("defaults", config("postgres"), {"url": pg_database}) as driver:
        (table,) = driver.read_catalog().tables
    assert {c.name: c.default for c in table.columns} == printed
    assert printed["b"] == "(a * 2)" and len(printed) == 7


@pytest.mark.postgres
def test_postgres_equal_columns_differ_by_their_keys(pg_database: str) -> None:
    """Tables repeat a column exactly (name, type, position): it is one column, but a primary or a foreign key
    on it makes it another (the key columns are identifiers; the plain ones are not)."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE a (code text NOT NULL PRIMARY KEY); "
                     "CREATE TABLE b (code text NOT NULL REFERENCES a); "
                     "CREATE TABLE c (code text NOT NULL); CREATE TABLE d (code text NOT NULL);")
    with PostgresDriver("keys", config("postgres"), {"url": pg_database}) as driver:
        columns = {t.name: t.columns[0] for t in driver.read_catalog().tables}
    plain = col("code", 1, "text", "string", "categorical", nullable=False)
    assert columns == {"a": plain.model_copy(update={"primary_key": True, "dimension_type": "identifier"}),
                       "b": plain.model_copy(update={"dimension_type": "identifier"}), "c": plain, "d": plain}


@pytest.mark.postgres
def test_postgres_keys_after_a_dropped_column_are_named(pg_database: str) -> None:
    """A dropped column leaves a gap in the attribute numbers: key columns after it keep their own names, in
    the table itself and in a foreign key pointing at it."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE parents (legacy int, note text, code text NOT NULL PRIMARY KEY); "
                     "ALTER TABLE parents DROP COLUMN legacy; "
                     "CREATE TABLE children (old text, id int PRIMARY KEY, parent_code text REFERENCES parents); "
                     "ALTER TABLE children DROP COLUMN old;")
    with PostgresDriver("gaps", config("postgres"), {"url": pg_database}) as driver:
        tables = {t.name: t for t in driver.read_catalog().tables}
    assert [(c.name, c.ordinal, c.primary_key) for c in tables["parents"].columns] == [
        ("note", 1, False), ("code", 2, True)]
    assert [(c.name, c.primary_key) for c in tables["children"].columns] == [("id", True), ("parent_code", False)]
    (fk,) = tables["children"].foreign_keys
    assert (fk.columns, fk.ref_table, fk.ref_columns) == (("parent_code",), "parents", ("code",))


@pytest.mark.postgres
@pytest.mark.parametrize(("schemas", "names"), [
    ({"include": ["crm"]}, ["crm.customers"]),
    ({"exclude": ["crm", "public"]}, ["sales.big_orders", "sales.customers_by_status", "sales.events",
                                            "sales.orders"]),
    ({"include": ["nothing"]}, []),
])
def test_postgres_schema_filter(pg_shop: str, schemas: dict[str, list[str]], names: list[str]) -> None:
    with PostgresDriver("warehouse", config("postgres", schemas=schemas), {"url": pg_shop}) as driver:
        snapshot = driver.read_catalog()
    assert [t.qualified for t in snapshot.tables] == names
    orders = [t for t in snapshot.tables if t.name == "orders"]
    if orders:  # the cross-schema key survives although crm is not scanned, its columns named
        fk = orders[0].foreign_keys[0]
        assert (fk.ref_db, fk.ref_table, fk.columns, fk.ref_columns) == (
            "crm", "customers", ("region", "customer_id"), ("region", "id"))


@pytest.mark.postgres
def test_postgres_samples(pg_driver: PostgresDriver) -> None:
    tables = pg_driver.read_catalog().tables
    samples = samples_by_column(pg_driver.sample(tables))
    assert samples["customers.status"] == ColumnSample(db="crm", table="customers", column="status",
                                                       values=("active", "churned"), frequencies=(70, 20),
                                                       distinct=3, nulls=1, sampled_rows=100)
    assert samples["customers.email"].skipped == "sensitive-name"
    assert samples["customers.password_hash"].skipped == "secret-name"
    assert samples["orders.tags"].skipped == "sensitive-type"
    assert samples["orders.meta"].skipped == "sensitive-type"
    assert samples["customers.id"].values == (0, 1)
    assert samples["orders.amount"].values == ("10.00", "100.00")  # exact decimals: the database's text, scale kept
    assert samples["orders.notes"].values == ("ok", "xxxxxxxxxx…")
    assert samples["events.kind"].values == ("click",)
    assert samples["events.kind"].sampled_rows == 100  # LIMIT sample_rows over a partitioned table
    assert samples["customers_by_status.customers"].sampled_rows == 4  # a materialized view is stored: sampled
    assert samples["big_orders.amount"].skipped == "view"
    with PostgresDriver("warehouse", config("postgres", sample_values={**POLICY, "views": True}),
                        {"url": pg_driver._url}) as views_too:
        assert samples_by_column(views_too.sample(tables))["big_orders.amount"].sampled_rows == 40


@pytest.mark.postgres
def test_postgres_execute_truncates(pg_driver: PostgresDriver) -> None:
    result = pg_driver.execute("SELECT id, notes FROM sales.orders WHERE notes LIKE 'o%' ORDER BY id",
                               limit=3, timeout_s=5)
    assert result.columns == [{"name": "id", "type": "int8"}, {"name": "notes", "type": "text"}]
    assert result.rows == [[2, "ok"], [3, "ok"], [4, "ok"]]
    assert (result.truncated, result.row_count) == (True, 3)
    tiers = pg_driver.execute("SELECT tier, relpartbound FROM crm.customers, pg_class LIMIT 0", limit=3, timeout_s=5)
    assert tiers.columns == [{"name": "tier", "type": "crm.tier"}, {"name": "relpartbound", "type": "pg_node_tree"}]
    assert (tiers.rows, tiers.truncated) == ([], False)


@pytest.mark.postgres
@pytest.mark.parametrize("sql", ["CREATE TABLE x (a int)", "DELETE FROM sales.orders",
                                 "SELECT nextval('sales.orders_id_seq')", "REFRESH MATERIALIZED VIEW "
                                 "sales.customers_by_status"])
def test_postgres_write_fails_at_the_database(pg_driver: PostgresDriver, sql: str) -> None:
    assert_fails_fast("read_only_violation", lambda: pg_driver.execute(sql, limit=10, timeout_s=5))
    assert pg_driver.execute("SELECT COUNT(*) FROM sales.orders", limit=1, timeout_s=5).rows == [[50]]


@pytest.mark.postgres
def test_postgres_one_statement_per_execute(pg_driver: PostgresDriver) -> None:
    sql = "SET default_transaction_read_only = off; COMMIT; DELETE FROM sales.orders"
    error = assert_fails_fast("query_failed", lambda: pg_driver.execute(sql, limit=10, timeout_s=5))
    assert error.details["sqlstate"] == "42601"
    pg_driver.execute("SET default_transaction_read_only = off", limit=1, timeout_s=5)  # rolled back with its tx
    assert_fails_fast("read_only_violation", lambda: pg_driver.execute("DELETE FROM sales.orders", limit=1,
                                                                       timeout_s=5))
    assert pg_driver.execute("SELECT COUNT(*) FROM sales.orders", limit=1, timeout_s=5).rows == [[50]]


@pytest.mark.postgres
def test_postgres_timeout(pg_driver: PostgresDriver) -> None:
    error = assert_fails_fast("statement_timeout", lambda: pg_driver.execute("SELECT pg_sleep(10)", limit=1,
                                                                             timeout_s=1))
    assert error.details["sqlstate"] == "57014"
    assert pg_driver.execute("SELECT 1", limit=1, timeout_s=1).rows == [[1]]


@pytest.mark.postgres
@pytest.mark.parametrize("url", [
    "host=/nonexistent/khive-sock port=5432 dbname=shop user=postgres password=s3cret-pw",
    "postgresql://postgres:s3cret-pw@/shop?host=/nonexistent/khive-sock",
])
def test_postgres_connection_failure_names_target_not_password(url: str) -> None:
    driver = PostgresDriver("warehouse", config("postgres"), {"url": url})
    error = assert_fails_fast("connection_failed", driver.read_catalog)
    assert "'warehouse'" in error.message
    assert "host=/nonexistent/khive-sock" in error.message and "dbname=shop" in error.message
    assert "No such file or directory" in error.message
    assert "s3cret-pw" not in error.message and "s3cret-pw" not in json.dumps(error.to_dict())


# ---- sampling SQL, BigQuery and Snowflake ------------------------------------------------------------------


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; regenerate with KHIVE_REGEN_GOLDEN=1"


def render(queries: dict[str, str]) -> str:
    return "".join(f"-- query: {name}\n{sql};\n\n" for name, sql in queries.items())


def recorded(name: str) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def replay(queries: dict[str, str], results: dict[str, list[dict[str, Any]]], seen: list[str],
           ) -> Callable[[str], list[dict[str, Any]]]:
    by_sql = {sql: name for name, sql in queries.items()}

    def runner(sql: str) -> list[dict[str, Any]]:
        seen.append(by_sql[sql])
        return results[by_sql[sql]]

    return runner


ORDERS = Table(catalog="acme", db="sales", name="orders", kind="table", estimated_rows=98_000, columns=(
    col("region", 1, "STRING", "string", "categorical"), col("amount", 2, "NUMERIC", "number", "numeric")))


def test_golden_sample_sql() -> None:
    policy = config("sqlite").sample_values
    text = "-- query: postgres family (SQLite, DuckDB, PostgreSQL)\n" + sample_sql('"sales"."orders"', ORDERS.columns,
                                                                               policy) + ";\n\n"
    for driver in (BigQueryDriver("bq", config("bigquery", project="acme-analytics"), {}),
                   SnowflakeDriver("sf", config("snowflake", database="ANALYTICS"), {})):
        text += f"-- query: {driver.name}\n{driver.sample_query(ORDERS, ORDERS.columns)};\n\n"
    golden("sample_sql.sql", text)


def test_golden_bigquery_catalog_sql() -> None:
    driver = BigQueryDriver("bq", config("bigquery", project="acme-analytics", region="US"), {})
    golden("bigquery_catalog.sql", render({**driver.catalog_queries(), **driver.constraint_queries(["crm", "sales"])}))


def test_golden_snowflake_catalog_sql() -> None:
    golden("snowflake_catalog.sql", render(SnowflakeDriver("sf", config("snowflake", database="ANALYTICS"),
                                                           {}).catalog_queries()))
    assert SnowflakeDriver("sf", config("snowflake"), {}).catalog_queries()["primary_keys"] == \
        "SHOW PRIMARY KEYS IN ACCOUNT"


def test_bigquery_catalog_from_recorded_results() -> None:
    results = recorded("bigquery_catalog.json")
    cfg = config("bigquery", project="acme-analytics", region="US", schemas={"exclude": ["scratch"]})
    probe = BigQueryDriver("bq", cfg, {})
    queries = {**probe.catalog_queries(), **probe.constraint_queries(["crm", "sales"])}
    seen: list[str] = []
    driver = BigQueryDriver("bq", cfg, {}, runner=replay(queries, results, seen))
    snapshot = driver.read_catalog()
    assert seen == list(queries)  # nine queries, whatever the number of tables
    assert snapshot == driver.parse_catalog(results)
    fk = ForeignKey(name="fk_orders_customer", columns=("region", "customer_id"), ref_catalog="acme-analytics",
                    ref_db="crm", ref_table="customers", ref_columns=("region", "id"))
    project = "acme-analytics"
    assert snapshot.tables == (
        Table(catalog=project, db="crm", name="customers", comment="Everyone who ever bought", estimated_rows=1200,
              columns=(
                  col("region", 1, "STRING", "string", "identifier", nullable=False, pk=True),
                  col("id", 2, "INT64", "integer", "identifier", nullable=False, pk=True),
                  col("email", 3, "STRING(320)", "string", "text", comment="Primary contact address"),
                  col("profile", 4, "JSON", "json", "other"),
                  col("tags", 5, "ARRAY<STRING>", "array", "other", nullable=False),
                  col("home", 6, "STRUCT<city STRING, zip STRING>", "json", "other"),
                  col("signup_area", 7, "GEOGRAPHY", "other", "other"),
              )),
        Table(catalog=project, db="sales", name="big_orders", kind="view", columns=(
            col("order_id", 1, "INT64", "integer", "identifier"),
            col("amount", 2, "NUMERIC(12, 2)", "number", "numeric"),
        )),
        Table(catalog=project, db="sales", name="orders", comment='One row per order, "gift" orders included',
              estimated_rows=98000, columns=(
                  col("order_id", 1, "INT64", "integer", "identifier", nullable=False, pk=True),
                  col("region", 2, "STRING", "string", "identifier", nullable=False),
                  col("customer_id", 3, "INT64", "integer", "identifier", nullable=False),
                  col("amount", 4, "NUMERIC(12, 2)", "number", "numeric", comment="Gross amount in EUR"),
                  col("status", 5, "STRING", "string", "categorical", default="'placed'"),
                  col("placed_at", 6, "TIMESTAMP", "timestamp", "time", default="CURRENT_TIMESTAMP()"),
                  col("placed_on", 7, "DATE", "date", "time"),
                  col("is_gift", 8, "BOOL", "boolean", "boolean"),
                  col("receipt", 9, "BYTES", "binary", "other"),
                  col("discount_rate", 10, "FLOAT64", "number", "numeric"),
              ), foreign_keys=(fk,)),
        Table(catalog=project, db="sales", name="orders_daily", kind="materialized_view", estimated_rows=365,
              columns=(col("placed_on", 1, "DATE", "date", "time"), col("orders", 2, "INT64", "integer", "numeric"))),
    )


def test_snowflake_catalog_from_recorded_results() -> None:
    results = recorded("snowflake_catalog.json")
    cfg = config("snowflake", database="ANALYTICS", schemas={"exclude": ["staging"]})
    seen: list[str] = []
    driver = SnowflakeDriver("sf", cfg, {}, runner=replay(SnowflakeDriver("sf", cfg, {}).catalog_queries(), results,
                                                           seen))
    snapshot = driver.read_catalog()
    assert seen == ["tables", "columns", "primary_keys", "imported_keys"]
    fk = ForeignKey(name="FK_ORDERS_CUSTOMER", columns=("REGION", "CUSTOMER_ID"), ref_catalog="ANALYTICS",
                    ref_db="CRM", ref_table="CUSTOMERS", ref_columns=("REGION", "ID"))
    assert snapshot.catalog == "ANALYTICS"
    assert snapshot.tables == (
        Table(catalog="ANALYTICS", db="CRM", name="CUSTOMERS", comment="Everyone who ever bought", estimated_rows=1200,
              columns=(
                  col("REGION", 1, "VARCHAR", "string", "identifier", nullable=False, pk=True),
                  col("ID", 2, "NUMBER(38,0)", "integer", "identifier", nullable=False, pk=True),
                  col("EMAIL", 3, "VARCHAR(320)", "string", "text", comment="Primary contact address"),
                  col("PROFILE", 4, "VARIANT", "json", "other"),
                  col("TAGS", 5, "ARRAY", "array", "other"),
                  col("ATTRIBUTES", 6, "OBJECT", "json", "other"),
                  col("SIGNED_UP_AT", 7, "TIMESTAMP_NTZ", "timestamp", "time"),
              )),
        Table(catalog="ANALYTICS", db="SALES", name="BIG_ORDERS", kind="view", columns=(
            col("ORDER_ID", 1, "NUMBER(38,0)", "integer", "identifier"),
            col("AMOUNT", 2, "NUMBER(12,2)", "number", "numeric"),
        )),
        Table(catalog="ANALYTICS", db="SALES", name="ORDERS", comment="One row per order", estimated_rows=98000,
              columns=(
                  col("ORDER_ID", 1, "NUMBER(38,0)", "integer", "identifier", nullable=False, pk=True,
                      default="ANALYTICS.SALES.ORDER_SEQ.NEXTVAL"),
                  col("REGION", 2, "VARCHAR", "string", "identifier", nullable=False),
                  col("CUSTOMER_ID", 3, "NUMBER(38,0)", "integer", "identifier", nullable=False),
                  col("AMOUNT", 4, "NUMBER(12,2)", "number", "numeric", comment="Gross amount in EUR"),
                  col("PLACED_AT", 5, "TIMESTAMP_LTZ", "timestamp", "time"),
                  col("IS_GIFT", 6, "BOOLEAN", "boolean", "boolean", default="FALSE"),
                  col("NOTES", 7, "VARCHAR(2000)", "string", "text"),
                  col("DELIVERY_POINT", 8, "GEOGRAPHY", "other", "other"),
                  col("DISCOUNT_RATE", 9, "FLOAT", "number", "numeric"),
              ), foreign_keys=(fk,)),
        Table(catalog="ANALYTICS", db="SALES", name="ORDERS_DAILY", kind="materialized_view", estimated_rows=365,
              columns=(col("PLACED_ON", 1, "DATE", "date", "time"),
                       col("ORDERS", 2, "NUMBER(18,0)", "integer", "numeric"))),
    )


@pytest.mark.parametrize(("driver_class", "library", "session_module"),
                         [(BigQueryDriver, "google.cloud.bigquery", "khive.connections.bqsession"),
                          (SnowflakeDriver, "snowflake.connector", "khive.connections.sfsession")])
def test_warehouse_without_client_library(driver_class: type[BigQueryDriver] | type[SnowflakeDriver], library: str,
                                          session_module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # as on a machine without the extra: importing the client library fails
    monkeypatch.setitem(sys.modules, library, None)
    monkeypatch.delitem(sys.modules, session_module, raising=False)
    driver = open_driver("wh", config(driver_class.name), secrets={})
    assert isinstance(driver, driver_class)
    for call in (driver.read_catalog, lambda: driver.execute("SELECT 1", limit=1, timeout_s=1)):
        error = assert_fails_fast("driver_unavailable", call)
        assert driver_class.client_library in error.message and "not installed" in error.message
        assert error.details["fix"] == f"pip install 'khive[{driver_class.name}]'"


def test_warehouse_execute_and_sample_through_the_runner() -> None:
    rows = [{"ORDER_ID": i, "REGION": "EU" if i % 3 else "US"} for i in range(5)]
    driver = SnowflakeDriver("sf", config("snowflake"), {}, runner=lambda sql: rows)
    result = driver.execute("SELECT ORDER_ID, REGION FROM SALES.ORDERS", limit=3, timeout_s=5)
    assert result.columns == [{"name": "ORDER_ID", "type": "INTEGER"}, {"name": "REGION", "type": "STRING"}]
    assert (result.rows, result.truncated, result.row_count) == ([[0, "US"], [1, "EU"], [2, "EU"]], True, 3)
    sample_rows = [{"COL": 0, "V": "EU", "N": 3, "D": 2, "Z": 0, "T": 5}, {"COL": 0, "V": "US", "N": 2, "D": 2,
                                                                          "Z": 0, "T": 5}]
    sampler = SnowflakeDriver("sf", config("snowflake"), {}, runner=lambda sql: sample_rows)
    table = Table(db="SALES", name="ORDERS", columns=(col("REGION", 1, "VARCHAR", "string", "categorical"),
                                                      col("EMAIL", 2, "VARCHAR", "string", "categorical")))
    assert sampler.sample([table]) == [
        ColumnSample(db="SALES", table="ORDERS", column="REGION", values=("EU", "US"), frequencies=(3, 2),
                     distinct=2, nulls=0, sampled_rows=5),
        ColumnSample(db="SALES", table="ORDERS", column="EMAIL", skipped="sensitive-name"),
    ]
