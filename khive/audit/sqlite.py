"""SQLite audit store (default): WAL mode under the project's ``.khive/``.

Each ``write`` is one transaction, committed before it returns. With WAL and synchronous=NORMAL a
commit is in the WAL file when ``write`` returns: it survives the death of this process (kill -9)
but not a power loss or kernel crash before the next checkpoint (ADR 0029). Triggers make the
events and processes tables append-only; ``audit_open`` (ops started without an outcome yet) is a
working index, not part of the trail. ``busy_timeout`` lets several processes share the file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from khive.audit.events import INTERRUPTED, OUTCOME, RUNNING, START, AuditEvent
from khive.audit.process import ProcessId, this_process
from khive.audit.recovery import (
    COLUMNS,
    NO_PROCESS,
    OPEN_COLUMNS,
    PROCESS_COLUMNS,
    cleaned,
    interrupted,
    merged_event,
    open_event,
    process_values,
    row_values,
    write_rows,
    written_processes,
)
from khive.audit.store import AuditQuery, glob_to_like
from khive.errors import KhiveError, spellings
from khive.sqlite_util import immediate, open_wal, statements

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_events (
    id INTEGER PRIMARY KEY,  -- rowids only grow: rows are never deleted
    ts TEXT NOT NULL,
    request_id TEXT NOT NULL,
    op_index INTEGER NOT NULL,
    principal TEXT NOT NULL,
    transport TEXT NOT NULL,
    verb TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    args_redacted TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL,
    outcome TEXT NOT NULL,
    duration_us INTEGER NOT NULL,
    write_keys TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'event',
    op_id TEXT NOT NULL DEFAULT '',
    user_name TEXT NOT NULL DEFAULT '',
    process_id INTEGER NOT NULL DEFAULT 0,
    client TEXT NOT NULL DEFAULT ''
);
CREATE TRIGGER IF NOT EXISTS audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
"""
# Version 2 (ADR 0029) adds columns (rows written before read as complete events of an unknown
# process), indexes only what readers look up (events and starts by time and request, outcomes by
# op), the processes, and the open ops.
_VERSION = 3  # 3: the client column (ADR 0032)
_CHECKPOINT_PAGES = 10_000
_ADDED = {"kind": "TEXT NOT NULL DEFAULT 'event'", "op_id": "TEXT NOT NULL DEFAULT ''",
          "user_name": "TEXT NOT NULL DEFAULT ''", "process_id": "INTEGER NOT NULL DEFAULT 0",
          "client": "TEXT NOT NULL DEFAULT ''"}
_WRITE_AHEAD = f"""
DROP INDEX IF EXISTS audit_events_ts;
DROP INDEX IF EXISTS audit_events_request;
CREATE INDEX IF NOT EXISTS audit_events_op_ts ON audit_events (ts) WHERE kind <> '{OUTCOME}';
CREATE INDEX IF NOT EXISTS audit_events_op_request ON audit_events (request_id) WHERE kind <> '{OUTCOME}';
CREATE INDEX IF NOT EXISTS audit_events_outcome_op ON audit_events (op_id) WHERE kind = '{OUTCOME}';
CREATE TABLE IF NOT EXISTS audit_processes (
    id INTEGER PRIMARY KEY,
    host TEXT NOT NULL,
    boot TEXT NOT NULL,
    pidns TEXT NOT NULL,
    pid INTEGER NOT NULL,
    start INTEGER NOT NULL,
    UNIQUE (host, boot, pidns, pid, start)
);
CREATE TRIGGER IF NOT EXISTS audit_processes_no_update BEFORE UPDATE ON audit_processes
BEGIN SELECT RAISE(ABORT, 'audit processes are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_processes_no_delete BEFORE DELETE ON audit_processes
BEGIN SELECT RAISE(ABORT, 'audit processes are append-only'); END;
CREATE TABLE IF NOT EXISTS audit_open (
    op_id TEXT PRIMARY KEY,
    ts TEXT NOT NULL,
    request_id TEXT NOT NULL,
    op_index INTEGER NOT NULL,
    verb TEXT NOT NULL,
    process_id INTEGER NOT NULL
) WITHOUT ROWID;
"""

