"""Driving a project the way its users do: the MCP ``request`` tool (in memory) and the ``khive`` CLI.

Imported by the tests in this folder (never from a conftest, which other test folders shadow).
"""

from __future__ import annotations

import io
import sqlite3
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import orjson
from mcp_call import request_over_mcp

from khive.cli import main
from khive.scaffold import init_project

CONNECTIONS = """connections:
  shop:
    driver: sqlite
    path: shop.sqlite
    historicSql: {enabled: true, queryLog: logs/queries.jsonl, minExecutions: 1}
"""


def shop_project(root: Path) -> Path:
    """A project with one SQLite connection ``shop`` (orders, customers) and a one-line query log."""
    init_project(root, "ann")
    db = sqlite3.connect(root / "shop.sqlite")
    db.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                     "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),"
                     " total REAL);"
                     "INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bob');"
                     "INSERT INTO orders VALUES (1, 1, 9.5), (2, 2, 12.0);")
    db.commit()
    db.close()
    (root / "logs").mkdir()
    line = {"sql": "SELECT count(*) FROM orders", "user": "ann", "started_at": "2026-11-30T10:00:00Z",
            "duration_ms": 3, "rows": 1, "error": None}
    (root / "logs" / "queries.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", CONNECTIONS))
    return root


def over_mcp(project: Path, text: str) -> dict[str, Any]:
    """One call of the ``request`` tool through an MCP client; the single op's result entry."""
    return request_over_mcp(project, text)


def over_cli(project: Path, text: str) -> dict[str, Any]:
    """``khive --project P request TEXT`` in this process (the session runs without a daemon)."""
    out = io.StringIO()
    with redirect_stdout(out):
        main(["--project", str(project), "request", text, "--presentation", "verbose"])
    (result,) = orjson.loads(out.getvalue())["results"]
    return dict(result)


def error_code(result: dict[str, Any]) -> str:
    assert not result["ok"], result
    return str(result["error"]["code"])


def files_under(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))
