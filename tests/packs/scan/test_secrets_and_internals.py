"""Scans see the warehouse's tables, not the server's internals, and never write a credential (ADR 0035).

Through the dispatcher, as the CLI runs it: scan.run, scan.tables, scan.entity, sl.bootstrap,
sl.dictionary_search and discover.search on real SQLite files and a real PostgreSQL database.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from khive.bootstrap import open_runtime
from khive.connections.catalog import CatalogSnapshot, Table
from khive.connections.config import TableFilter
from khive.connections.selection import choose_tables
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio
PACKS = "core,scan,sl,discover"
Call = Callable[..., Awaitable[dict[str, Any]]]

AWS = "AKIA" + "FAKEQWERTY234567"
GITHUB = "ghp_" + "FAKEabcdefghijklmnopqrstuvwxyz012345"
PASSWORD = "FAKE-hunter2-pw"
API_KEY = "sk-" + "live-FAKE8P1yooJGW2GUqNvDmmaIzaxD"
SECRETS = (AWS, GITHUB, PASSWORD, API_KEY)
INTEGRATIONS = """
CREATE TABLE integrations (id INTEGER PRIMARY KEY, name TEXT, api_key TEXT, token_count INTEGER, settings TEXT,
                           contact TEXT, notes TEXT);
INSERT INTO integrations VALUES
  (1, 'warehouse loader', 'sk-live-FAKE8P1yooJGW2GUqNvDmmaIzaxD', 120, 'host=db user=etl password=FAKE-hunter2-pw',
   'ops@example.com', 'rotated AKIAFAKEQWERTY234567 last week'),
  (2, 'ci', 'sk-live-FAKE8P1yooJGW2GUqNvDmmaIzaxD', 80, '{"token": "ghp_FAKEabcdefghijklmnopqrstuvwxyz012345"}',
   'ci@example.com', 'nightly build'),
  (3, 'crm sync', NULL, 40, 'region=eu', 'crm@example.com', 'nightly build');
"""


def build(root: Path, extra_config: str = "") -> Path:
    init_project(root, "ann")
    db = sqlite3.connect(root / "shop.sqlite")
    db.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, segment TEXT);"
                     "INSERT INTO customers VALUES (1, 'Ada', 'smb'), (2, 'Bo', 'enterprise');"
                     "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id));"
                     "CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id), qty INTEGER);"
                     "CREATE VIRTUAL TABLE notes_fts USING fts5(body);" + INTEGRATIONS)
    db.commit()
    db.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", f"connections:\n  shop:\n    driver: sqlite\n    path: shop.sqlite\n{extra_config}"))
    return root


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(build(tmp_path / "proj"), {"KHIVE_PACKS": PACKS})
    yield runtime
    await runtime.aclose()


async def run(runtime: Runtime, text: str) -> dict[str, Any]:
    envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    (result,) = envelope["results"]
    return dict(result["result"]) if result["ok"] else {"error": result["error"]}


def leaked(root: Path, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """Files under ``root`` (``.khive/`` included) that hold any of ``secrets``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path.name != "shop.sqlite":
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {secret[:12]}" for secret in secrets if secret.encode() in data]
    return found


async def test_a_scan_writes_no_credential_and_counts_what_it_removed(runtime: Runtime) -> None:
    report = await run(runtime, 'scan.run(connection="shop")')
    assert report["redactions"] == {"aws-access-key": 1, "github-token": 1, "secret-assignment": 1}
    assert report["skippedColumns"]["secret-name"] == 1  # api_key: never sampled
    assert leaked(runtime.project) == []
    entity = await run(runtime, 'scan.entity(connection="shop", table="integrations")')
    columns = {column["name"]: column["samples"] for column in entity["columns"]}
    assert columns["api_key"]["skipped"] == "secret-name" and not columns["api_key"]["values"]
    assert "host=db user=etl password=[redacted: secret-assignment]" in columns["settings"]["values"]
    assert '{"token": "[redacted: github-token]"}' in columns["settings"]["values"]
    assert "rotated [redacted: aws-access-key] last week" in columns["notes"]["values"]
    assert sorted(columns["contact"]["values"]) == ["ci@example.com", "crm@example.com", "ops@example.com"]
    assert sorted(columns["token_count"]["values"]) == [40, 80, 120]  # a count of tokens is sampled
    for secret in SECRETS:
        found = await run(runtime, f'sl.dictionary_search(query="{secret[:10]}")')
        assert found["hits"] == [], found["hits"]
    # the scan report says what was removed, never the value
    status = await run(runtime, 'scan.connections()')
    assert status["connections"][0]["protection"] == {
        "recorded": True, "redactions": {"aws-access-key": 1, "github-token": 1, "secret-assignment": 1},
        "secretColumns": 1, "serverObjectsLeftOut": 5}


