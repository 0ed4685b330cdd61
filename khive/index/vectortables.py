"""The in-memory vector tables a search scores, loaded on first use for the kinds it asks (ADR 0049).

Every lane of ``discover.search`` asks for some kinds (wiki pages, semantic-layer documents); after a scan the
index holds 200,000 column vectors that none of them scores. Loading the whole table for the first search was
about a second at 10,000 tables; a search of some kinds now loads those kinds' rows only (a table per set of
kinds, laid out as the whole one is: kind by kind, rowid order inside a kind), and a search of every kind loads
the whole table, which then serves every search until the index changes. A search scores the same rows in the
same order either way, so its answer does not depend on which table it got.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from khive.gcpause import paused_gc
from khive.index import vectorscan
from khive.index.search import VectorTable


class VectorTables:
    """The loaded tables of one index connection (callers hold the index's lock while reading)."""

    def __init__(self) -> None:
        self._whole: VectorTable | None = None
        self._of_kinds: dict[frozenset[str], VectorTable] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every table (the index changed)."""
        with self._lock:
            self._whole = None
            self._of_kinds = {}

    def for_kinds(self, db: sqlite3.Connection, kinds: Sequence[str] | None, dims: int) -> VectorTable:
        """A table holding at least the rows of ``kinds`` (every row when None)."""
        with self._lock:
            if self._whole is not None:
                return self._whole
            if not kinds:
                self._whole = _load(db, None, dims)
                self._of_kinds = {}  # the whole table serves those searches now
                return self._whole
            wanted = frozenset(kinds)
            table = self._of_kinds.get(wanted)
            if table is None:
                table = self._of_kinds[wanted] = _load(db, sorted(wanted), dims)
            return table


def _load(db: sqlite3.Connection, kinds: Sequence[str] | None, dims: int) -> VectorTable:
    params: tuple[str, ...] = ()
    if kinds is None:
        vectors_sql = "SELECT doc_rowid, vector FROM vectors ORDER BY doc_rowid"
        kinds_sql = "SELECT kind, rowid FROM docs ORDER BY kind, rowid"
    else:
        marks = ", ".join("?" * len(kinds))
        # The documents' rowids from the kind index, then each one's vector by its key: the other kinds' rows
        # (a catalog's columns) are never read.
        vectors_sql = (f"SELECT doc_rowid, vector FROM vectors WHERE doc_rowid IN "
                       f"(SELECT rowid FROM docs WHERE kind IN ({marks})) ORDER BY doc_rowid")
        kinds_sql, params = f"SELECT kind, rowid FROM docs WHERE kind IN ({marks}) ORDER BY kind, rowid", tuple(kinds)
    with paused_gc():  # a row object per document; after a build the collector's passes see millions
        vectors, rowids, kind_rows = vectorscan.load(iter(db.execute(vectors_sql, params)),
                                                     iter(db.execute(kinds_sql, params)), dims)
    return VectorTable(vectors, rowids.tolist(), kind_rows, rowids)
