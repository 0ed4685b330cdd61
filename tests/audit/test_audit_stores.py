"""Both audit stores honour one contract: filters, newest first, redaction, append-only, no lost writes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psycopg
import pytest

from khive.audit.events import MASK, AuditEvent, digest_args, redact
from khive.audit.postgres import PostgresAuditStore
from khive.audit.sqlite import SqliteAuditStore
from khive.audit.store import AuditQuery, AuditStore
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import ConfigError, KhiveError
from khive.project.config import KhiveConfig
from khive.runtime import build_runtime

T = TypeVar("T")
T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
PG_TABLE = "khive_audit_events"


@dataclass(frozen=True)
class Backend:
    kind: str
    location: str  # sqlite file path or PostgreSQL conninfo

    def open(self) -> AuditStore:
        if self.kind == "sqlite":
            return SqliteAuditStore(Path(self.location))
        return PostgresAuditStore(self.location)

    def run(self, body: Callable[[AuditStore], Awaitable[T]]) -> T:
        async def main() -> T:
            store = self.open()
            try:
                return await body(store)
            finally:
                await store.aclose()

        return anyio.run(main)

    def raw(self, statement: str) -> list[tuple[Any, ...]]:
        """Run SQL behind the store's back, as someone tampering with the trail would."""
        if self.kind == "sqlite":
            db = sqlite3.connect(self.location, isolation_level=None)
            try:
                return db.execute(statement.format(table="audit_events")).fetchall()
            finally:
                db.close()
        with psycopg.connect(self.location, autocommit=True) as conn:
            cur = conn.execute(statement.format(table=PG_TABLE))
            return cur.fetchall() if cur.description else []


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "audit.sqlite"))
    return Backend("postgres", request.getfixturevalue("pg_database"))


def event(request_id: str, op_index: int = 0, *, verb: str = "core.ping", principal: str = "alice",
          outcome: str = "ok", ts: datetime = T0, args: dict[str, Any] | None = None,
          decision: str = "allow", write_keys: tuple[str, ...] = ()) -> AuditEvent:
    args = args if args is not None else {"n": op_index}
    return AuditEvent(ts=ts, request_id=request_id, op_index=op_index, principal=principal, transport=CLI,
                      verb=verb, args_digest=digest_args(args), args_redacted=redact(args), decision=decision,
                      reason="" if decision == "allow" else "denied by rule", outcome=outcome,
                      duration_us=17 + op_index, write_keys=write_keys)


R1 = [event("r1", 0, verb="wiki.get", write_keys=("wiki:a",)),
      event("r1", 1, verb="wiki.put", outcome="permission_denied", decision="deny")]
R2 = [event("r2", 0, principal="bob", ts=T0 + timedelta(hours=1), args={"echo": [1, 2.5, None, True]})]
R3 = [event("r3", 0, verb="wiki_x.get", principal="a_ice", outcome="aborted", ts=T0 + timedelta(hours=2)),
      event("r3", 1, verb="wikiyx.get", principal="al_ce", ts=T0 + timedelta(hours=2))]


def test_append_and_query_every_filter(backend: Backend) -> None:
    async def body(store: AuditStore) -> dict[str, list[AuditEvent]]:
        await store.append([])  # no-op
        for batch in (R1, R2, R3):
            await store.append(batch)
        assert await store.count() == 5
        queries = {
            "all": AuditQuery(),
            "verb": AuditQuery(verb="wiki.*"),
            "verb_underscore_is_literal": AuditQuery(verb="wiki_x.*"),
            "verb_question_mark": AuditQuery(verb="wiki.?ut"),
            "principal": AuditQuery(principal="a_ice"),
            "principal_glob": AuditQuery(principal="al?ce"),
            "outcome": AuditQuery(outcome="ok"),
            "request_id": AuditQuery(request_id="r1"),
            "since": AuditQuery(since=T0 + timedelta(hours=1)),
            "until": AuditQuery(until=T0 + timedelta(hours=1)),
            "window": AuditQuery(since=T0 + timedelta(minutes=30), until=T0 + timedelta(hours=2)),
            "combined": AuditQuery(verb="wiki*", principal="a*", outcome="ok"),
            "limit": AuditQuery(limit=2),
            "nothing": AuditQuery(verb="nope.*"),
        }
        return {name: await store.query(q) for name, q in queries.items()}

    got = backend.run(body)
    assert got["all"] == [*reversed(R3), *R2, *reversed(R1)]  # newest first, round-trips exactly
    assert got["verb"] == [R1[1], R1[0]]
    assert got["verb_underscore_is_literal"] == [R3[0]]
    assert got["verb_question_mark"] == [R1[1]]
    assert got["principal"] == [R3[0]]
    assert got["principal_glob"] == [R3[1], R1[1], R1[0]]  # ? is any one character
    assert got["outcome"] == [R3[1], R2[0], R1[0]]
    assert got["request_id"] == [R1[1], R1[0]]
    assert got["since"] == [R3[1], R3[0], R2[0]]
    assert got["until"] == [R1[1], R1[0]]
    assert got["window"] == [R2[0]]
    assert got["combined"] == [R3[1], R1[0]]
    assert got["limit"] == [R3[1], R3[0]]
    assert got["nothing"] == []