async def test_sqlite_shadow_tables_of_a_virtual_table_are_left_out(runtime: Runtime) -> None:
    report = await run(runtime, 'scan.run(connection="shop")')
    assert sorted(item["object"] for item in report["excluded"]["internal"]) == [
        f"main.notes_fts_{part}" for part in ("config", "content", "data", "docsize", "idx")]
    tables = await run(runtime, 'scan.tables(connection="shop")')
    assert [row["name"] for row in tables["tables"]] == ["customers", "integrations", "notes_fts", "order_items",
                                                         "orders"]


async def test_table_globs_choose_what_a_scan_reads(tmp_path: Path) -> None:
    extra = '    tables: {include: ["main.*"], exclude: ["order_*", "main.integrations"]}\n'
    runtime = open_runtime(build(tmp_path / "proj", extra), {"KHIVE_PACKS": PACKS})
    try:
        report = await run(runtime, 'scan.run(connection="shop")')
        tables = await run(runtime, 'scan.tables(connection="shop")')
    finally:
        await runtime.aclose()
    assert [row["name"] for row in tables["tables"]] == ["customers", "notes_fts", "orders"]
    assert report["excluded"]["filtered"] == 2


def test_table_globs_match_the_qualified_and_the_plain_name() -> None:
    snapshot = CatalogSnapshot(connection="w", driver="postgres", tables=(
        Table(db="sales", name="orders"), Table(db="sales", name="tmp_orders"), Table(db="staging", name="orders"),
        Table(db="public", name="pg_stat_statements"), Table(db="information_schema", name="tables")))
    kept, excluded = choose_tables(snapshot, TableFilter(exclude=["tmp_*", "STAGING.*"]))
    assert [t.qualified for t in kept] == ["sales.orders"]
    assert {(e.qualified, e.reason) for e in excluded} == {
        ("sales.tmp_orders", "tables filter"), ("staging.orders", "tables filter"),
        ("public.pg_stat_statements", "extension"), ("information_schema.tables", "system")}


def test_warehouse_internals_are_left_out_of_bigquery_snowflake_and_duckdb_catalogs() -> None:
    bigquery = CatalogSnapshot(connection="bq", driver="bigquery", tables=(
        Table(catalog="proj", db="sales", name="orders"), Table(catalog="proj", db="_script3f2a", name="tmp"),
        Table(catalog="proj", db="INFORMATION_SCHEMA", name="JOBS")))
    snowflake = CatalogSnapshot(connection="sf", driver="snowflake", tables=(
        Table(catalog="ANALYTICS", db="SALES", name="ORDERS"),
        Table(catalog="SNOWFLAKE", db="ACCOUNT_USAGE", name="QUERY_HISTORY")))
    assert [t.qualified for t in choose_tables(bigquery, TableFilter())[0]] == ["sales.orders"]
    assert [t.qualified for t in choose_tables(snowflake, TableFilter())[0]] == ["SALES.ORDERS"]
    duckdb = CatalogSnapshot(connection="d", driver="duckdb", tables=(
        Table(db="main", name="orders"), Table(db="main", name="duckdb_settings"), Table(db="pg_catalog", name="x")))
    assert [t.qualified for t in choose_tables(duckdb, TableFilter())[0]] == ["main.orders"]