_INSERT = f"INSERT INTO audit_events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_OPEN = f"INSERT INTO audit_open ({', '.join(OPEN_COLUMNS)}) VALUES ({', '.join('?' * len(OPEN_COLUMNS))})"
_CLOSE = "DELETE FROM audit_open WHERE op_id = ?"
_PROCESS_COLUMNS = ", ".join(f"p.{column}" for column in PROCESS_COLUMNS)
_REGISTER = (f"INSERT OR IGNORE INTO audit_processes ({', '.join(PROCESS_COLUMNS)}) VALUES (?, ?, ?, ?, ?)")
_PROCESS_ID = f"SELECT id FROM audit_processes WHERE {' AND '.join(f'{c} = ?' for c in PROCESS_COLUMNS)}"
_LIST_OPEN = (f"SELECT o.op_id, o.ts, o.request_id, o.op_index, o.verb, {_PROCESS_COLUMNS} FROM audit_open AS o "
              "LEFT JOIN audit_processes AS p ON p.id = o.process_id")
# One merged event per op: a start joined with its outcome (the op's own before an `interrupted`
# recorded by someone else, should both exist), or a complete event as it is.
_OUTCOME = f"CASE WHEN s.kind = '{START}' THEN COALESCE(o.outcome, '{RUNNING}') ELSE s.outcome END"
_MERGED = f"""
SELECT s.ts, s.request_id, s.op_index, s.principal, s.transport, s.verb, s.args_digest, s.args_redacted,
       COALESCE(o.decision, s.decision), COALESCE(o.reason, s.reason), {_OUTCOME},
       COALESCE(o.duration_us, s.duration_us), s.write_keys, s.kind, s.op_id, s.user_name, s.client, {_PROCESS_COLUMNS}
FROM audit_events AS s
LEFT JOIN audit_events AS o ON s.kind = '{START}' AND o.id = (
    SELECT e.id FROM audit_events AS e WHERE e.kind = '{OUTCOME}' AND e.op_id = s.op_id
    ORDER BY e.outcome = '{INTERRUPTED}', e.id LIMIT 1)
LEFT JOIN audit_processes AS p ON p.id = s.process_id
WHERE s.kind <> '{OUTCOME}'"""


