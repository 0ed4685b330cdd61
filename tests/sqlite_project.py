"""A khive project with one SQLite or DuckDB warehouse beside it: the fixture many tests start from, written once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from khive.scaffold import init_project

Rows = Sequence[tuple[str, Iterable[Sequence[Any]]]]  # (an INSERT statement, the rows it takes)


def sqlite_project(root: Path, connection: str, ddl: str, rows: Rows = ()) -> Path:
    """``khive init`` at ``root`` (user ann), the database ``<connection>.sqlite`` made from ``ddl`` and ``rows``,
    and ``khive.yaml`` naming it as the connection ``connection``."""
    init_project(root, "ann")
    db = sqlite3.connect(root / f"{connection}.sqlite")
    db.executescript(ddl)
    for statement, values in rows:
        db.executemany(statement, values)
    db.commit()
    db.close()
    _name_connection(root, connection, f"driver: sqlite\n    path: {connection}.sqlite")
    return root


def duckdb_project(root: Path, connection: str, ddl: str) -> Path:
    """``khive init`` at ``root`` (user ann), the DuckDB file ``<connection>.duckdb`` made from ``ddl`` (one or
    more statements), and ``khive.yaml`` naming it as the connection ``connection``."""
    init_project(root, "ann")
    db = duckdb.connect(str(root / f"{connection}.duckdb"))
    db.execute(ddl)
    db.close()
    _name_connection(root, connection, f"driver: duckdb\n    path: {connection}.duckdb")
    return root


def _name_connection(root: Path, connection: str, settings: str) -> None:
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", f"connections:\n  {connection}:\n    {settings}\n"))
