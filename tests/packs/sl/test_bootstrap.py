"""sl.bootstrap from real scans (SQLite, DuckDB with two schemas, PostgreSQL): generation, merge, idempotence."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest
from ruamel.yaml import YAML
from sl_shop import configure, run_ops

pytestmark = pytest.mark.anyio


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(path.read_text())
    return data


def sources_dir(project: Path, connection: str = "shop") -> Path:
    return project / "semantic-layer" / connection


async def test_bootstrap_generates_one_source_per_table(bootstrapped: Any, project: Path) -> None:
    names = sorted(p.stem for p in sources_dir(project).glob("*.yaml"))
    assert names == ["customers", "order_items", "orders", "products", "returns"]
    orders = load(sources_dir(project) / "orders.yaml")
    assert orders["table"] == "main.orders" and orders["grain"] == ["id"]
    assert {c["name"]: c["type"] for c in orders["columns"]} == {
        "id": "number", "customer_id": "number", "status": "string", "total": "number", "created_at": "time"}
    assert [(m["name"], m["agg"], m.get("expr")) for m in orders["measures"]] == [
        ("orders_count", "count", None), ("sum_total", "sum", "total")]
    assert [(j["to"], j["relationship"], j["on"]) for j in orders["joins"]] == [
        ("customers", "many_to_one", [{"from": "customer_id", "to": "id"}]),
        ("order_items", "one_to_many", [{"from": "id", "to": "order_id"}]),
        ("returns", "one_to_many", [{"from": "id", "to": "order_id"}])]
    items = load(sources_dir(project) / "order_items.yaml")
    assert items["grain"] == ["order_id", "product_id"]
    assert [m["name"] for m in items["measures"]] == ["order_items_count", "total_quantity"]
    assert {j["to"]: j["relationship"] for j in items["joins"]} == {"orders": "many_to_one",
                                                                   "products": "many_to_one"}
    products = load(sources_dir(project) / "products.yaml")
    assert [m["name"] for m in products["measures"]] == ["products_count", "avg_price"]  # a price: averaged
    customers = load(sources_dir(project) / "customers.yaml")
    assert [m["name"] for m in customers["measures"]] == ["customers_count"]  # no amount-like column
    listed = await bootstrapped('sl.list(connection="shop")')
    assert listed["count"] == 5 and listed["errors"] == {}
    for name in names:
        assert (await bootstrapped(f'sl.read(name="{name}")'))["problems"] == []


async def test_bootstrap_twice_changes_nothing(bootstrapped: Any, project: Path) -> None:
    before = {p.name: p.read_bytes() for p in sources_dir(project).glob("*.yaml")}
    again = await bootstrapped('sl.bootstrap(connection="shop")')
    assert again["created"] == [] and again["updated"] == [] and len(again["unchanged"]) == 5
    assert {p.name: p.read_bytes() for p in sources_dir(project).glob("*.yaml")} == before


async def test_bootstrap_keeps_what_a_person_wrote(bootstrapped: Any, project: Path) -> None:
    path = sources_dir(project) / "customers.yaml"
    text = path.read_text()
    text = text.replace("name: customers\n", "name: customers\ndescriptions:\n  user: People who buy  # ours\n", 1)
    text = text.replace("  - name: segment\n", "  # the sales segment\n  - name: segment\n"
                                               "    descriptions:\n      ai: smb or enterprise\n", 1)
    count = "    description: Number of customers rows\n"
    assert count in text
    text = text.replace(count, count + "  - name: big_customers\n    agg: count_distinct\n    expr: id\n"
                                       "    filter: segment = 'enterprise'\n")
    path.write_text(text)
    db = sqlite3.connect(project / "shop.sqlite")
    db.execute("ALTER TABLE customers ADD COLUMN country TEXT")
    db.close()
    await bootstrapped('scan.run(connection="shop")')
    report = await bootstrapped('sl.bootstrap(connection="shop")')
    assert report["updated"] == ["semantic-layer/shop/customers.yaml"] and len(report["unchanged"]) == 4
    after = path.read_text()
    assert "user: People who buy  # ours" in after and "# the sales segment" in after
    data = load(path)
    assert [c["name"] for c in data["columns"]] == ["id", "name", "email", "segment", "country"]
    assert data["columns"][3]["descriptions"] == {"ai": "smb or enterprise"}
    assert [m["name"] for m in data["measures"]] == ["customers_count", "big_customers"]
    assert (await bootstrapped('sl.bootstrap(connection="shop")'))["updated"] == []


async def test_bootstrap_extends_the_source_that_reads_the_table(scanned: Any, project: Path) -> None:
    folder = sources_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sales.yaml").write_text("# our name for orders\nname: sales\ntable: main.orders\ncolumns:\n"
                                       "  - name: id\n    type: number\n")
    report = await scanned('sl.bootstrap(connection="shop")')
    assert "semantic-layer/shop/sales.yaml" in report["updated"]
    assert not (folder / "orders.yaml").exists()
    sales = load(folder / "sales.yaml")
    assert len(sales["columns"]) == 5 and sales["grain"] == ["id"]
    assert (folder / "sales.yaml").read_text().startswith("# our name for orders\nname: sales\n")
    assert load(folder / "customers.yaml")["joins"][0]["to"] == "sales"


async def test_bootstrap_leaves_a_broken_file_alone(bootstrapped: Any, project: Path) -> None:
    path = sources_dir(project) / "orders.yaml"
    path.write_text("name: orders\ncolumns: [\n")
    report = await bootstrapped('sl.bootstrap(connection="shop")')
    assert path.read_text() == "name: orders\ncolumns: [\n"
    assert not (sources_dir(project) / "orders_2.yaml").exists()
    assert {s.get("table") for s in report["skipped"]} >= {"main.orders"}
    assert any(s.get("source") == "orders" and s["problems"] for s in report["skipped"])
    assert report["created"] == [] and report["updated"] == []


async def test_bootstrap_needs_a_scan(call: Any) -> None:
    result = await call('sl.bootstrap(connection="shop")')
    assert result["error"]["code"] == "scan_missing"
    assert (await call('sl.bootstrap(connection="nope")'))["error"]["code"] == "connection_not_found"


def test_bootstrap_from_duckdb_with_two_schemas(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    configure(root, "  wh:\n    driver: duckdb\n    path: wh.duckdb\n")
    db = duckdb.connect(str(root / "wh.duckdb"))
    db.execute("""
        CREATE SCHEMA sales; CREATE SCHEMA crm;
        CREATE TABLE crm.accounts (id INTEGER PRIMARY KEY, name VARCHAR, tier VARCHAR, active BOOLEAN);
        COMMENT ON TABLE crm.accounts IS 'Customer accounts';
        COMMENT ON COLUMN crm.accounts.tier IS 'gold, silver or bronze';
        CREATE TABLE crm.notes (id INTEGER PRIMARY KEY, body VARCHAR);
        CREATE TABLE sales.notes (id INTEGER PRIMARY KEY, body VARCHAR);
        CREATE TABLE sales.orders (id INTEGER PRIMARY KEY, account_id INTEGER, amount DECIMAL(12,2),
                                   ordered_at TIMESTAMP);
        CREATE TABLE sales.lines (order_id INTEGER REFERENCES sales.orders(id), n INTEGER, unit_price DOUBLE,
                                  "Gift Note" VARCHAR, PRIMARY KEY (order_id, n));
        CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE amount > 100;
        INSERT INTO crm.accounts SELECT i, 'acct ' || i, CASE WHEN i % 5 = 0 THEN 'gold' ELSE 'bronze' END, true
            FROM range(1, 41) t(i);
        INSERT INTO sales.orders SELECT i, 1 + i % 40, i * 3.5, TIMESTAMP '2026-01-01' + INTERVAL (i) HOUR
            FROM range(1, 201) t(i);
    """)
    db.close()
    _, report, again = run_ops(root, {}, 'scan.run(connection="wh")', 'sl.bootstrap(connection="wh")',
                               'sl.bootstrap(connection="wh")')
    folder = sources_dir(root, "wh")
    assert sorted(p.stem for p in folder.glob("*.yaml")) == ["accounts", "big_orders", "crm_notes", "lines",
                                                           "orders", "sales_notes"]
    assert report["errors"] == [] and len(report["created"]) == 6
    assert again["created"] == [] and again["updated"] == [] and len(again["unchanged"]) == 6
    big = load(folder / "big_orders.yaml")
    assert "grain" not in big and [m["name"] for m in big["measures"]] == ["big_orders_count", "total_amount"]
    accounts = load(folder / "accounts.yaml")
    assert accounts["table"] == "crm.accounts" and accounts["descriptions"] == {"db": "Customer accounts"}
    tier = next(c for c in accounts["columns"] if c["name"] == "tier")
    assert tier["descriptions"] == {"db": "gold, silver or bronze"}
    assert next(c for c in accounts["columns"] if c["name"] == "active")["type"] == "boolean"
    orders = load(folder / "orders.yaml")
    assert orders["table"] == "sales.orders"
    assert {c["name"]: c["type"] for c in orders["columns"]}["ordered_at"] == "time"
    assert [m["name"] for m in orders["measures"]] == ["orders_count", "total_amount"]
    joins = {j["to"]: j for j in orders["joins"]}
    assert joins["accounts"]["relationship"] == "many_to_one"  # an accepted inferred relationship
    assert joins["accounts"]["on"] == [{"from": "account_id", "to": "id"}]
    assert joins["lines"]["relationship"] == "one_to_many"
    assert {j["to"]: j["relationship"] for j in load(folder / "accounts.yaml")["joins"]} == {"orders": "one_to_many"}
    lines = load(folder / "lines.yaml")
    assert [m["name"] for m in lines["measures"]] == ["lines_count", "avg_unit_price"]
    assert lines["columns"][-1] == {"name": "Gift_Note", "type": "string", "expr": '"Gift Note"'}
    (listed,) = run_ops(root, {}, 'sl.list(connection="wh")')
    assert listed["count"] == 6 and listed["errors"] == {}

    db = duckdb.connect(str(root / "wh.duckdb"))
    db.execute("COMMENT ON TABLE crm.accounts IS 'Accounts of paying customers'; "
               "COMMENT ON COLUMN crm.accounts.tier IS NULL")
    db.close()
    _, refreshed = run_ops(root, {}, 'scan.run(connection="wh")', 'sl.bootstrap(connection="wh")')
    assert refreshed["updated"] == ["semantic-layer/wh/accounts.yaml"]
    accounts = load(folder / "accounts.yaml")
    assert accounts["descriptions"] == {"db": "Accounts of paying customers"}
    assert "descriptions" not in next(c for c in accounts["columns"] if c["name"] == "tier")


@pytest.mark.postgres
def test_bootstrap_from_postgres(tmp_path: Path, pg_database: str) -> None:
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
                                      status text NOT NULL, total numeric(12,2), paid boolean);
            INSERT INTO ref.countries VALUES ('DE', 'Germany'), ('FR', 'France');
            INSERT INTO shop.customers SELECT i, CASE WHEN i % 2 = 0 THEN 'DE' ELSE 'FR' END, 'c' || i || '@x.io'
                FROM generate_series(1, 30) i;
            INSERT INTO shop.orders SELECT i, 1 + i % 30, CASE WHEN i % 4 = 0 THEN 'refunded' ELSE 'open' END, i,
                i % 2 = 0 FROM generate_series(1, 120) i;
            ANALYZE;
        """)
    root = tmp_path / "proj"
    configure(root, "  pg:\n    driver: postgres\n    url: env:TEST_PG_URL\n")
    env = {"TEST_PG_URL": pg_database}
    _, report, again, found = run_ops(root, env, 'scan.run(connection="pg")', 'sl.bootstrap(connection="pg")',
                                      'sl.bootstrap(connection="pg")', 'sl.dictionary_search(query="refunded")')
    folder = sources_dir(root, "pg")
    assert sorted(p.stem for p in folder.glob("*.yaml")) == ["countries", "customers", "orders"]
    assert report["errors"] == [] and len(again["unchanged"]) == 3
    countries = load(folder / "countries.yaml")
    assert countries["table"] == "ref.countries" and countries["grain"] == ["code"]
    assert countries["descriptions"] == {"db": "ISO countries"}
    customers = load(folder / "customers.yaml")
    assert {c["name"]: c["type"] for c in customers["columns"]}["created_at"] == "time"
    assert next(c for c in customers["columns"] if c["name"] == "country_code")["descriptions"] == {
        "db": "ISO 3166 alpha-2"}
    assert {j["to"]: j["relationship"] for j in customers["joins"]} == {"countries": "many_to_one",
                                                                       "orders": "one_to_many"}
    orders = load(folder / "orders.yaml")
    assert {c["name"]: c["type"] for c in orders["columns"]}["paid"] == "boolean"
    assert [m["name"] for m in orders["measures"]] == ["orders_count", "sum_total"]
    hit = found["hits"][0]
    assert (hit["table"], hit["column"], hit["sources"]) == ("shop.orders", "status", ["orders"])


