"""What the last projection left in each file it merged, so an unchanged rerun need not merge it again.

The projection (``projection.py``, ``pages.py``) is a ruamel round trip per file: load, merge, dump.
On an unchanged rerun every merge is a no-op, yet the loads alone cost most of a second at 50,000
templates. A merge is a function of the file's text and of its inputs (the usage blocks and presence of
the tables the file holds; for the pattern pages the patterns and the archive setting), and it is
idempotent: merging the same inputs into its own output changes nothing, whatever the day (a table
already marked stale keeps its ``staleSince``). So after each merge this memo records, per file, the
SHA-256 of the text the merge left on disk and a fingerprint of the inputs it was given; the next
projection skips a file whose text and inputs both match. A file a person edited since has another
hash and gets the full merge (their edit is kept, as always); the day enters a fingerprint only where
it can change the outcome (pattern pages waiting to be archived).

Rows live in ``.khive/historic-sql-cache.sqlite`` (table ``projected``): derived state, delete any time.
A memo that cannot be opened or read is empty: every file is merged.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from khive.sqlite_util import immediate, open_wal
from packs.historic_sql.parse import CACHE_FILE

VERSION = 1  # bump when a merge's output changes for the same inputs (what was recorded no longer holds)


def fingerprint(data: Any) -> str:
    """A digest of JSON-able inputs (keys sorted)."""
    return hashlib.sha256(orjson.dumps([VERSION, data], option=orjson.OPT_SORT_KEYS)).hexdigest()


def text_hash(data: bytes | None) -> str | None:
    """The SHA-256 the project file store reports for a file's bytes (None: no file)."""
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Record:
    content: str | None  # SHA-256 of the file after the merge
    inputs: str  # fingerprint of what the merge was given
    meta: Any  # what the next check needs to recompute the inputs without loading the file


class ProjectionMemo:
    """Records by (connection, file); see the module docstring."""

    def __init__(self, path: Path, connection: str) -> None:
        self.path, self.connection = path, connection
        self._records: dict[str, Record] = {}
        self._dirty: dict[str, Record] = {}
        self.skipped: list[str] = []  # files (or passes) a caller skipped on this memo's word
        try:
            db = self._open()
            try:
                rows = db.execute("SELECT path, content, inputs, meta FROM projected WHERE connection = ?",
                                  (connection,)).fetchall()
            finally:
                db.close()
            self._records = {path: Record(content, inputs, orjson.loads(meta)) for path, content, inputs, meta in rows}
        except (sqlite3.Error, OSError, ValueError):  # orjson's errors are ValueErrors
            self._records = {}

    @classmethod
    def for_project(cls, project: Path, connection: str) -> ProjectionMemo:
        return cls(project / ".khive" / CACHE_FILE, connection)

    def _open(self) -> sqlite3.Connection:
        db = open_wal(self.path)
        db.execute("CREATE TABLE IF NOT EXISTS projected (connection TEXT NOT NULL, path TEXT NOT NULL, content TEXT, "
                   "inputs TEXT NOT NULL, meta BLOB NOT NULL, PRIMARY KEY (connection, path))")
        return db

    def get(self, path: str) -> Record | None:
        return self._records.get(path)

    def holds(self, path: str, content: str | None, inputs: Callable[[Any], str]) -> bool:
        """True when the last merge left ``path`` with ``content`` and was given the inputs ``inputs``
        fingerprints now (from the record's meta); the caller then skips the file."""
        record = self._records.get(path)
        if record is None or record.content != content or inputs(record.meta) != record.inputs:
            return False
        self.skipped.append(path)
        return True

    def put(self, path: str, content: str | None, inputs: str, meta: Any) -> None:
        record = Record(content, inputs, meta)
        if self._records.get(path) != record:
            self._records[path] = self._dirty[path] = record

    def save(self) -> None:
        """Write what changed since loading; a memo that cannot be written is simply not kept."""
        if not self._dirty:
            return
        try:
            db = self._open()
            try:
                with immediate(db):
                    db.executemany("INSERT OR REPLACE INTO projected VALUES (?, ?, ?, ?, ?)",
                                   [(self.connection, path, r.content, r.inputs, orjson.dumps(r.meta))
                                    for path, r in self._dirty.items()])
            finally:
                db.close()
        except (sqlite3.Error, OSError, TypeError):
            return
        self._dirty.clear()