def test_secret_looking_args_are_redacted(backend: Backend) -> None:
    args = {"query": "x", "password": "hunter2", "nested": {"api_key": "k-123", "keep": 1},
            "url": "postgres://bob:pw-secret@db.example/x", "items": [{"token": "tok-9"}]}
    stored = event("r-secret", args=args)
    assert stored.args_redacted == {"query": "x", "password": MASK, "nested": {"api_key": MASK, "keep": 1},
                                    "url": "postgres://bob:[redacted: url-password]@db.example/x",
                                    "items": [{"token": MASK}]}

    async def body(store: AuditStore) -> list[AuditEvent]:
        await store.append([stored])
        return await store.query(AuditQuery(request_id="r-secret"))

    assert backend.run(body) == [stored]
    dump = repr(backend.raw("SELECT * FROM {table}"))
    assert "x" in dump and MASK in dump
    for secret in ("hunter2", "k-123", "pw-secret", "tok-9"):
        assert secret not in dump


def test_update_and_delete_are_refused(backend: Backend) -> None:
    async def append_one(store: AuditStore) -> None:
        await store.append([event("r-keep")])

    backend.run(append_one)
    error = sqlite3.DatabaseError if backend.kind == "sqlite" else psycopg.Error
    tampering = ["UPDATE {table} SET outcome = 'ok', principal = 'nobody'", "DELETE FROM {table}"]
    if backend.kind == "postgres":
        tampering.append("TRUNCATE {table}")
    for statement in tampering:
        with pytest.raises(error, match="append-only"):
            backend.raw(statement)

    async def read(store: AuditStore) -> list[AuditEvent]:
        return await store.query(AuditQuery())

    assert backend.run(read) == [event("r-keep")]


