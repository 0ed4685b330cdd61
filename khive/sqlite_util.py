"""SQLite helpers: open in WAL mode safely when several processes start at once; write transactions."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_RETRY_SECONDS = 30.0
# SQLite's default: a commit that leaves the write-ahead log longer than this many pages copies it into the file
WAL_AUTOCHECKPOINT = 1000

log = logging.getLogger(__name__)


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


def checkpoint_in_thread(path: Path) -> threading.Thread:
    """Copy ``path``'s write-ahead log into the database file from a thread and a connection of their own, started
    and returned for the caller to join. A PASSIVE checkpoint waits for no reader or writer; what it cannot copy
    yet stays in the log, which readers read as before and a later checkpoint copies."""

    def run() -> None:
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=_RETRY_SECONDS)
            try:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                db.close()
        except sqlite3.Error as exc:  # the log stays whole: only the copy is put off
            log.warning("checkpoint of %s put off: %s", path, exc)

    thread = threading.Thread(target=run, name="khive-checkpoint", daemon=True)
    thread.start()
    return thread
