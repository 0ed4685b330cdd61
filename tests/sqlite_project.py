"""A khive project with one SQLite warehouse beside it: the fixture many tests start from, written once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

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
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", f"connections:\n  {connection}:\n    driver: sqlite\n    path: {connection}.sqlite\n"))
    return root
