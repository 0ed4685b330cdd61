"""The writer process of a build from nothing (ADR 0056): runs the parent's writes on a connection of its own.

Started by ``khive.index.buildprocess``, it imports ``sqlite3`` and ``khive.sqlite_util`` only (a second interpreter
is paid for once per build; the packs and numpy stay in the parent). It takes the write lock (``BEGIN IMMEDIATE``),
checks that the index still holds nothing (the lock went from the parent's connection to this one: another process
may have built the index in between), then reads framed messages from stdin and runs them in order until the one
that says commit. Anything else ends it without a commit, so the index stays as it was: stdin closed early (the
parent died), a statement that fails, or the process killed. The one reply, on stdout, says how it ended.
"""

from __future__ import annotations

import pickle
import sqlite3
import struct
import sys
from pathlib import Path
from typing import BinaryIO

from khive.sqlite_util import open_wal

HEAD = struct.Struct("<Q")  # the length of the pickled message that follows
ONE, MANY, COMMIT = "one", "many", "commit"  # a message: (op, sql, args)
COMMITTED, NOT_EMPTY, FAILED = b"committed", b"not empty", b"failed"  # the reply

# Whether the index holds nothing: no file recorded and no document (the parent asks the same before it starts one).
HOLDS_NOTHING = "SELECT (SELECT 1 FROM items LIMIT 1) IS NULL AND (SELECT 1 FROM docs LIMIT 1) IS NULL"


def run(index_file: Path, messages: BinaryIO, reply: BinaryIO) -> int:
    """Apply ``messages`` to ``index_file`` in one transaction; the exit status (0: committed)."""
    db = open_wal(index_file)
    db.execute("BEGIN IMMEDIATE")
    if not db.execute(HOLDS_NOTHING).fetchone()[0]:
        return _end(db, reply, NOT_EMPTY, 2)
    while True:
        head = messages.read(HEAD.size)
        if len(head) < HEAD.size:  # the parent went away before its commit: nothing is written
            return _end(db, reply, FAILED, 3)
        op, sql, args = pickle.loads(messages.read(HEAD.unpack(head)[0]))
        try:
            if op == COMMIT:
                db.execute("COMMIT")
                db.close()
                reply.write(COMMITTED)  # (the parent reads it before anything else: it waits for this)
                reply.flush()
                return 0
            if op == MANY:
                db.executemany(sql, args)
            else:
                db.execute(sql, args)
        except sqlite3.Error as exc:
            print(f"khive index writer: {exc} in {sql[:200]!r}", file=sys.stderr)
            return _end(db, reply, FAILED, 1)


def _end(db: sqlite3.Connection, reply: BinaryIO, message: bytes, status: int) -> int:
    if db.in_transaction:  # (a failed statement may have rolled it back already)
        db.execute("ROLLBACK")
    db.close()
    try:
        reply.write(message)
        reply.flush()
    except OSError:  # the parent is gone: nobody to tell
        pass
    return status


def main(index_file: str) -> None:
    sys.exit(run(Path(index_file), sys.stdin.buffer, sys.stdout.buffer))
