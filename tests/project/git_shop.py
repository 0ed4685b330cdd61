"""A khive project in a git repository: a small SQLite shop, its query log, and git helpers (ADR 0033 tests)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

KHIVE = str(Path(sys.executable).parent / "khive")

SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, segment TEXT NOT NULL, country TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     status TEXT NOT NULL, freight NUMERIC(10, 2), created_at DATE);
CREATE TABLE order_lines (order_id INTEGER REFERENCES orders(id), line INTEGER, unit_price NUMERIC(10, 2),
                          quantity INTEGER, PRIMARY KEY (order_id, line));
"""
SEGMENTS = ("consumer", "consumer", "consumer", "smb", "enterprise")
COUNTRIES = ("DE", "FR", "JP", "US", "US", "BR")
STATUSES = ("delivered", "delivered", "delivered", "shipped", "refunded")

CONFIG = """connections:
  shop:
    driver: sqlite
    path: shop.sqlite
    historicSql:
      enabled: true
      queryLog: logs/queries.jsonl
      minExecutions: 1
      windowDays: 3650
{extra}"""

BY_SEGMENT = ("SELECT c.segment, SUM(o.freight) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
              "WHERE o.status = '{status}' GROUP BY c.segment")
LINES = ("SELECT o.status, SUM(l.quantity) FROM orders AS o JOIN order_lines AS l ON l.order_id = o.id "
         "WHERE o.created_at >= '{day}' GROUP BY o.status")
STATUS = "SELECT status, COUNT(*) FROM orders WHERE created_at >= '{day}' GROUP BY status"


def build_shop(path: Path, customers: int = 60, orders: int = 300) -> None:
    db = sqlite3.connect(path)
    db.executescript(SHOP)
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)",
                   [(i, f"Customer {i}", SEGMENTS[i % 5], COUNTRIES[i % 6]) for i in range(1, customers + 1)])
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                   [(i, 1 + i * 7 % customers, STATUSES[i % 5], 5 + i % 40, f"2026-0{1 + i % 9}-1{i % 10}")
                    for i in range(1, orders + 1)])
    db.executemany("INSERT INTO order_lines VALUES (?, ?, ?, ?)",
                   [(1 + i % orders, i, 2 + i % 17, 1 + i % 4) for i in range(1, 2 * orders + 1)])
    db.commit()
    db.close()


def write_log(path: Path, runs: Sequence[tuple[str, str, int]]) -> None:
    """``runs``: (sql, user, times); each time is one log line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for sql, user, times in runs:
            for n in range(times):
                out.write(json.dumps({"sql": sql, "user": user, "started_at": f"2026-11-2{n % 9}T10:00:00Z",
                                      "duration_ms": 40, "rows": 3}) + "\n")


def workload(by_segment: int = 40, lines: int = 15, status: int = 20) -> list[tuple[str, str, int]]:
    """Three query shapes, each in two variants run ``n // 2`` times: orders with customers, with lines, alone."""
    runs = []
    for i, value in enumerate(("delivered", "shipped")):
        runs.append((BY_SEGMENT.format(status=value), ("ann", "bob")[i], by_segment // 2))
    for i, day in enumerate(("2026-01-01", "2026-02-01")):
        runs.append((LINES.format(day=day), ("ann", "bob")[i], lines // 2))
        runs.append((STATUS.format(day=day), ("ann", "bob")[i], status // 2))
    return runs


def make_git_project(root: Path, *, extra: str = "") -> Path:
    """``khive init`` (the CLI), the shop and its log, khive.yaml naming them, and ``git init``."""
    root.parent.mkdir(parents=True, exist_ok=True)
    done = khive("init", str(root), cwd=root.parent)
    assert done.returncode == 0, done.stderr
    build_shop(root / "shop.sqlite")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", CONFIG.format(extra=extra)))
    write_log(root / "logs" / "queries.jsonl", workload())
    git(root, "init", "-q")
    (root / ".git/info/exclude").write_text("shop.sqlite\nlogs/\n")  # the warehouse and its log are not the project
    return root


def khive(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KHIVE_NO_DAEMON": "1"}
    env.pop("KHIVE_PROJECT", None)
    return subprocess.run([KHIVE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "ann", "GIT_AUTHOR_EMAIL": "ann@example.com",
           "GIT_COMMITTER_NAME": "ann", "GIT_COMMITTER_EMAIL": "ann@example.com", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def status(root: Path) -> list[str]:
    """``git status --porcelain`` lines (untracked files included)."""
    return git(root, "status", "--porcelain", "--untracked-files=all").splitlines()


def numstat(root: Path) -> dict[str, tuple[int, int]]:
    """path -> (lines added, lines deleted) of the working tree against HEAD."""
    out = {}
    for line in git(root, "diff", "--numstat").splitlines():
        added, deleted, path = line.split("\t")
        out[path] = (int(added), int(deleted))
    return out


def runs(root: Path, kind: str = "live-database") -> list[str]:
    folder = root / "raw-sources" / "shop" / kind
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def execute(root: Path, *statements: str) -> None:
    db = sqlite3.connect(root / "shop.sqlite")
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