WORKER = """
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio

from khive.audit.events import AuditEvent

kind, location, worker = sys.argv[1:4]
REQUESTS, OPS, LANES = 200, 5, 4


def open_store():
    if kind == "sqlite":
        from khive.audit.sqlite import SqliteAuditStore
        return SqliteAuditStore(Path(location))
    from khive.audit.postgres import PostgresAuditStore
    return PostgresAuditStore(location)


def batch(n):
    return [AuditEvent(ts=datetime.now(UTC), request_id=f"w{worker}-{n}", op_index=i, principal=f"w{worker}",
                       transport="inproc", verb="core.ping", args_digest="d", args_redacted={"n": n},
                       decision="allow", reason="", outcome="ok", duration_us=1) for i in range(OPS)]


async def main():
    store = open_store()
    try:
        await store.count()  # connected and ready
        print("ready", flush=True)
        sys.stdin.readline()  # start together

        async def lane(first):  # coroutines of one process share the store
            for n in range(first, REQUESTS, LANES):
                await store.append(batch(n))

        async with anyio.create_task_group() as group:
            for first in range(LANES):
                group.start_soon(lane, first)
    finally:
        await store.aclose()


anyio.run(main)
"""


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(backend: Backend) -> None:
    async def ready(store: AuditStore) -> int:
        return await store.count()  # create the schema before the race

    assert backend.run(ready) == 0
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, backend.kind, backend.location, str(n)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for n in (1, 2)]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for worker in workers:  # both at once, so their transactions interleave
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outputs = [worker.communicate(timeout=180) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    for worker, (_, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr

    async def everything(store: AuditStore) -> tuple[int, list[AuditEvent]]:
        return await store.count(), await store.query(AuditQuery(limit=10_000))

    total, events = backend.run(everything)
    assert total == 2000
    seen = Counter((e.request_id, e.op_index) for e in events)
    expected = {(f"w{w}-{n}", i) for w in (1, 2) for n in range(200) for i in range(5)}
    assert set(seen) == expected and set(seen.values()) == {1}


# PostgreSQL specifics.


@pytest.mark.postgres
def test_servers_starting_together_create_the_schema_once(pg_database: str) -> None:
    async def main() -> list[int]:
        stores = [PostgresAuditStore(pg_database) for _ in range(6)]
        counts: list[int] = []

        async def start(store: PostgresAuditStore) -> None:
            counts.append(await store.count())

        try:
            async with anyio.create_task_group() as group:
                for store in stores:
                    group.start_soon(start, store)
            await stores[0].append([event("r-once")])
            return [*counts, await stores[-1].count()]
        finally:
            for store in stores:
                await store.aclose()

    assert anyio.run(main) == [0] * 6 + [1]


@pytest.mark.postgres
def test_reconnects_after_the_connection_dies(pg_database: str) -> None:
    async def main() -> int:
        store = PostgresAuditStore(pg_database)
        try:
            await store.append([event("r-before")])
            with psycopg.connect(pg_database, autocommit=True) as admin:
                killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                       "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
            assert killed == (1,)
            await store.append([event("r-after")])
            return await store.count()
        finally:
            await store.aclose()

    assert anyio.run(main) == 2


@pytest.mark.postgres
def test_runtime_writes_its_audit_to_postgres(pg_database: str, tmp_path: Path) -> None:
    config = KhiveConfig.model_validate(
        {"audit": {"store": "postgres", "url": "env:KHIVE_TEST_AUDIT_URL", "table": "team_audit"}})

    async def main() -> tuple[dict[str, Any], list[AuditEvent]]:
        runtime = build_runtime(tmp_path, config, env={"KHIVE_TEST_AUDIT_URL": pg_database})
        try:
            assert isinstance(runtime.audit, PostgresAuditStore)
            envelope = await dispatch(parse('[ping(echo="hi"), ping(echo={"token": "tok-1"})]'),
                                      Context(runtime, "agent:tester", CLI))
            return envelope, await runtime.audit.query(AuditQuery(request_id=envelope["requestId"]))
        finally:
            await runtime.aclose()

    envelope, events = anyio.run(main)
    assert envelope["status"] == "success"
    assert [(e.op_index, e.verb, e.principal, e.outcome) for e in events] == [
        (1, "ping", "agent:tester", "ok"), (0, "ping", "agent:tester", "ok")]
    assert events[0].args_redacted == {"echo": {"token": MASK}}
    with psycopg.connect(pg_database) as conn:
        rows = conn.execute("SELECT request_id, op_index, kind, args_redacted FROM team_audit ORDER BY id").fetchall()
    # write-ahead: both starts in one transaction before either op ran, then one outcome row per op
    assert rows[:2] == [(envelope["requestId"], 0, "start", {"echo": "hi"}),
                        (envelope["requestId"], 1, "start", {"echo": {"token": MASK}})]
    assert sorted(row[1:3] for row in rows[2:]) == [(0, "outcome"), (1, "outcome")]


def test_missing_audit_url_variable_is_a_config_error(tmp_path: Path) -> None:
    config = KhiveConfig.model_validate({"audit": {"store": "postgres", "url": "env:KHIVE_TEST_AUDIT_URL"}})
    with pytest.raises(ConfigError, match="KHIVE_TEST_AUDIT_URL") as info:
        build_runtime(tmp_path, config, env={})
    assert info.value.details["variable"] == "KHIVE_TEST_AUDIT_URL"


@pytest.mark.parametrize("url, where", [
    ("host=/nonexistent/khive-sockets dbname=auditdb user=khive password=s3cret-pw",
     "/nonexistent/khive-sockets:5432/auditdb"),
    ("postgresql://khive:s3cret-pw@127.0.0.1:1/auditdb?connect_timeout=5", "127.0.0.1:1/auditdb"),
])
def test_unreachable_database_names_host_and_db_never_the_password(url: str, where: str) -> None:
    async def main() -> None:
        store = PostgresAuditStore(url)
        try:
            await store.append([event("r-lost")])
        finally:
            await store.aclose()

    with pytest.raises(KhiveError) as info:
        anyio.run(main)
    error = info.value
    assert error.code == "audit_store_unavailable"
    assert where in error.message
    assert "s3cret-pw" not in f"{error.message} {error.details} {error.__cause__}"


def test_malformed_url_is_a_config_error_that_hides_the_url() -> None:
    with pytest.raises(ConfigError) as info:
        PostgresAuditStore("postgresql://khive:s3cret-pw@db/audit?no_such_option=1")
    assert "s3cret-pw" not in str(info.value)


def test_a_renamed_code_is_found_and_shown_in_its_one_spelling(backend: Backend) -> None:
    """ADR 0039: ``parse-error`` became ``parse_error``; a trail written before the rename still answers."""
    old = event("old", verb="(parse)", outcome="parse-error")
    new = event("new", verb="(parse)", outcome="parse_error", ts=T0 + timedelta(hours=1))

    async def body(store: AuditStore) -> list[AuditEvent]:
        await store.append([old, new, event("other", ts=T0 + timedelta(hours=2))])
        return await store.query(AuditQuery(outcome="parse_error"))

    found = backend.run(body)
    assert [e.request_id for e in found] == ["new", "old"]
    assert {e.to_dict()["outcome"] for e in found} == {"parse_error"}