class SqliteAuditStore:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_wal(path)
        # The trail is written in many small transactions; a checkpoint syncs the file, so checkpoint
        # every 10,000 pages (about 40 MB of WAL) rather than SQLite's 1,000 (ADR 0029).
        self._db.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_PAGES}")
        self._recovered = False
        self._process_ids: dict[ProcessId, int] = {}  # registered processes
        with self._lock:
            if self._db.execute("PRAGMA user_version").fetchone()[0] < _VERSION:
                self._migrate()

    def _migrate(self) -> None:
        with immediate(self._db):  # several processes may open an old file at once: one migrates
            if self._db.execute("PRAGMA user_version").fetchone()[0] >= _VERSION:
                return
            for statement in statements(SCHEMA):
                self._db.execute(statement)
            have = {row[1] for row in self._db.execute("PRAGMA table_info(audit_events)")}
            for name, declaration in _ADDED.items():
                if name not in have:
                    self._db.execute(f"ALTER TABLE audit_events ADD COLUMN {name} {declaration}")
            for statement in statements(_WRITE_AHEAD):
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {_VERSION}")

    async def write(self, *, starts: Sequence[AuditEvent] = (), events: Sequence[AuditEvent] = (),
                    outcomes: Sequence[AuditEvent] = ()) -> None:
        if not (starts or events or outcomes):
            return
        if not self._recovered:
            await self.recover()
        ids = {process: self._process_id(process) for process in written_processes(starts, events, outcomes)}
        rows, opened = write_rows(starts, events, outcomes, ids, datetime.isoformat)
        closed = [(event.op_id,) for event in outcomes]
        try:
            self._commit(rows, opened, closed)
        except UnicodeEncodeError:  # a lone surrogate a client sent (a request id, an error message)
            self._commit(cleaned(rows), cleaned(opened), closed)

    def _commit(self, rows: list[tuple[Any, ...]], opened: list[tuple[Any, ...]], closed: list[tuple[str]]) -> None:
        try:
            with self._lock, immediate(self._db):
                self._db.executemany(_INSERT, rows)
                if opened:
                    self._db.executemany(_OPEN, opened)
                if closed:
                    self._db.executemany(_CLOSE, closed)
        except sqlite3.Error as exc:
            raise self._unavailable(exc) from exc

    def _process_id(self, process: ProcessId | None) -> int:
        """The key of ``process``, registered once (in its own transaction) when first seen."""
        if process is None:
            return NO_PROCESS
        known = self._process_ids.get(process)
        if known is None:
            values = cleaned([process_values(process)])[0]
            try:
                with self._lock, immediate(self._db):
                    self._db.execute(_REGISTER, values)
                    known = int(self._db.execute(_PROCESS_ID, values).fetchone()[0])
            except sqlite3.Error as exc:
                raise self._unavailable(exc) from exc
            self._process_ids[process] = known
        return known

    def _unavailable(self, exc: sqlite3.Error) -> KhiveError:  # locked beyond busy_timeout, disk full, read-only
        return KhiveError(f"audit store unavailable: SQLite at {self.path}: {exc}", code="audit_store_unavailable",
                          details={"store": "sqlite", "where": str(self.path)})

    async def append(self, events: Sequence[AuditEvent]) -> None:
        await self.write(events=events)

    async def recover(self) -> int:
        self._recovered = True
        try:
            return self._recover(this_process())
        except sqlite3.Error as exc:
            raise self._unavailable(exc) from exc

    def _recover(self, me: ProcessId) -> int:
        with self._lock:
            rows = self._db.execute(_LIST_OPEN).fetchall()
        ends = interrupted((open_event(row, _ts(row[1])) for row in rows), me, datetime.now(UTC))
        if not ends:
            return 0
        recorder = self._process_id(me)
        written = 0
        with self._lock, immediate(self._db):
            for end in ends:  # another process may have recovered (or closed) it since we looked
                if self._db.execute(_CLOSE, (end.op_id,)).rowcount:
                    self._db.execute(_INSERT, cleaned([row_values(OUTCOME, end, end.ts.isoformat(), recorder)])[0])
                    written += 1
        return written

    async def query(self, query: AuditQuery) -> list[AuditEvent]:
        await self.recover()  # a dead process's op reads as interrupted, never as running
        where: list[str] = []
        params: list[object] = []
        if query.verb:
            where.append("s.verb LIKE ? ESCAPE '\\'")
            params.append(glob_to_like(query.verb))
        if query.principal:
            where.append("s.principal LIKE ? ESCAPE '\\'")
            params.append(glob_to_like(query.principal))
        if query.outcome:
            names = spellings(query.outcome)  # an event from before a code's rename keeps its old spelling
            where.append(f"{_OUTCOME} IN ({', '.join('?' * len(names))})")
            params.extend(names)
        if query.request_id:
            where.append("s.request_id = ?")
            params.append(query.request_id)
        if query.since:
            where.append("s.ts >= ?")
            params.append(query.since.isoformat())
        if query.until:
            where.append("s.ts < ?")
            params.append(query.until.isoformat())
        sql = _MERGED + "".join(f" AND {clause}" for clause in where) + " ORDER BY s.id DESC LIMIT ?"
        params.append(query.limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [merged_event(row, _ts(row[0])) for row in rows]

    async def count(self) -> int:
        """Merged events: one per op (a start and its outcome count once)."""
        with self._lock:
            (total,) = self._db.execute(f"SELECT count(*) FROM audit_events WHERE kind <> '{OUTCOME}'").fetchone()
        return int(total)

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()


def _ts(raw: object) -> datetime:
    return datetime.fromisoformat(str(raw))
