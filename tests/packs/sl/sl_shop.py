"""Helpers of the sl pack's tests: a small SQLite shop, a project with connections, ops in a fresh runtime."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

PACKS = "core,scan,sl"
SHOP_DDL = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, segment TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10, 2));
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     status TEXT NOT NULL, total NUMERIC(12, 2), created_at TIMESTAMP);
CREATE TABLE order_items (order_id INTEGER REFERENCES orders(id), product_id INTEGER REFERENCES products(id),
                          quantity INTEGER, PRIMARY KEY (order_id, product_id));
CREATE TABLE returns (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id), reason TEXT);
"""

Call = Callable[..., Awaitable[dict[str, Any]]]


def build_shop(path: Path, *, seed: int = 7) -> Path:
    """A small shop: 'refunded' is an orders.status value, 'Acme Corp' a customer name, emails are sensitive."""
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(SHOP_DDL)
    names = ["Acme Corp", "Globex", "Initech", "Umbrella", "Hooli"]
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)",
                   [(i, names[i % 5], f"c{i}@example.com", rng.choice(["smb", "enterprise"])) for i in range(1, 41)])
    db.executemany("INSERT INTO products VALUES (?, ?, ?)", [(i, f"product {i}", 5 * i) for i in range(1, 31)])
    statuses = ["delivered"] * 10 + ["shipped"] * 4 + ["refunded"] * 3 + ["placed"] * 3
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                   [(i, rng.randint(1, 40), rng.choice(statuses), rng.randint(5, 500), f"2026-0{1 + i % 9}-10")
                    for i in range(1, 201)])
    db.executemany("INSERT OR IGNORE INTO order_items VALUES (?, ?, ?)",
                   [(rng.randint(1, 200), rng.randint(1, 30), rng.randint(1, 4)) for _ in range(400)])
    reasons = ["refunded to card"] * 3 + ["not refunded, exchanged"] * 2 + ["damaged"] * 5
    db.executemany("INSERT INTO returns VALUES (?, ?, ?)",
                   [(i, rng.randint(1, 200), rng.choice(reasons)) for i in range(1, 31)])
    db.commit()
    db.close()
    return path


def configure(root: Path, block: str) -> None:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n" + block))


def run_ops(root: Path, env: dict[str, str], *texts: str) -> list[dict[str, Any]]:
    """Run ops in a fresh runtime (each must succeed) and return their results."""

    async def go() -> list[dict[str, Any]]:
        runtime = open_runtime(root, {"KHIVE_PACKS": PACKS, **env})
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


async def ops(root: Path, env: dict[str, str], *texts: str) -> list[dict[str, Any]]:
    """Each op through the dispatcher on one fresh runtime; a failed op gives ``{"error": ...}``."""
    runtime = open_runtime(root, env)
    try:
        out = []
        for text in texts:
            envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
            result = envelope["results"][0]
            out.append(result["result"] if result["ok"] else {"error": result["error"]})
        return out
    finally:
        await runtime.aclose()


def source(root: Path, connection: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((root / "semantic-layer" / connection / f"{name}.yaml").read_text())
    return data


def layer(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted((root / "semantic-layer").rglob("*.yaml"))}
