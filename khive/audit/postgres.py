"""PostgreSQL audit store: for several khive servers sharing one trail.

One connection per store, opened lazily inside the running event loop and shared under a lock.
Triggers refuse UPDATE, DELETE and TRUNCATE, so the table is append-only for every role that
cannot drop them (run khive as a role that does not own the table for a tamper-evident trail;
it needs INSERT and SELECT on the table and on ``<table>_processes`` (with USAGE on its id
sequence), and INSERT, SELECT and DELETE on ``<table>_open``, the working index of ops started
without an outcome yet). Each ``write`` is one transaction whose commit
returns once the server has made it durable (synchronous_commit, on by default): it survives the
death of the khive process and, with the server's defaults, a crash of the server (ADR 0029).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

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
from khive.errors import ConfigError, KhiveError, spellings

T = TypeVar("T")
IDLE = TransactionStatus.IDLE

_JSON_COLUMNS = frozenset({"args_redacted", "write_keys"})
_TRIGGERS = ("khive_audit_no_update_delete", "khive_audit_no_truncate")

_TABLE = """
CREATE TABLE IF NOT EXISTS {table} (
    id bigserial PRIMARY KEY,
    ts timestamptz NOT NULL,
    request_id text NOT NULL,
    op_index int NOT NULL,
    principal text NOT NULL,
    transport text NOT NULL,
    verb text NOT NULL,
    args_digest text NOT NULL,
    args_redacted jsonb NOT NULL,
    decision text NOT NULL,
    reason text NOT NULL,
    outcome text NOT NULL,
    duration_us bigint NOT NULL,
    write_keys jsonb NOT NULL
);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'event';
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS op_id text NOT NULL DEFAULT '';
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS user_name text NOT NULL DEFAULT '';
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS client text NOT NULL DEFAULT '';
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS process_id bigint NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS {old_ts_index};
DROP INDEX IF EXISTS {old_request_index};
CREATE INDEX IF NOT EXISTS {ts_index} ON {table} (ts) WHERE kind <> 'outcome';
CREATE INDEX IF NOT EXISTS {request_index} ON {table} (request_id) WHERE kind <> 'outcome';
CREATE INDEX IF NOT EXISTS {outcome_index} ON {table} (op_id) WHERE kind = 'outcome';
CREATE TABLE IF NOT EXISTS {processes} (
    id bigserial PRIMARY KEY,
    host text NOT NULL,
    boot text NOT NULL,
    pidns text NOT NULL,
    pid int NOT NULL,
    start bigint NOT NULL,
    UNIQUE (host, boot, pidns, pid, start)
);
CREATE TABLE IF NOT EXISTS {open_table} (
    op_id text PRIMARY KEY,
    ts timestamptz NOT NULL,
    request_id text NOT NULL,
    op_index int NOT NULL,
    verb text NOT NULL,
    process_id bigint NOT NULL
);
CREATE OR REPLACE FUNCTION khive_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only (% on %)', TG_OP, TG_TABLE_NAME;
END $$;
"""
_ROW_TRIGGER = ("CREATE TRIGGER khive_audit_no_update_delete BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION khive_audit_append_only()")
_TRUNCATE_TRIGGER = ("CREATE TRIGGER khive_audit_no_truncate BEFORE TRUNCATE ON {table} "
                     "FOR EACH STATEMENT EXECUTE FUNCTION khive_audit_append_only()")


class PostgresAuditStore:
    def __init__(self, url: str, table: str = "khive_audit_events"):
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError:
            # The message would quote the URL, password included.
            raise ConfigError("audit.url is not a valid PostgreSQL connection string") from None
        self._url = url
        self._password = str(params["password"]) if params.get("password") else None
        self._connect_options: dict[str, Any] = {} if "connect_timeout" in params else {"connect_timeout": 10}
        self.where = (f"{params.get('host') or params.get('hostaddr') or 'localhost'}:"
                      f"{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or ''}")
        self.table = table
        self._ident = sql.Identifier(table)
        self._open_ident = sql.Identifier(f"{table}_open")
        self._processes_ident = sql.Identifier(f"{table}_processes")
        self._lock = anyio.Lock()
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._schema_ready = False
        self._recovered = False
        self._closed = False
        self._process_ids: dict[ProcessId, int] = {}  # registered processes
        self._insert = _insert(self._ident, COLUMNS)
        self._open = _insert(self._open_ident, OPEN_COLUMNS)
        self._close = sql.SQL("DELETE FROM {} WHERE op_id = ANY(%s) RETURNING op_id").format(self._open_ident)
        columns = sql.SQL(", ").join(map(sql.Identifier, PROCESS_COLUMNS))
        self._register = sql.SQL("INSERT INTO {} ({}) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING").format(
            self._processes_ident, columns)
        self._process_id_of = sql.SQL("SELECT id FROM {} WHERE (host, boot, pidns, pid, start) = "
                                      "(%s, %s, %s, %s, %s)").format(self._processes_ident)
        process = sql.SQL(", ").join(sql.SQL("p.{}").format(sql.Identifier(c)) for c in PROCESS_COLUMNS)
        self._list_open = sql.SQL("SELECT o.op_id, o.ts, o.request_id, o.op_index, o.verb, {} FROM {} AS o "
                                  "LEFT JOIN {} AS p ON p.id = o.process_id").format(
            process, self._open_ident, self._processes_ident)
        self._outcome = sql.SQL(f"CASE WHEN s.kind = '{START}' THEN COALESCE(o.outcome, '{RUNNING}') "
                                "ELSE s.outcome END")
        # One merged event per op, as in the SQLite store: a start with its outcome (the op's own before an
        # `interrupted` recorded by someone else, should both exist), or a complete event as it is.
        self._merged = sql.SQL(f"""
