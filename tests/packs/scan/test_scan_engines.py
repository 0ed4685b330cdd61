"""scan.run through the pack on a real DuckDB file and a real PostgreSQL cluster: comments, FKs, views, schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project


def configure(root: Path, block: str) -> None:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n" + block))


def run_ops(root: Path, env: dict[str, str], *texts: str) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan", **env})
        try:
            out = []
            for text in texts:
                envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
                result = envelope["results"][0]
                assert result["ok"], result
                out.append(result["result"])
            return out
        finally:
            await runtime.aclose()

    return anyio.run(go)


def test_duckdb_scan_with_schemas_comments_and_fks(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    configure(root, "  wh:\n    driver: duckdb\n    path: wh.duckdb\n")
    db = duckdb.connect(str(root / "wh.duckdb"))
    db.execute("""
        CREATE SCHEMA sales; CREATE SCHEMA crm;
        CREATE TABLE crm.accounts (id INTEGER PRIMARY KEY, name VARCHAR, tier VARCHAR);
        COMMENT ON TABLE crm.accounts IS 'Customer accounts';
        COMMENT ON COLUMN crm.accounts.tier IS 'gold, silver or bronze';
        CREATE TABLE sales.orders (id INTEGER PRIMARY KEY, account_id INTEGER, amount DECIMAL(12,2),
                                   ordered_at TIMESTAMP);
        CREATE TABLE sales.lines (order_id INTEGER REFERENCES sales.orders(id), n INTEGER, sku VARCHAR,
                                  PRIMARY KEY (order_id, n));
        CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE amount > 100;
        INSERT INTO crm.accounts SELECT i, 'acct ' || i, CASE WHEN i % 5 = 0 THEN 'gold' ELSE 'bronze' END
            FROM range(1, 41) t(i);
        INSERT INTO sales.orders SELECT i, 1 + i % 40, i * 3.5, TIMESTAMP '2026-01-01' + INTERVAL (i) HOUR
            FROM range(1, 201) t(i);
    """)
    db.close()
    (report, entity, diff) = run_ops(root, {}, 'scan.run(connection="wh")',
                                     'scan.entity(connection="wh", table="crm.accounts", column="tier")',
                                     'scan.diff(connection="wh")')
    assert report["counts"]["tables"] == 3 and report["counts"]["views"] == 1
    assert sorted(report["diffSummary"]["tables"]["added"]) == ["crm.accounts", "sales.big_orders",
                                                                "sales.lines", "sales.orders"]
    assert entity["column"]["comment"] == "gold, silver or bronze"
    assert set(entity["column"]["samples"]["values"]) == {"gold", "bronze"}
    run = root / "raw-sources/wh/live-database" / report["syncId"]
    run_tables = {f"{t['db']}.{t['name']}": t for t in json.loads((run / "tables.json").read_text())["tables"]}
    accounts = run_tables["crm.accounts"]
    assert accounts["comment"] == "Customer accounts" and accounts["descriptions"] == {"db": "Customer accounts"}
    lines = run_tables["sales.lines"]
    assert lines["foreignKeys"][0]["refTable"] == "orders"
    orders = run_tables["sales.orders"]
    inferred = orders["inferredRelationships"]
    assert any(r["toTable"] == "accounts" and r["fromColumns"] == ["account_id"] for r in inferred)
    assert (root / "_schema/wh/wh.sales.yaml").is_file() and (root / "_schema/wh/wh.crm.yaml").is_file()
    assert diff["diffSummary"]["tables"]["unchanged"] == 0


@pytest.mark.postgres
def test_postgres_scan_with_comments_fks_views_and_schemas(tmp_path: Path, pg_database: str) -> None:
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("""
            CREATE SCHEMA shop; CREATE SCHEMA ref;
            CREATE TABLE ref.countries (code text PRIMARY KEY, name text NOT NULL);
            COMMENT ON TABLE ref.countries IS 'ISO countries';
            CREATE TABLE shop.customers (id bigint PRIMARY KEY, country_code text REFERENCES ref.countries(code),
                                         email text, created_at timestamptz DEFAULT now());
            COMMENT ON COLUMN shop.customers.country_code IS 'ISO 3166 alpha-2';
            CREATE TABLE shop.orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES shop.customers(id),
                                      status text NOT NULL, total numeric(12,2));
            CREATE VIEW shop.open_orders AS SELECT * FROM shop.orders WHERE status <> 'closed';
            INSERT INTO ref.countries VALUES ('DE', 'Germany'), ('FR', 'France');
            INSERT INTO shop.customers SELECT i, CASE WHEN i % 2 = 0 THEN 'DE' ELSE 'FR' END, 'c' || i || '@x.io'
                FROM generate_series(1, 30) i;
            INSERT INTO shop.orders SELECT i, 1 + i % 30, CASE WHEN i % 4 = 0 THEN 'closed' ELSE 'open' END, i
                FROM generate_series(1, 120) i;
            ANALYZE;
        """)
    root = tmp_path / "proj"
    configure(root, "  pg:\n    driver: postgres\n    url: env:TEST_PG_URL\n")
    env = {"TEST_PG_URL": pg_database}
    first, entity = run_ops(root, env, 'scan.run(connection="pg")',
                            'scan.entity(connection="pg", table="shop.customers")')
    assert first["counts"]["tables"] == 3 and first["counts"]["views"] == 1
    assert entity["foreignKeys"]["out"][0]["refDb"] == "ref"
    assert {ref["from"] for ref in entity["foreignKeys"]["in"]} == {"shop.orders"}
    country = next(c for c in entity["columns"] if c["name"] == "country_code")
    assert country["comment"] == "ISO 3166 alpha-2"
    email = next(c for c in entity["columns"] if c["name"] == "email")
    assert email["samples"]["skipped"] == "sensitive-name"

    import psycopg as pg

    with pg.connect(pg_database, autocommit=True) as conn:
        conn.execute("DROP VIEW shop.open_orders; ALTER TABLE shop.orders ADD COLUMN channel text; "
                     "ALTER TABLE shop.orders DROP COLUMN total;")
    (second,) = run_ops(root, env, 'scan.run(connection="pg")')
    diff = second["diffSummary"]
    assert diff["tables"]["modified"] == ["shop.orders"] and diff["tables"]["deleted"] == ["shop.open_orders"]
    assert diff["columns"]["added"] == ["shop.orders.channel"]
    assert "shop.orders.total" in diff["columns"]["deleted"]
    rows = run_ops(root, env, 'sql.execute(connection="pg", sql="SELECT status, count(*) FROM shop.orders '
                              'GROUP BY status ORDER BY 1")')[0]
    assert rows["rows"] == [["closed", 30], ["open", 90]]
