"""A skewed DuckDB shop and its semantic-layer sources, for the compiler tests.

customers <- orders <- order_items -> products -> categories, orders -> stores, returns -> customers.
Few customers place most orders, some orders have no items, orders repeat products and categories
across their lines, so a naive join double counts visibly.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from packs.sl.models import Source

DDL = """
CREATE TABLE categories (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
CREATE TABLE stores (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, category_id INTEGER, store_id INTEGER);
CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR, segment VARCHAR, signup_date DATE);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, store_id INTEGER, status VARCHAR,
                     amount DECIMAL(12, 2), created_at TIMESTAMP);
CREATE TABLE order_items (order_id INTEGER, product_id INTEGER, quantity INTEGER, unit_price DECIMAL(10, 2));
CREATE TABLE returns (id INTEGER PRIMARY KEY, customer_id INTEGER, amount DECIMAL(12, 2), reason VARCHAR);
"""


def _insert(db: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """One multi-row INSERT (DuckDB's executemany is slow); values are numbers and plain strings."""
    def literal(value: Any) -> str:
        return f"'{value}'" if isinstance(value, str) else str(value)

    db.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({', '.join(map(literal, row))})" for row in rows))


def build_shop(path: Path, *, seed: int = 7) -> Path:
    rng = random.Random(seed)
    db = duckdb.connect(str(path))
    db.execute(DDL)
    _insert(db, "categories", [(1, "books"), (2, "games"), (3, "tools"), (4, "toys")])
    _insert(db, "stores", [(1, "north"), (2, "south"), (3, "online")])
    _insert(db, "products", [(i, f"product {i}", rng.choices([1, 2, 3, 4], weights=[6, 3, 2, 1])[0],
                              rng.randint(1, 3)) for i in range(1, 16)])
    segments = rng.choices(["enterprise", "smb", "consumer"], weights=[1, 3, 8], k=30)
    _insert(db, "customers", [(i, f"customer {i}", segments[i - 1],
                               f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}") for i in range(1, 31)])
    heavy = [1, 2, 3]  # a few customers place most orders
    orders: list[tuple[Any, ...]] = []
    for i in range(1, 241):
        customer = rng.choice(heavy) if rng.random() < 0.5 else rng.randint(1, 30)
        status = rng.choices(["delivered", "shipped", "refunded", "placed"], weights=[10, 4, 2, 2])[0]
        amount = Decimal(rng.randint(500, 90_000)) / 100
        orders.append((i, customer, rng.randint(1, 3), status, amount,
                       f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:15:00"))
    _insert(db, "orders", orders)
    items: list[tuple[Any, ...]] = []
    for order in range(1, 241):
        for _ in range(rng.choices([0, 1, 2, 3, 5], weights=[2, 4, 3, 2, 1])[0]):
            product = rng.choices(range(1, 16), weights=[8, 6, 5, 4, 3] + [1] * 10)[0]
            items.append((order, product, rng.randint(1, 5), Decimal(rng.randint(100, 5000)) / 100))
    _insert(db, "order_items", items)
    _insert(db, "returns", [(i, rng.choice(heavy) if rng.random() < 0.6 else rng.randint(1, 30),
                             Decimal(rng.randint(100, 20_000)) / 100, rng.choice(["damaged", "late", "unwanted"]))
                            for i in range(1, 41)])
    db.close()
    return path


def source_dicts(*, ambiguous: bool = False) -> list[dict[str, Any]]:
    """The sources as they would be written in YAML; ``ambiguous`` adds products -> stores."""
    products_joins: list[dict[str, Any]] = [
        {"to": "categories", "on": [{"from": "category_id", "to": "id"}], "relationship": "many_to_one"}]
    if ambiguous:
        products_joins.append({"to": "stores", "on": [{"from": "store_id", "to": "id"}]})
    return [
        {"name": "customers", "table": "customers", "grain": ["id"],
         "columns": [{"name": "id", "type": "number"}, {"name": "name"}, {"name": "segment"},
                     {"name": "signup_date", "type": "time"}],
         "measures": [{"name": "customer_count", "agg": "count"}],
         "segments": [{"name": "business", "filter": "segment IN ('enterprise', 'smb')"}]},
        {"name": "orders", "table": "orders", "grain": ["id"],
         "columns": [{"name": "id", "type": "number"}, {"name": "status"}, {"name": "created_at", "type": "time"},
                     {"name": "big", "type": "boolean", "expr": "amount >= 500"}],
         "measures": [{"name": "revenue", "agg": "sum", "expr": "amount"},
                      {"name": "order_count", "agg": "count"},
                      {"name": "avg_amount", "agg": "avg", "expr": "amount"},
                      {"name": "largest", "agg": "max", "expr": "amount"},
                      {"name": "smallest", "agg": "min", "expr": "amount"},
                      {"name": "unique_customers", "agg": "count_distinct", "expr": "customer_id"},
                      {"name": "delivered_revenue", "agg": "sum", "expr": "amount", "filter": "status = 'delivered'"},
                      {"name": "aov", "agg": "derived", "expr": "revenue / order_count"},
                      {"name": "delivered_share", "agg": "derived", "expr": "delivered_revenue / revenue"}],
         "joins": [{"to": "customers", "on": [{"from": "customer_id", "to": "id"}]},
                   {"to": "stores", "on": [{"from": "store_id", "to": "id"}]},
                   {"to": "order_items", "on": [{"from": "id", "to": "order_id"}], "relationship": "one_to_many"}],
         "segments": [{"name": "delivered", "filter": "status = 'delivered'"}]},
        {"name": "order_items", "table": "order_items",
         "columns": [{"name": "order_id", "type": "number"}, {"name": "product_id", "type": "number"}],
         "measures": [{"name": "quantity", "agg": "sum", "expr": "quantity"},
                      {"name": "revenue", "agg": "sum", "expr": "quantity * unit_price"}],
         "joins": [{"to": "orders", "on": [{"from": "order_id", "to": "id"}]},
                   {"to": "products", "on": [{"from": "product_id", "to": "id"}]}]},
        {"name": "products", "table": "products", "grain": ["id"],
         "columns": [{"name": "id", "type": "number"}, {"name": "name"}], "joins": products_joins},
        {"name": "categories", "table": "categories", "grain": ["id"],
         "columns": [{"name": "id", "type": "number"}, {"name": "name"}]},
        {"name": "stores", "table": "stores", "columns": [{"name": "name"}]},
        {"name": "returns", "table": "returns", "grain": ["id"],
         "columns": [{"name": "id", "type": "number"}, {"name": "reason"}],
         "measures": [{"name": "refund_total", "agg": "sum", "expr": "amount"},
                      {"name": "return_count", "agg": "count"}],
         "joins": [{"to": "customers", "on": [{"from": "customer_id", "to": "id"}]}]},
    ]


def shop_sources(*, ambiguous: bool = False) -> dict[str, Source]:
    return {data["name"]: Source.model_validate(data) for data in source_dicts(ambiguous=ambiguous)}
