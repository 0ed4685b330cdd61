"""Would a second process pay for the index build from nothing? A measurement harness, not the index's path.

    .venv/bin/python bench/buildsplit.py PROJECT --pairs 3    # alternating runs: in line, then writes in a child

PROJECT is a project already scanned (for example the one ``bench/bigproject.py`` builds, copied aside before it
removes its directory); its ``.khive/index.sqlite`` is deleted before every run. Each run is a fresh interpreter
that builds the index from nothing with ``refresh()`` (as ``bench/bigproject.py``'s ``index_build``), one of two
ways:

- ``inline``: main's build, every row written by the caller's own connection;
- ``child``: the same code, but every write of the build (the transaction, the page cache setting, the dropped
  and re-created lookup indexes, the ``executemany`` of each file's rows and vectors) is pickled (fast mode, no
  memo) and piped to a child interpreter that owns a second connection and runs them in order, while the parent
  goes on making the next file's rows. The parent only reads what was committed before the build (the index is
  empty), and the rowids it would read back (``next_rowid``) come from what it sent. ADR 0055 records why this
  stayed a prototype.

One JSON line per run: wall and CPU seconds of the build (the parent's, and the child's from ``RUSAGE_CHILDREN``),
the seconds the parent waited for the child's commit, the pickled bytes and the seconds spent pickling, the load
average, and a sha256 of every stored row (``docs``, ``docs_fts``, ``edges``, ``vectors``, ``items``,
``shadowed``), which must be equal between the two ways. A last line sums the pairs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import pickle
import queue
import resource
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
_HEAD = struct.Struct("<Q")
_TABLES = {"docs": "rowid", "docs_fts": "rowid", "edges": "source_id, relation, target_id",
           "vectors": "doc_rowid", "items": "source, path", "shadowed": "id, source, path"}


def _index(project: Path) -> Path:
    return project / ".khive" / "index.sqlite"


def rows_digest(index: Path) -> str:
    """sha256 of every stored row of the tables a build writes, each table in key order."""
    db = sqlite3.connect(index)
    digest = hashlib.sha256()
    for table, key in _TABLES.items():
        columns = "rowid, *" if key == "rowid" else "*"
        for row in db.execute(f"SELECT {columns} FROM {table} ORDER BY {key}"):
            digest.update(pickle.dumps(tuple(row), protocol=5))
    db.close()
    return digest.hexdigest()


def writer(index: Path) -> None:
    """The child: run the parent's writes on a connection of its own, in order, until it says commit."""
    from khive.sqlite_util import open_wal

    db = open_wal(index)
    stream = sys.stdin.buffer
    while True:
        head = stream.read(_HEAD.size)
        if len(head) < _HEAD.size:  # the parent went away: nothing is committed
            sys.exit(3)
        op, sql, args = pickle.loads(stream.read(_HEAD.unpack(head)[0]))
        if op == "commit":
            db.execute("COMMIT")
            sys.stdout.buffer.write(b"ok")
            sys.stdout.buffer.flush()
            return
        if op == "many":
            db.executemany(sql, args)
        else:
            db.execute(sql, args)


