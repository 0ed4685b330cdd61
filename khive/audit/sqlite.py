"""SQLite audit store (default): WAL mode under the project's ``.khive/``.

One transaction per request (all its ops' events), so audit cost is amortised over a batch.
Triggers make the table append-only; ``busy_timeout`` lets several processes share the file.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import orjson

from khive.audit.events import AuditEvent
from khive.audit.store import AuditQuery, glob_to_like
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
    client TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_events_ts ON audit_events (ts);
CREATE INDEX IF NOT EXISTS audit_events_request ON audit_events (request_id);
CREATE TRIGGER IF NOT EXISTS audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
"""

_COLUMNS = ("ts, request_id, op_index, principal, transport, verb, args_digest, args_redacted, decision, "
            "reason, outcome, duration_us, write_keys, client")


class SqliteAuditStore:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = open_wal(path)
        with self._lock:
            self._db.executescript(SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(audit_events)")}
            if "client" not in columns:  # a trail from before ADR 0032
                self._db.execute("ALTER TABLE audit_events ADD COLUMN client TEXT NOT NULL DEFAULT ''")

    async def append(self, events: Sequence[AuditEvent]) -> None:
        if not events:
            return
        rows = [
            (e.ts.isoformat(), e.request_id, e.op_index, e.principal, e.transport, e.verb, e.args_digest,
             orjson.dumps(e.args_redacted, default=str).decode(), e.decision, e.reason, e.outcome,
             e.duration_us, orjson.dumps(list(e.write_keys)).decode(), e.client)
            for e in events
        ]
        with self._lock, immediate(self._db):
            self._db.executemany(f"INSERT INTO audit_events ({_COLUMNS}) VALUES "
                                 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    async def query(self, query: AuditQuery) -> list[AuditEvent]:
        where: list[str] = []
        params: list[object] = []
        if query.verb:
            where.append("verb LIKE ? ESCAPE '\\'")
            params.append(glob_to_like(query.verb))
        if query.principal:
            where.append("principal LIKE ? ESCAPE '\\'")
            params.append(glob_to_like(query.principal))
        if query.outcome:
            where.append("outcome = ?")
            params.append(query.outcome)
        if query.request_id:
            where.append("request_id = ?")
            params.append(query.request_id)
        if query.since:
            where.append("ts >= ?")
            params.append(query.since.isoformat())
        if query.until:
            where.append("ts < ?")
            params.append(query.until.isoformat())
        sql = f"SELECT {_COLUMNS} FROM audit_events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(query.limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [_event(row) for row in rows]

    async def count(self) -> int:
        with self._lock:
            (total,) = self._db.execute("SELECT count(*) FROM audit_events").fetchone()
        return int(total)

    async def aclose(self) -> None:
        with self._lock:
            self._db.close()


def _event(row: tuple[object, ...]) -> AuditEvent:
    (ts, request_id, op_index, principal, transport, verb, digest, args, decision, reason, outcome,
     duration_us, write_keys, client) = row
    return AuditEvent(
        ts=datetime.fromisoformat(str(ts)), request_id=str(request_id), op_index=int(str(op_index)),
        principal=str(principal), transport=str(transport), verb=str(verb), args_digest=str(digest),
        args_redacted=orjson.loads(str(args)), decision=str(decision), reason=str(reason),
        outcome=str(outcome), duration_us=int(str(duration_us)), write_keys=tuple(orjson.loads(str(write_keys))),
        client=str(client),
    )
