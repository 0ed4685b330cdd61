"""Helpers of the discover tests: a real project (two SQLite databases, scanned; SL sources; wiki pages)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from khive.scaffold import init_project

PACKS = "core,wiki,scan,sl,discover"
Call = Callable[..., Awaitable[dict[str, Any]]]

SHOP_DDL = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, segment TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10, 2));
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     status TEXT NOT NULL, total NUMERIC(12, 2), created_at TIMESTAMP);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id), product_id INTEGER REFERENCES products(id),
                          quantity INTEGER, PRIMARY KEY (order_id, product_id));
CREATE TABLE shipments (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id), carrier TEXT);
"""
BILLING_DDL = "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount NUMERIC(12, 2), paid_at TIMESTAMP);"


def build_shop(path: Path, seed: int = 3) -> Path:
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(SHOP_DDL)
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)",
                   [(i, f"Customer {i}", f"c{i}@example.com", rng.choice(["smb", "enterprise"])) for i in range(40)])
    db.executemany("INSERT INTO products VALUES (?, ?, ?)", [(i, f"product {i}", 5 * i) for i in range(30)])
    statuses = ["delivered", "shipped", "refunded", "placed"]
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                   [(i, rng.randint(0, 39), rng.choice(statuses), rng.randint(5, 500), "2026-05-10")
                    for i in range(200)])
    db.executemany("INSERT OR IGNORE INTO order_items VALUES (?, ?, ?)",
                   [(rng.randint(0, 199), rng.randint(0, 29), rng.randint(1, 4)) for _ in range(300)])
    db.executemany("INSERT INTO shipments VALUES (?, ?, ?)",
                   [(i, rng.randint(0, 199), rng.choice(["ups", "dhl"])) for i in range(50)])
    db.commit()
    db.close()
    return path


def configure(root: Path) -> Path:
    init_project(root, "ann")
    build_shop(root / "shop.sqlite")
    billing = sqlite3.connect(root / "billing.sqlite")
    billing.executescript(BILLING_DDL)
    billing.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  shop:\n    driver: sqlite\n    path: shop.sqlite\n"
                           "  billing:\n    driver: sqlite\n    path: billing.sqlite\n"))
    return root


def write_page(root: Path, key: str, front: str, body: str, scope: str = "global") -> Path:
    folder = "wiki/global" if scope == "global" else f"wiki/users/{scope}"
    path = root / folder / f"{key}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front.strip()}\n---\n\n{body.strip()}\n")
    return path


def duckdb_project(root: Path, ddl: str) -> Path:
    """A new project whose one connection ``wh`` is a DuckDB warehouse made by ``ddl`` (not scanned yet)."""
    import duckdb

    init_project(root, "ann")
    duckdb.connect(str(root / "wh.duckdb")).execute(ddl).close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}",
                                                 "connections:\n  wh: {driver: duckdb, path: wh.duckdb}"))
    return root
