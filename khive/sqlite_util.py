"""SQLite helpers: open in WAL mode safely when several processes start at once; write transactions."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_RETRY_SECONDS = 30.0


def open_wal(path: Path, *, timeout: float = 30.0, page_size: int | None = None) -> sqlite3.Connection:
    """A connection with WAL, synchronous=NORMAL and a busy timeout; ``page_size``: a new file's (an existing
    file keeps the one it was made with: in WAL mode SQLite cannot change it).

    Switching a fresh file to WAL needs an exclusive lock and SQLite does not wait for it through
    the busy handler, so two processes opening the same new file can see "database is locked";
    WAL is persistent, so we only switch when needed and retry briefly.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=timeout)
    db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    if page_size is not None:  # before anything writes the file's header
        db.execute(f"PRAGMA page_size={int(page_size)}")
    deadline = time.monotonic() + _RETRY_SECONDS
    while True:
        try:
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.02)
    db.execute("PRAGMA synchronous=NORMAL")
    return db


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction taken up front (BEGIN IMMEDIATE: no lock upgrade to fail midway), rolled back on error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def statements(script: str) -> list[str]:
    """A script's statements, to run them inside one transaction (executescript would commit first)."""
    found, current = [], ""
    for line in script.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            found.append(current)
            current = ""
    return found
