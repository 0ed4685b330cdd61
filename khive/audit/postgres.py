"""PostgreSQL audit store: for several khive servers sharing one trail.

One connection per store, opened lazily inside the running event loop and shared under a lock.
Triggers refuse UPDATE, DELETE and TRUNCATE, so the table is append-only for every role that
cannot drop them (run khive as a role that does not own the table for a tamper-evident trail).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio
import orjson
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from khive.audit.events import AuditEvent
from khive.audit.store import AuditQuery, glob_to_like
from khive.errors import ConfigError, KhiveError

T = TypeVar("T")
IDLE = TransactionStatus.IDLE

_COLUMNS = ("ts", "request_id", "op_index", "principal", "transport", "verb", "args_digest", "args_redacted",
            "decision", "reason", "outcome", "duration_us", "write_keys", "client")
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
    write_keys jsonb NOT NULL,
    client text NOT NULL DEFAULT ''
);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS client text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS {ts_index} ON {table} (ts);
CREATE INDEX IF NOT EXISTS {request_index} ON {table} (request_id);
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
        self._lock = anyio.Lock()
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._schema_ready = False
        self._closed = False
        self._insert = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            self._ident, sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)),
            sql.SQL(", ").join(sql.Placeholder() * len(_COLUMNS)))

    async def append(self, events: Sequence[AuditEvent]) -> None:
        if not events:
            return
        rows = [(e.ts, e.request_id, e.op_index, e.principal, e.transport, e.verb, e.args_digest,
                 Jsonb(e.args_redacted, dumps=_dumps), e.decision, e.reason, e.outcome, e.duration_us,
                 Jsonb(list(e.write_keys), dumps=_dumps), e.client) for e in events]
        committing = False

        async def insert(conn: psycopg.AsyncConnection[Any]) -> None:
            nonlocal committing
            async with conn.transaction():
                async with conn.cursor() as cur:
                    await cur.executemany(self._insert, rows)
                committing = True

        # Retrying after a failed commit could write the events twice.
        await self._run(insert, retry=lambda: not committing)

    async def query(self, query: AuditQuery) -> list[AuditEvent]:
        where: list[sql.Composable] = []
        params: list[Any] = []
        for column, pattern in (("verb", query.verb), ("principal", query.principal)):
            if pattern:
                where.append(sql.SQL("{} LIKE %s ESCAPE '\\'").format(sql.Identifier(column)))
                params.append(glob_to_like(pattern))
        for clause, value in (("outcome = %s", query.outcome), ("request_id = %s", query.request_id),
                              ("ts >= %s", query.since), ("ts < %s", query.until)):
            if value:
                where.append(sql.SQL(clause))
                params.append(value)
        statement = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)),
                                                         self._ident)
        if where:
            statement += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        statement += sql.SQL(" ORDER BY id DESC LIMIT %s")
        params.append(query.limit)

        async def select(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cur = await conn.execute(statement, params)
            return await cur.fetchall()

        return [_event(row) for row in await self._run(select)]

    async def count(self) -> int:
        async def select(conn: psycopg.AsyncConnection[Any]) -> int:
            cur = await conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self._ident))
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
            cur = await conn.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s)", [self._ident.as_string(conn)])
            existing = {row[0] for row in await cur.fetchall()}
            cur = await conn.execute("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = "
                                     "'client'", [self._ident.as_string(conn)])
            if existing.issuperset(_TRIGGERS) and await cur.fetchone() is not None:  # client: since ADR 0032
                return
            names = {"table": self._ident, "ts_index": sql.Identifier(f"{self.table}_ts"),
                     "request_index": sql.Identifier(f"{self.table}_request")}
            await conn.execute(sql.SQL(_TABLE).format(**names))
            for name, statement in zip(_TRIGGERS, (_ROW_TRIGGER, _TRUNCATE_TRIGGER), strict=True):
                if name not in existing:
                    await conn.execute(sql.SQL(statement).format(table=self._ident))

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


def _dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _event(row: tuple[Any, ...]) -> AuditEvent:
    (ts, request_id, op_index, principal, transport, verb, digest, args, decision, reason, outcome,
     duration_us, write_keys, client) = row
    return AuditEvent(ts=ts, request_id=request_id, op_index=op_index, principal=principal, transport=transport,
                      verb=verb, args_digest=digest, args_redacted=args, decision=decision, reason=reason,
                      outcome=outcome, duration_us=duration_us, write_keys=tuple(write_keys), client=client)