async def test_what_an_older_scan_recorded_is_filtered_and_redacted_when_read(runtime: Runtime) -> None:
    """A run written before ADR 0035: a pg_stat_statements view with other roles' statements, and a sample
    holding a key. Nothing reads them back: not scan, not sl.bootstrap, not the index, not the dictionary."""
    report = await run(runtime, 'scan.run(connection="shop")')
    project = runtime.project
    run_dir = project / "raw-sources/shop/live-database" / report["syncId"]
    listed = json.loads((run_dir / "tables.json").read_text())
    statements = {"catalog": "shop", "db": "main", "name": "pg_stat_statements", "kind": "view",
                  "columns": [{"name": "query", "ordinal": 1, "nativeType": "text", "normalizedType": "string",
                               "dimensionType": "categorical", "nullable": True, "primaryKey": False,
                               "samples": {"values": [f"ALTER ROLE etl PASSWORD '{PASSWORD}'"],
                                           "frequencies": [1], "distinct": 1, "nulls": 0, "sampledRows": 1}}],
                  "foreignKeys": [], "inferredRelationships": []}
    customers = next(t for t in listed["tables"] if t["name"] == "customers")
    segment = next(c for c in customers["columns"] if c["name"] == "segment")
    segment["samples"]["values"].append(f"key {AWS}")
    listed["tables"].append(statements)
    (run_dir / "tables.json").write_text(json.dumps(listed))
    written = json.loads((run_dir / "scan-report.json").read_text())
    for key in ("redactions", "skippedColumns", "excluded"):  # an older scan's report has none of these
        written.pop(key)
    (run_dir / "scan-report.json").write_text(json.dumps(written))
    shard = project / "_schema/shop/shop.main.yaml"
    shard.write_text(shard.read_text() + "  pg_stat_statements:\n    kind: view\n    columns:\n    - name: query\n"
                     "      type: string\n      samples:\n      - \"ALTER ROLE etl PASSWORD '" + PASSWORD + "'\"\n")
    shutil.rmtree(project / ".khive" / "scan", ignore_errors=True)  # the shard is parsed as written

    tables = await run(runtime, 'scan.tables(connection="shop")')
    assert "pg_stat_statements" not in [row["name"] for row in tables["tables"]]
    missing = await run(runtime, 'scan.entity(connection="shop", table="pg_stat_statements")')
    assert missing["error"]["code"] == "table_not_found"
    entity = await run(runtime, 'scan.entity(connection="shop", table="customers", column="segment")')
    assert f"key {AWS}" not in entity["column"]["samples"]["values"]
    assert "key [redacted: aws-access-key]" in entity["column"]["samples"]["values"]
    boot = await run(runtime, 'sl.bootstrap(connection="shop")')
    assert not any("pg_stat_statements" in path for path in boot["created"])
    # and a source an older sl.bootstrap made from it is never searched
    (project / "semantic-layer/shop/pg_stat_statements.yaml").write_text(
        "name: pg_stat_statements\ntable: main.pg_stat_statements\ncolumns:\n- {name: query, type: string}\n"
        "measures:\n- {name: pg_stat_statements_count, agg: count}\n")
    found = await run(runtime, 'discover.search(query="pg_stat_statements query statements", limit=20)')
    assert not any("pg_stat_statements" in str(ref.get("id")) for ref in found["refs"])
    for needle in (PASSWORD, AWS):
        hits = await run(runtime, f'sl.dictionary_search(query="{needle}")')
        assert hits["hits"] == []
    index = [path for path in (project / ".khive").glob("index*") if path.is_file()]  # the audit holds the queries
    assert index and not any(secret.encode() in path.read_bytes() for path in index for secret in SECRETS)


@pytest.mark.postgres
async def test_postgres_extension_objects_are_never_scanned(tmp_path: Path, pg_database: str) -> None:
    with psycopg.connect(pg_database, autocommit=True) as admin:  # a plain CREATE EXTENSION: into public
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        admin.execute("CREATE TABLE public.orders (id integer PRIMARY KEY, status text);"
                      "INSERT INTO public.orders VALUES (1, 'paid'), (2, 'open')")
    root = tmp_path / "proj"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  wh:\n    driver: postgres\n    url: env:WH_URL\n"))
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS, "WH_URL": pg_database})
    try:
        report = await run(runtime, 'scan.run(connection="wh")')
        boot = await run(runtime, 'sl.bootstrap(connection="wh")')
        found = await run(runtime, 'discover.search(query="statements query calls rows", limit=20)')
    finally:
        await runtime.aclose()
    assert report["counts"]["tables"] == 1 and report["counts"]["views"] == 0, report["counts"]
    assert {"object": "public.pg_stat_statements", "reason": "extension pg_stat_statements"} in (
        report["excluded"]["internal"])
    assert boot["created"] == ["semantic-layer/wh/orders.yaml"]
    assert not any("pg_stat_statements" in str(ref.get("id")) for ref in found["refs"])
    assert not any("pg_stat_statements" in path.read_text() for path in (root / "_schema").rglob("*.yaml"))


async def test_a_secret_repeated_across_tables_is_redacted_and_counted_in_each(tmp_path: Path) -> None:
    """The scan redacts each distinct comment or default once; the report still counts every occurrence."""
    root = build(tmp_path / "proj")
    db = sqlite3.connect(root / "shop.sqlite")
    for name in ("loader_a", "loader_b", "loader_c"):
        db.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, dsn TEXT DEFAULT 'host=db password={PASSWORD}')")
    db.commit()
    db.close()
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        report = await run(runtime, 'scan.run(connection="shop")')
        loader = await run(runtime, 'scan.entity(connection="shop", table="loader_b")')
    finally:
        await runtime.aclose()
    assert report["redactions"]["secret-assignment"] == 1 + 3  # the sampled settings value, and each default
    (dsn,) = [column for column in loader["columns"] if column["name"] == "dsn"]
    assert dsn["default"] == "'host=db password=[redacted: secret-assignment]'"
    assert leaked(root) == []
