"""A build from nothing in two threads: one makes the rows of the next part while another writes the last (ADR 0052).

SQLite lets go of the GIL while a statement steps (FTS5's tokenising, the b-tree inserts), which is about half of a
build's time, and a machine has more than one core: while the writer thread inserts one part's rows, the caller's
thread parses the next file and makes the next rows. One connection, used by one thread at a time: the caller
hands writes over (``write``) and, before it touches the connection itself, waits for every write handed over to
be done (``settled``). The queue is bounded, so the rows waiting are a few parts' worth. A failed write stops the
writer; the caller gets its error at its next hand-over, wait or ``close``, inside the build's transaction,
which then rolls back (a killed build commits nothing, as before).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from khive.index.documents import DocumentBatch, Item
from khive.index.store import next_rowid

Write = Callable[[sqlite3.Connection], None]

# Parts waiting for the writer: enough that the caller can run ahead through a file while the writer catches up
# (a part is a few thousand documents' rows), few enough that their rows stay a small part of the build's memory.
QUEUE_PARTS = 16
# Documents per part: small enough that the first part is written soon after a file is parsed, large enough
# that a hand-over (a queue put, a thread switch) is rare.
PART_DOCUMENTS = 4096


class Writer:
    """A thread running the writes handed to it on ``db``, in order."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db
        self._queue: queue.Queue[Write | None] = queue.Queue(maxsize=QUEUE_PARTS)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="khive-index-writer", daemon=True)
        self._thread.start()

    def write(self, work: Write) -> None:
        self._raise()
        self._queue.put(work)

    def settled(self) -> sqlite3.Connection:
        """The connection, once every write handed over is done (a failed one raised here)."""
        self._queue.join()
        self._raise()
        return self._db

    def close(self) -> None:
        """Stop the thread once the writes handed over are done (or dropped after a failure); raises nothing, so
        an error on its way out is not replaced (``settled`` raises the writer's)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            try:
                if work is None:
                    return
                if self._error is None:  # after a failure the rest is dropped: the transaction rolls back
                    work(self._db)
            except BaseException as exc:  # handed to the caller's thread, which owns the transaction
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error


@dataclass
class BuildState:
    """What a build from nothing knows without asking the index (it held nothing when the build began)."""

    writer: Writer
    # every id a file of this build gave: a superset of the index's (a file that failed keeps its ids here), so a
    # file's ids are checked for clashes without a query per 500 of them (ADR 0050)
    written: set[str] = field(default_factory=set)
    # id -> kind of every document the index holds now: the targets of a file's edges are checked against it
    kinds: dict[str, str] = field(default_factory=dict)
    # the rowid of the next ``docs`` row; None once something was written out of order (read again then)
    rowid: int | None = 1

    def next_rowid(self) -> int:
        if self.rowid is None:
            self.rowid = next_rowid(self.writer.settled())
        return self.rowid

    def forget(self, ids: list[str]) -> None:
        """``ids`` left the index (a file's documents deleted)."""
        for doc_id in ids:
            self.kinds.pop(doc_id, None)
        self.rowid = None


def parts(items: Sequence[Item]) -> Iterator[slice]:
    """``items`` in runs of about ``PART_DOCUMENTS`` documents (a batch is never split)."""
    start = size = 0
    for n, item in enumerate(items):
        size += len(item) if isinstance(item, DocumentBatch) else 1
        if size >= PART_DOCUMENTS:
            yield slice(start, n + 1)
            start, size = n + 1, 0
    if start < len(items):
        yield slice(start, len(items))
