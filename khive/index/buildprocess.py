"""A build from nothing whose SQLite writes a second process makes, while this one makes the rows (ADR 0056).

The build is about as much Python (the sources' documents, the rows, the vectors) as SQLite (the inserts, the
lookup indexes, the commit), one after the other on one core; a writer *thread* cannot overlap them, the
``sqlite3`` module takes the GIL back after every row (ADR 0052). A child interpreter has a GIL of its own: it owns
the build's transaction (``khive.index.buildchild``) and runs the statements this process sends through a pipe.

``ChildWriter`` stands for the index's connection during such a build. Its writes are pickled (no memo: the rows
are trees of new strings, the memo would track them for nothing) and queued for a sender thread, which writes them
to the pipe: a pipe holds 64 KiB, so written from the building thread each statement would wait for the child to
finish the one before (a blocked pipe write does not hold the GIL, so the building thread runs ahead). Its reads
(``SELECT``) answer from what the parent's connection sees, the index committed before the build: nothing. Only
what a build from nothing asks of its own rows so far can be answered that way, so the engine sends here only a
build from nothing that meets no id twice (ADR 0052's path), and a file that fails writes nothing.
"""

from __future__ import annotations

import io
import os
import pickle
import queue
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import khive
from khive.index import buildchild
from khive.index.newrows import INSERT_DOC
from khive.index.store import MAX_ROWID

# A second interpreter starts in about 0.1 s; a build from nothing takes about 0.16 s per MB of the files it reads
# (10,000 tables: 51 MB, 8 s). Below a few MB the start is not paid back.
DEFAULT_MIN_BYTES = 4 * 1024 * 1024

# The child imports khive from where this process did, whatever its working directory and sys.path.
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from khive.index.buildchild import main; main(sys.argv[2])"


@dataclass(frozen=True, slots=True)
class BuildProcess:
    """When a build from nothing writes through a second process: files of at least ``min_bytes`` in all, more than
    one CPU, and a 1-minute load average of at most ``max_load`` (None: the CPUs less a half, about one core free).
    It gains wall time only while a core is free, and always costs CPU (ADR 0055, 0056). ``python``: the
    interpreter to start (this one by default)."""

    min_bytes: int = DEFAULT_MIN_BYTES
    max_load: float | None = None
    python: str = sys.executable

    def wanted(self, file_bytes: int) -> bool:
        cpus = os.cpu_count() or 1
        limit = self.max_load if self.max_load is not None else cpus - 0.5
        return file_bytes >= self.min_bytes and cpus > 1 and os.getloadavg()[0] <= limit


class WriterGone(Exception):
    """The writer process stopped before it committed: killed, never ran, failed a statement, or it found the index
    no longer empty. Nothing of the build is in the index."""


def holds_nothing(db: sqlite3.Connection) -> bool:
    """Whether the index has no file recorded and no document (the child asks again under its write lock)."""
    return bool(db.execute(buildchild.HOLDS_NOTHING).fetchone()[0])


class ChildWriter:
    """The index's connection for one build from nothing: writes to a child process, reads from ``reads``."""

    def __init__(self, reads: sqlite3.Connection, index_file: Path, python: str):
        self._reads = reads
        root = str(Path(khive.__file__).resolve().parents[1])
        # -I -S: no site, no environment, no working directory on the path: an interpreter that imports little
        self._child = subprocess.Popen([python, "-I", "-S", "-c", _CHILD, root, str(index_file)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._last_rowid = 0
        self._gone: str | None = None  # why the pipe broke
        self._queue: queue.SimpleQueue[memoryview | None] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._pipe, name="khive-index-writer", daemon=True)
        self._sender.start()
        self._closed = False

    @property
    def pid(self) -> int:
        return self._child.pid

    # the connection's surface used by a build from nothing --------------------------------------------------
    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        if sql == MAX_ROWID:  # the rows sent so far, not the committed index
            return self._reads.execute("SELECT ?", (self._last_rowid,))
        if sql.lstrip()[:6].upper() == "SELECT":
            return self._reads.execute(sql, args)
        self._send(buildchild.ONE, sql, tuple(args))
        return self._reads.execute("SELECT 1 WHERE 0")  # what a write returns: no rows

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = rows if isinstance(rows, list) else list(rows)
        if sql == INSERT_DOC and rows:  # rowids given in ascending order (newrows.FileRows)
            self._last_rowid = max(self._last_rowid, int(rows[-1][0]))
        self._send(buildchild.MANY, sql, rows)

    # the end of the build --------------------------------------------------------------------------------------
    def commit(self) -> None:
        """Send the commit and wait for the child's; raises ``WriterGone`` when it did not commit."""
        self._send(buildchild.COMMIT, "", ())
        self._queue.put(None)
        self._sender.join()
        assert self._child.stdout is not None
        reply = self._child.stdout.read()
        status = self._child.wait()
        self._closed = True
        if reply != buildchild.COMMITTED or status != 0:
            raise WriterGone(f"the writer process ended with {status} ({reply.decode(errors='replace') or 'no reply'}"
                             f"{'; ' + self._gone if self._gone else ''})")

    def close(self) -> None:
        """End the child if it still runs (it commits nothing then) and reap it; every path ends here."""
        if self._child.poll() is None:
            self._child.kill()
        self._child.wait()
        if not self._closed:
            self._queue.put(None)
            self._closed = True
        self._sender.join()
        for stream in (self._child.stdin, self._child.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # a broken pipe's last flush
                    pass

    # the pipe --------------------------------------------------------------------------------------------------
    def _send(self, op: str, sql: str, args: Any) -> None:
        if self._gone is not None:
            raise WriterGone(f"the writer process is gone: {self._gone}")
        buffer = io.BytesIO()
        buffer.write(bytes(buildchild.HEAD.size))
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.fast = True  # no memo (see the module docstring)
        pickler.dump((op, sql, args))
        message = buffer.getbuffer()
        buildchild.HEAD.pack_into(message, 0, len(message) - buildchild.HEAD.size)
        self._queue.put(message)

    def _pipe(self) -> None:
        stdin = self._child.stdin
        assert stdin is not None
        while (message := self._queue.get()) is not None:  # to the building thread's last message, always
            if self._gone is None:
                self._write(stdin.write, message)
        if self._gone is None:
            self._write(stdin.flush)

    def _write(self, call: Callable[..., object], *args: memoryview) -> None:
        try:
            call(*args)
        except OSError as exc:  # the child is gone: the building thread hears it at its next write
            self._gone = f"{type(exc).__name__}: {exc}"
