from __future__ import annotations

import random
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from khive.bootstrap import open_runtime
from khive.runtime import Runtime
from khive.scaffold import init_project

SHOP_DDL = """
CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category_id INTEGER REFERENCES categories(id),
                       price NUMERIC(10, 2));
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, segment TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     status TEXT NOT NULL DEFAULT 'placed', total NUMERIC(12, 2), created_at TIMESTAMP);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id), product_id INTEGER REFERENCES products(id),
                          quantity INTEGER, PRIMARY KEY (order_id, product_id));
CREATE VIEW order_totals AS SELECT customer_id, SUM(total) AS total FROM orders GROUP BY customer_id;
"""


def build_shop(path: Path, *, seed: int = 1) -> Path:
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(SHOP_DDL)
    db.executemany("INSERT INTO categories VALUES (?, ?)", [(i, f"category {i}") for i in range(1, 6)])
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)",
                   [(i, f"product {i}", rng.randint(1, 5), rng.randint(1, 500)) for i in range(1, 41)])
    segments = ["enterprise"] * 2 + ["smb"] * 5 + ["consumer"] * 13
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)",
                   [(i, f"Customer {i}", f"c{i}@example.com", rng.choice(segments)) for i in range(1, 101)])
    statuses = ["delivered"] * 12 + ["shipped"] * 4 + ["refunded"] * 2 + ["placed"] * 2
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                   [(i, rng.randint(1, 100), rng.choice(statuses), rng.randint(5, 900),
                     f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 10:00:00") for i in range(1, 501)])
    db.executemany("INSERT OR IGNORE INTO order_items VALUES (?, ?, ?)",
                   [(rng.randint(1, 500), rng.randint(1, 40), rng.randint(1, 5)) for _ in range(1500)])
    db.commit()
    db.close()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init_project(root, "ann")
    build_shop(root / "shop.sqlite")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  shop:\n    driver: sqlite\n    path: shop.sqlite\n"
                           "    description: the demo shop\n"))
    return root


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {"KHIVE_PACKS": "core,scan"})
    yield runtime
    await runtime.aclose()
