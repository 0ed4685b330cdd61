"""SQLite audit store (default): WAL mode under the project's ``.khive/``.

Each ``write`` is one transaction, committed before it returns. With WAL and synchronous=NORMAL a
commit is in the WAL file when ``write`` returns: it survives the death of this process (kill -9)
but not a power loss or kernel crash before the next checkpoint (ADR 0029). Triggers make the
events table append-only; ``audit_open`` (ops started without an outcome yet) is a working index,
not part of the trail. ``busy_timeout`` lets several processes share the file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from khive.audit.events import EVENT, OUTCOME, RUNNING, START, AuditEvent
from khive.audit.process import this_process
from khive.audit.recovery import (
    COLUMNS,
    OPEN_COLUMNS,
    interrupted,
    merged_event,
    open_event,
    open_values,
    row_values,
)
from khive.audit.store import AuditQuery, glob_to_like
from khive.errors import KhiveError
from khive.sqlite_util import immediate, open_wal

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
    process TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX IF NOT EXISTS audit_events_ts ON audit_events (ts);
CREATE INDEX IF NOT EXISTS audit_events_request ON audit_events (request_id);
CREATE TRIGGER IF NOT EXISTS audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
"""
# Columns added by ADR 0029; rows written before read as complete events of an unknown process.
_ADDED = {"kind": "TEXT NOT NULL DEFAULT 'event'", "op_id": "TEXT NOT NULL DEFAULT ''",
          "user_name": "TEXT NOT NULL DEFAULT ''", "process": "TEXT NOT NULL DEFAULT 'null'"}
_WRITE_AHEAD = f"""
CREATE INDEX IF NOT EXISTS audit_events_outcome_op ON audit_events (op_id) WHERE kind = '{OUTCOME}';
CREATE TABLE IF NOT EXISTS audit_open (
    op_id TEXT PRIMARY KEY,
    ts TEXT NOT NULL,
    request_id TEXT NOT NULL,
    op_index INTEGER NOT NULL,
    principal TEXT NOT NULL,
    transport TEXT NOT NULL,
    user_name TEXT NOT NULL,
    verb TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    decision TEXT NOT NULL,
    process TEXT NOT NULL
) WITHOUT ROWID;
"""

_INSERT = f"INSERT INTO audit_events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_OPEN = f"INSERT INTO audit_open ({', '.join(OPEN_COLUMNS)}) VALUES ({', '.join('?' * len(OPEN_COLUMNS))})"
_CLOSE = "DELETE FROM audit_open WHERE op_id = ?"
# One merged event per op: a start joined with its outcome (the op's own before an `interrupted`
# recorded by someone else, should both exist), or a complete event as it is.
_OUTCOME = f"CASE WHEN s.kind = '{START}' THEN COALESCE(o.outcome, '{RUNNING}') ELSE s.outcome END"
_MERGED = f"""
SELECT s.ts, s.request_id, s.op_index, s.principal, s.transport, s.verb, s.args_digest, s.args_redacted,
       COALESCE(o.decision, s.decision), COALESCE(o.reason, s.reason), {_OUTCOME},
       COALESCE(o.duration_us, s.duration_us), s.write_keys, s.kind, s.op_id, s.user_name, s.process
FROM audit_events AS s
LEFT JOIN audit_events AS o ON s.kind = '{START}' AND o.id = (
    SELECT e.id FROM audit_events AS e WHERE e.kind = '{OUTCOME}' AND e.op_id = s.op_id
    ORDER BY e.outcome = 'interrupted', e.id LIMIT 1)
WHERE s.kind <> '{OUTCOME}'"""


class SqliteAuditStore:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_wal(path)
        self._recovered = False
        with self._lock:
            self._db.executescript(SCHEMA)
            with immediate(self._db):
                have = {row[1] for row in self._db.execute("PRAGMA table_info(audit_events)")}
                for name, declaration in _ADDED.items():
                    if name not in have:
                        self._db.execute(f"ALTER TABLE audit_events ADD COLUMN {name} {declaration}")
            self._db.executescript(_WRITE_AHEAD)

    async def write(self, *, starts: Sequence[AuditEvent] = (), events: Sequence[AuditEvent] = (),
                    outcomes: Sequence[AuditEvent] = ()) -> None:
        if not (starts or events or outcomes):
            return
        if not self._recovered:
            await self.recover()
        rows = [_stored(row_values(kind, event)) for kind, batch in ((START, starts), (EVENT, events),
                                                                      (OUTCOME, outcomes)) for event in batch]
        try:
            with self._lock, immediate(self._db):
                self._db.executemany(_INSERT, rows)
                if starts:
                    self._db.executemany(_OPEN, [_stored(open_values(event), at=1) for event in starts])
                if outcomes:
                    self._db.executemany(_CLOSE, [(event.op_id,) for event in outcomes])
        except sqlite3.Error as exc:  # locked beyond busy_timeout, disk full, read-only file
            raise KhiveError(f"audit store unavailable: SQLite at {self.path}: {exc}", code="audit_store_unavailable",
                             details={"store": "sqlite", "where": str(self.path)}) from exc

    async def append(self, events: Sequence[AuditEvent]) -> None:
        await self.write(events=events)

    async def recover(self) -> int:
        self._recovered = True
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(OPEN_COLUMNS)} FROM audit_open").fetchall()
        ends = interrupted((open_event(row, _ts(row[1])) for row in rows), this_process(), datetime.now(UTC))
        if not ends:
            return 0
        written = 0
        with self._lock, immediate(self._db):
            for end in ends:  # another process may have recovered (or closed) it since we looked
                if self._db.execute(_CLOSE, (end.op_id,)).rowcount:
                    self._db.execute(_INSERT, _stored(row_values(OUTCOME, end)))
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
            where.append(f"{_OUTCOME} = ?")
            params.append(query.outcome)
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


def _stored(values: tuple[Any, ...], at: int = 0) -> tuple[Any, ...]:
    """The values with the timestamp at position ``at`` as ISO text (ordered and compared as text)."""
    ts: datetime = values[at]
    return (*values[:at], ts.isoformat(), *values[at + 1:])


def _ts(raw: object) -> datetime:
    return datetime.fromisoformat(str(raw))

