"""The generated shop: deterministic, documented, linked, and shaped like a real one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from khive.cli.demo.schema import SCHEMAS, TABLES
from khive.cli.demo.warehouse import WarehouseBuild, build_warehouse


def fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with duckdb.connect(str(path), read_only=True) as con:
        for table in TABLES:
            rows = con.execute(f"SELECT * FROM {table.name} ORDER BY ALL").fetchall()
            digest.update(f"{table.name}:{rows!r}".encode())
    return digest.hexdigest()


def scalar(path: Path, sql: str) -> object:
    with duckdb.connect(str(path), read_only=True) as con:
        row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


def test_same_seed_same_data_other_seed_other_data(tmp_path: Path) -> None:
    first = build_warehouse(tmp_path / "first.duckdb", scale=0.1)
    again = build_warehouse(tmp_path / "again.duckdb", scale=0.1)
    other = build_warehouse(tmp_path / "other.duckdb", seed=1, scale=0.1)
    assert again.rows == first.rows
    assert fingerprint(again.path) == fingerprint(first.path)
    assert fingerprint(other.path) != fingerprint(first.path)


def test_rebuild_is_skipped_when_the_same_build_is_there(tmp_path: Path) -> None:
    path = tmp_path / "shop.duckdb"
    first = build_warehouse(path, scale=0.05)
    assert first.rebuilt
    assert not build_warehouse(path, scale=0.05).rebuilt
    assert build_warehouse(path, scale=0.1).rebuilt  # another build replaces it
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left


def test_schemas_tables_comments_and_keys(shop_path: Path) -> None:
    with duckdb.connect(str(shop_path), read_only=True) as con:
        tables = con.execute("SELECT schema_name, table_name, comment FROM duckdb_tables()").fetchall()
        undocumented = con.execute("SELECT count(*) FROM duckdb_columns() WHERE NOT internal AND "
                                   "coalesce(comment, '') = '' AND column_name <> 'id'").fetchone()
        fks = con.execute("SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'").fetchone()
    assert {schema for schema, _, _ in tables} == set(SCHEMAS)
    assert len(tables) == len(TABLES) >= 15
    assert all(comment for _, _, comment in tables)
    assert undocumented is not None and undocumented[0] < 25  # only self-explanatory columns go without
    assert fks is not None and fks[0] >= 12


def test_data_is_skewed_seasonal_and_has_nulls(shop: WarehouseBuild) -> None:
    path = shop.path
    assert 10**3 <= shop.rows["sales.orders"] <= 10**5
    # A few customers place many orders (Zipf-like), most place few.
    top_share = scalar(path, "SELECT sum(n) / (SELECT count(*) FROM sales.orders) FROM (SELECT count(*) AS n "
                             "FROM sales.orders GROUP BY customer_id ORDER BY n DESC LIMIT 60)")
    assert float(top_share) > 0.1  # type: ignore[arg-type]
    delivered = scalar(path, "SELECT avg((status = 'delivered')::int) FROM sales.orders")
    assert 0.6 < float(delivered) < 0.9  # type: ignore[arg-type]
    # Black Friday week beats the two weeks before it.
    peak = scalar(path, "SELECT count(*) FILTER (WHERE ordered_at BETWEEN '2025-11-24' AND '2025-11-30 23:59') * 1.0 "
                        "/ (count(*) FILTER (WHERE ordered_at BETWEEN '2025-11-10' AND '2025-11-23 23:59') / 2.0) "
                        "FROM sales.orders")
    assert float(peak) > 1.5  # type: ignore[arg-type]
    assert scalar(path, "SELECT count(*) FROM sales.customers WHERE birth_year IS NULL") > 0  # type: ignore[operator]
    assert scalar(path, "SELECT count(*) FROM sales.shipments WHERE delivered_at IS NULL") > 0  # type: ignore[operator]


def test_amounts_and_links_are_consistent(shop_path: Path) -> None:
    mismatched = scalar(shop_path, "SELECT count(*) FROM sales.orders "
                                   "WHERE total_amount <> subtotal - discount_amount + shipping_fee")
    assert mismatched == 0
    # Cross-schema links hold even though DuckDB cannot declare them.
    orphans = scalar(shop_path, "SELECT count(*) FROM finance.payments p LEFT JOIN sales.orders o ON o.id = p.order_id "
                                "WHERE o.id IS NULL")
    assert orphans == 0
    early = scalar(shop_path, "SELECT count(*) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id "
                              "WHERE o.ordered_at < c.signup_at")
    assert early == 0