SELECT s.ts, s.request_id, s.op_index, s.principal, s.transport, s.verb, s.args_digest, s.args_redacted,
       COALESCE(o.decision, s.decision), COALESCE(o.reason, s.reason), {{outcome}},
       COALESCE(o.duration_us, s.duration_us), s.write_keys, s.kind, s.op_id, s.user_name, s.client, {{process}}
FROM {{table}} AS s
LEFT JOIN {{table}} AS o ON s.kind = '{START}' AND o.id = (
    SELECT e.id FROM {{table}} AS e WHERE e.kind = '{OUTCOME}' AND e.op_id = s.op_id
    ORDER BY e.outcome = '{INTERRUPTED}', e.id LIMIT 1)
LEFT JOIN {{processes}} AS p ON p.id = s.process_id
WHERE s.kind <> '{OUTCOME}'""").format(outcome=self._outcome, table=self._ident, process=process,
                                       processes=self._processes_ident)

    async def write(self, *, starts: Sequence[AuditEvent] = (), events: Sequence[AuditEvent] = (),
                    outcomes: Sequence[AuditEvent] = ()) -> None:
        if not (starts or events or outcomes):
            return
        # Shielded: a cancelled caller must not leave it unknown whether its rows were committed.
        with anyio.CancelScope(shield=True):
            if not self._recovered:
                await self.recover()
            ids = {process: await self._process_id(process)
                   for process in written_processes(starts, events, outcomes)}
            rows, opened = write_rows(starts, events, outcomes, ids, _as_is)
            closed = [event.op_id for event in outcomes]
            try:
                await self._commit(rows, opened, closed)
            except (UnicodeEncodeError, psycopg.DataError):  # NUL or a lone surrogate a client sent
                await self._commit(cleaned(rows), cleaned(opened), closed)

    async def _commit(self, rows: list[tuple[Any, ...]], opened: list[tuple[Any, ...]], closed: list[str]) -> None:
        committing = False

        async def insert(conn: psycopg.AsyncConnection[Any]) -> None:
            nonlocal committing
            async with conn.transaction():
                async with conn.cursor() as cur:
                    await cur.executemany(self._insert, rows)
                    if opened:
                        await cur.executemany(self._open, opened)
                    if closed:
                        await cur.execute(self._close, [closed])
                committing = True

        # Retrying after a failed commit could write the events twice.
        await self._run(insert, retry=lambda: not committing)

    async def _process_id(self, process: ProcessId | None) -> int:
        """The key of ``process``, registered once (in its own transaction) when first seen."""
        if process is None:
            return NO_PROCESS
        known = self._process_ids.get(process)
        if known is None:
            values = cleaned([process_values(process)])[0]

            async def register(conn: psycopg.AsyncConnection[Any]) -> int:
                await conn.execute(self._register, values)
                cur = await conn.execute(self._process_id_of, values)
                row = await cur.fetchone()
                return int(row[0]) if row else NO_PROCESS

            known = self._process_ids[process] = await self._run(register)
        return known

    async def append(self, events: Sequence[AuditEvent]) -> None:
        await self.write(events=events)

    async def recover(self) -> int:
        self._recovered = True

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(self._list_open)
            return await cur.fetchall()

        me = this_process()
        ends = interrupted((open_event(row, row[1]) for row in await self._run(select)), me, datetime.now(UTC))
        if not ends:
            return 0
        recorder = await self._process_id(me)

        async def close(conn: psycopg.AsyncConnection[Any]) -> int:
            async with conn.transaction():
                async with conn.cursor() as cur:
                    # Only what is still open: another process may have recovered (or closed) some since we looked.
                    await cur.execute(self._close, [[end.op_id for end in ends]])
                    still = {row[0] for row in await cur.fetchall()}
                    rows = cleaned([row_values(OUTCOME, end, end.ts, recorder) for end in ends if end.op_id in still])
                    if rows:
                        await cur.executemany(self._insert, rows)
            return len(rows)

        return await self._run(close, retry=lambda: False)

    async def query(self, query: AuditQuery) -> list[AuditEvent]:
        await self.recover()  # a dead process's op reads as interrupted, never as running
        where: list[sql.Composable] = []
        params: list[Any] = []
        for column, pattern in (("verb", query.verb), ("principal", query.principal)):
            if pattern:
                where.append(sql.SQL("s.{} LIKE %s ESCAPE '\\'").format(sql.Identifier(column)))
                params.append(glob_to_like(pattern))
        if query.outcome:
            names = spellings(query.outcome)  # an event from before a code's rename keeps its old spelling
            where.append(self._outcome + sql.SQL(" = ANY(%s)"))
            params.append(list(names))
        for clause, value in (("s.request_id = %s", query.request_id), ("s.ts >= %s", query.since),
                              ("s.ts < %s", query.until)):
            if value:
                where.append(sql.SQL(clause))
                params.append(value)
        statement = self._merged + sql.SQL("").join(sql.SQL(" AND ") + clause for clause in where)
        statement += sql.SQL(" ORDER BY s.id DESC LIMIT %s")
        params.append(query.limit)

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(statement, params)
            return await cur.fetchall()

        return [merged_event(row, row[0]) for row in await self._run(select)]

    async def count(self) -> int:
        """Merged events: one per op (a start and its outcome count once)."""
        async def select(conn: psycopg.AsyncConnection[Any]) -> int:
            cur = await conn.execute(sql.SQL(f"SELECT count(*) FROM {{}} WHERE kind <> '{OUTCOME}'").format(
                self._ident))
            row = await cur.fetchone()
            return int(row[0]) if row else 0

        return await self._run(select)

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            if self._conn is not None:
                await self._conn.close()
                self._conn = None

    async def _run(self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]],
                   retry: Callable[[], bool] = lambda: True) -> T:
        async with self._lock:
            # A reused connection may have died while idle (server restart, idle timeout): retry once.
            reused = self._conn is not None and not self._conn.closed
            try:
                return await self._attempt(work)
            except psycopg.OperationalError as exc:
                if not (reused and retry()):
                    raise self._unavailable(exc) from exc
            try:
                return await self._attempt(work)
            except psycopg.OperationalError as exc:
                raise self._unavailable(exc) from exc

    async def _attempt(self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        conn = await self._connection()
        try:
            return await work(conn)
        except BaseException as exc:
            # Broken, or left mid-transaction by a cancellation: start over with a new connection.
            if isinstance(exc, psycopg.OperationalError) or conn.info.transaction_status != IDLE:
                with anyio.CancelScope(shield=True):
                    await self._drop()
            raise

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._closed:
            raise KhiveError(f"audit store {self.where} is closed", code="audit_store_unavailable")
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True, **self._connect_options)
        except psycopg.Error as exc:
            raise self._unavailable(exc) from exc
        try:
            await conn.execute("SET TIME ZONE 'UTC'")
            if not self._schema_ready:
                await self._create_schema(conn)
                self._schema_ready = True
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await conn.close()
            if isinstance(exc, psycopg.Error):
                raise self._unavailable(exc) from exc
            raise
        self._conn = conn
        return conn

    async def _create_schema(self, conn: psycopg.AsyncConnection[Any]) -> None:
        # Serialise servers starting together; skip DDL when all is there, so a role without
        # CREATE or ownership can still append.
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"khive.audit.{self.table}"])
            tables = [ident.as_string(conn) for ident in (self._ident, self._processes_ident)]
            existing: set[tuple[str, str]] = set()
            for table in tables:
                cur = await conn.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s)", [table])
                existing.update((table, name) for (name,) in await cur.fetchall())
            cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL AND EXISTS (SELECT 1 FROM pg_attribute "
                                     # the newest column (ADR 0032): its absence means DDL to run
                                     "WHERE attrelid = to_regclass(%s) AND attname = 'client')",
                                     [self._open_ident.as_string(conn), tables[0]])
            row = await cur.fetchone()
            wanted = {(table, name) for table in tables for name in _TRIGGERS}
            if existing.issuperset(wanted) and row is not None and row[0]:
                return
            names = {"table": self._ident, "old_ts_index": sql.Identifier(f"{self.table}_ts"),
                     "old_request_index": sql.Identifier(f"{self.table}_request"),
                     "ts_index": sql.Identifier(f"{self.table}_op_ts"),
                     "request_index": sql.Identifier(f"{self.table}_op_request"),
                     "outcome_index": sql.Identifier(f"{self.table}_outcome_op"), "open_table": self._open_ident,
                     "processes": self._processes_ident}
            await conn.execute(sql.SQL(_TABLE).format(**names))
            for table, ident in zip(tables, (self._ident, self._processes_ident), strict=True):
                for name, statement in zip(_TRIGGERS, (_ROW_TRIGGER, _TRUNCATE_TRIGGER), strict=True):
                    if (table, name) not in existing:
                        await conn.execute(sql.SQL(statement).format(table=ident))

    async def _drop(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _unavailable(self, exc: Exception) -> KhiveError:
        reason = str(exc).strip()
        if self._password:
            reason = reason.replace(self._password, "***")
        return KhiveError(f"audit store unavailable: PostgreSQL at {self.where}: {reason}",
                          code="audit_store_unavailable", details={"store": "postgres", "where": self.where})


def _as_is(ts: datetime) -> datetime:  # timestamptz takes the datetime itself
    return ts


def _insert(table: sql.Identifier, columns: Sequence[str]) -> sql.Composed:
    values = [sql.SQL("%s::jsonb" if column in _JSON_COLUMNS else "%s") for column in columns]
    return sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(table, sql.SQL(", ").join(map(sql.Identifier, columns)),
                                                             sql.SQL(", ").join(values))