class _Forwarding:
    """Stands for the index's connection during the build: writes go to the child, reads to the real one."""

    def __init__(self, real: sqlite3.Connection, index: Path):
        self.real = real
        self.child = subprocess.Popen([sys.executable, __file__, str(index), "--writer"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.next_rowid = 1
        self.pickling = 0.0
        self.sent = 0
        # The pipe holds 64 KiB: written from this thread, the parent would wait for the child to finish each
        # statement before sending the next. A thread writes instead (a blocked write does not hold the GIL).
        self.queue: queue.SimpleQueue[memoryview | None] = queue.SimpleQueue()
        self.sender = threading.Thread(target=self._pipe, daemon=True)
        self.sender.start()

    def _pipe(self) -> None:
        assert self.child.stdin is not None
        while (message := self.queue.get()) is not None:
            self.child.stdin.write(message)
        self.child.stdin.flush()

    def _send(self, op: str, sql: str, args: Any) -> None:
        clock = time.perf_counter()
        buffer = io.BytesIO()
        buffer.write(bytes(_HEAD.size))
        pickler = pickle.Pickler(buffer, protocol=5)
        pickler.fast = True  # no memo: the rows are trees of new strings, never shared
        pickler.dump((op, sql, args))
        view = buffer.getbuffer()
        _HEAD.pack_into(view, 0, len(view) - _HEAD.size)
        self.pickling += time.perf_counter() - clock
        self.sent += len(view)
        self.queue.put(view)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        if sql.lstrip().upper().startswith(("SELECT", "PRAGMA CACHE_SIZE")) and "=" not in sql:
            return self.real.execute(sql, args)  # what was committed before the build: an empty index
        self._send("one", sql, tuple(args))
        return self.real.execute("SELECT 1 WHERE 0")

    def executemany(self, sql: str, rows: Any) -> None:
        rows = list(rows)
        if sql.startswith("INSERT INTO docs ") and rows:
            self.next_rowid = max(self.next_rowid, int(rows[-1][0]) + 1)
        self._send("many", sql, rows)

    def commit(self) -> None:
        self._send("commit", "", ())
        self.queue.put(None)
        self.sender.join()
        assert self.child.stdout is not None
        if self.child.stdout.read(2) != b"ok":
            raise RuntimeError("the writer process did not commit")
        self.child.wait()


def one_run(project: Path, way: str) -> dict[str, Any]:
    import anyio

    from khive.bootstrap import open_runtime
    from khive.index import engine, store

    index = _index(project)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    runtime = open_runtime(project, {"WH_URL": "postgresql://bench@nowhere/bench"})
    real = runtime.index.db
    forwarding: _Forwarding | None = None
    waited = 0.0
    if way == "child":
        forwarding = _Forwarding(real, index)
        sink = forwarding

        @contextmanager
        def transaction(db: Any) -> Iterator[Any]:
            nonlocal waited
            db.execute("BEGIN IMMEDIATE")
            yield db
            clock = time.perf_counter()
            sink.commit()
            waited = time.perf_counter() - clock

        engine.immediate = transaction  # type: ignore[attr-defined]
        engine.is_empty = lambda db: True  # type: ignore[attr-defined]  # the parent saw it empty before the build
        store.next_rowid = lambda db: sink.next_rowid
        runtime.index.db = forwarding  # type: ignore[assignment]
    cpu, wall = time.process_time(), time.perf_counter()
    runtime.index.refresh()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    runtime.index.db = real
    anyio.run(runtime.aclose)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"way": way, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "child_cpu_s": round(children.ru_utime + children.ru_stime, 3), "commit_wait_s": round(waited, 3),
            "pickled_mb": round((forwarding.sent if forwarding else 0) / 1e6, 1),
            "pickling_s": round(forwarding.pickling if forwarding else 0.0, 3),
            "load": round(os.getloadavg()[0], 2), "rows_sha256": rows_digest(index)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--one", choices=("inline", "child"))
    parser.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        writer(args.project)
        return
    if args.one:
        print(orjson.dumps(one_run(args.project.resolve(), args.one)).decode(), flush=True)
        return
    runs: list[dict[str, Any]] = []
    for _ in range(args.pairs):
        for way in ("inline", "child"):
            done = subprocess.run([sys.executable, __file__, str(args.project), "--one", way], cwd=ROOT,
                                  check=True, capture_output=True, text=True)
            line = done.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            runs.append(orjson.loads(line))
    total = {way: sum(run["wall_s"] for run in runs if run["way"] == way) for way in ("inline", "child")}
    print(orjson.dumps({"pairs": args.pairs, "wall_inline_s": round(total["inline"], 2),
                        "wall_child_s": round(total["child"], 2),
                        "child_vs_inline": round(total["child"] / total["inline"], 3) if total["inline"] else None,
                        "same_rows": len({run["rows_sha256"] for run in runs}) == 1}).decode())


if __name__ == "__main__":
    main()