def test_bootstrap_reads_what_people_write_in_shards(tmp_path: Path) -> None:
    """Shards are read with libyaml's parser (the bounded loader only for what it cannot read): a comment-only
    edit gives the same sources, a hand edit is seen."""
    from sl_shop import build_shop

    root = tmp_path / "proj"
    configure(root, "  shop:\n    driver: sqlite\n    path: shop.sqlite\n")
    build_shop(root / "shop.sqlite")
    run_ops(root, {}, 'scan.run(connection="shop")')
    edits = {"untouched": lambda text: text, "comment": lambda text: "# reviewed by ann\n" + text,
             "dropped": lambda text: text.replace("\n  returns:\n", "\n  returns:\n    droppedInSync: by-hand\n", 1)}
    written = {}
    for name, edit in edits.items():
        copy = tmp_path / name
        shutil.copytree(root, copy)
        shard = next((copy / "_schema" / "shop").glob("*.yaml"))
        shard.write_text(edit(shard.read_text()))
        (report,) = run_ops(copy, {}, 'sl.bootstrap(connection="shop")')
        assert report["errors"] == []
        written[name] = {p.name: p.read_bytes() for p in sources_dir(copy).glob("*.yaml")}
    assert written["comment"] == written["untouched"] and "returns.yaml" in written["untouched"]
    assert sorted(written["dropped"]) == sorted(set(written["untouched"]) - {"returns.yaml"})
