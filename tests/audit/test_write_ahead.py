"""The write-ahead audit (ADR 0029) through dispatch and the stores' public API, on both stores:
an op's start is committed before it runs, its outcome appended after; values JSON cannot hold
still leave events; a request that dies records `interrupted`; an op that cannot be audited does not
run; recovery marks the ops of dead processes only (the pid-recycling guard); old files migrate."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psycopg
import pytest
from auditpack import AuditPack

from khive.audit.config import open_audit_store
from khive.audit.events import AuditEvent, new_op_id
from khive.audit.postgres import PostgresAuditStore
from khive.audit.process import ProcessId, identify, this_process
from khive.audit.store import AuditQuery, AuditStore
from khive.context import CLI, MCP_STDIO, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.project.config import KhiveConfig
from khive.runtime import Runtime, build_runtime
from khive.scaffold import init_project

T = TypeVar("T")
PG_TABLE = "khive_audit_events"


@dataclass(frozen=True)
class Setup:
    """A project whose trail lives in SQLite or PostgreSQL."""

    kind: str
    project: Path
    config: KhiveConfig
    env: dict[str, str]

    def store(self) -> AuditStore:
        return open_audit_store(self.project, self.config, self.env)

    def runtime(self, pack: AuditPack) -> Runtime:
        return build_runtime(self.project, self.config, self.env, packs=["core"], extra_plugins=[pack])

    def raw(self, statement: str) -> list[tuple[Any, ...]]:
        """SQL behind the store's back; {events}, {open} name the tables."""
        if self.kind == "sqlite":
            db = sqlite3.connect(self.project / ".khive" / "audit.sqlite")
            try:
                return db.execute(statement.format(events="audit_events", open="audit_open")).fetchall()
            finally:
                db.close()
        with psycopg.connect(self.env["KHIVE_TEST_AUDIT_URL"], autocommit=True) as conn:
            cur = conn.execute(statement.format(events=PG_TABLE, open=f"{PG_TABLE}_open"))
            return cur.fetchall() if cur.description else []

    def run(self, body: Callable[[AuditStore], Awaitable[T]]) -> T:
        async def main() -> T:
            store = self.store()
            try:
                return await body(store)
            finally:
                await store.aclose()

        return anyio.run(main)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Setup:
    init_project(tmp_path, "tester")
    if request.param == "sqlite":
        return Setup("sqlite", tmp_path, KhiveConfig(), {})
    config = KhiveConfig.model_validate({"audit": {"store": "postgres", "url": "env:KHIVE_TEST_AUDIT_URL"}})
    return Setup("postgres", tmp_path, config, {"KHIVE_TEST_AUDIT_URL": request.getfixturevalue("pg_database")})


def dispatch_with(setup: Setup, pack: AuditPack, text: str, request_id: str, transport: str = CLI,
                  principal: str = "operator:tester") -> tuple[dict[str, Any], list[AuditEvent]]:
    async def main() -> tuple[dict[str, Any], list[AuditEvent]]:
        runtime = setup.runtime(pack)
        try:
            envelope = await dispatch(parse(text), Context(runtime, principal, transport, request_id=request_id,
                                                           user="tester"))
            events = await runtime.audit.query(AuditQuery(request_id=request_id))
            return envelope, sorted(events, key=lambda e: e.op_index)
        finally:
            await runtime.aclose()

    return anyio.run(main)


def test_a_chain_commits_each_op_before_it_runs_with_its_args_after_prev(setup: Setup) -> None:
    pack = AuditPack(second_store=setup.store)
    envelope, events = dispatch_with(setup, pack, 'a.count(x="first") | a.peek(x=$prev.runs) | a.count(x=2)', "c1")
    assert envelope["status"] == "success"
    # What another connection saw while op 1 ran: op 0 finished, op 1 started (with $prev substituted),
    # op 2 not started yet.
    assert envelope["results"][1]["result"]["seen"] == [
        {"op_index": 0, "verb": "a.count", "outcome": "ok", "args": {"x": "first"}},
        {"op_index": 1, "verb": "a.peek", "outcome": "running", "args": {"x": 1}}]
    assert [(e.op_index, e.outcome, e.decision) for e in events] == [(0, "ok", "allow"), (1, "ok", "allow"),
                                                                      (2, "ok", "allow")]
    assert events[1].args_redacted == {"x": 1}
    assert {e.process for e in events} == {this_process()}
    assert all(e.user == "tester" and e.transport == CLI and e.op_id for e in events)


def test_a_batch_commits_every_event_before_any_op_runs(setup: Setup) -> None:
    pack = AuditPack(second_store=setup.store)
    text = '[a.peek(), a.count(x=1), a.count(x=1), nope(), audit.query(limit=1), a.count(y=2)]'
    envelope, events = dispatch_with(setup, pack, text, "b1", transport=MCP_STDIO)
    seen = {entry["op_index"]: entry["outcome"] for entry in envelope["results"][0]["result"]["seen"]}
    # every op is in the trail before op 0 ran: those that run as started, the rest as complete events
    assert set(seen) == {0, 1, 2, 3, 4, 5}
    assert seen[0] == "running" and seen[1] in {"running", "ok"}
    assert [seen[i] for i in (2, 3, 4, 5)] == ["write_conflict", "unknown_verb", "permission_denied", "invalid_args"]
    assert [e.outcome for e in events] == ["ok", "ok", "write_conflict", "unknown_verb", "permission_denied",
                                           "invalid_args"]
    assert events[4].decision == "deny" and "operator verb" in events[4].reason
    assert pack.runs == [1]


def test_values_json_cannot_hold_still_leave_events(setup: Setup) -> None:
    pack = AuditPack()
    # a client names itself with anything (an MCP clientInfo name becomes the principal)
    envelope, events = dispatch_with(setup, pack, "a.huge() | a.count(x=$prev)", "u1",
                                     principal="agent:odd\ud800\x00name")
    assert envelope["summary"]["succeeded"] == 2 and pack.runs
    assert [(e.verb, e.outcome) for e in events] == [("a.huge", "ok"), ("a.count", "ok")]
    assert {e.principal for e in events} == {"agent:odd\\ud800\\u0000name"}
    # a.huge's result went through the value rule (khive/values.py): the lone surrogate is shown as its bytes
    shown = {"n": str(2**70), "s": "\\x" + "lone \ud800 surrogate".encode("utf-8", "surrogatepass").hex(),
             "nul": "a\\u0000b"}
    assert events[1].args_redacted == {"x": shown}
    assert len(events[1].write_keys) == 1 and str(2**70) in events[1].write_keys[0]


def test_a_request_that_dies_mid_way_records_interrupted_not_running(setup: Setup) -> None:
    pack = AuditPack()

    async def main() -> list[AuditEvent]:
        runtime = setup.runtime(pack)
        pack.started, pack.release = anyio.Event(), anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(dispatch, parse("[a.block(), a.count(x=1)]"),
                                 Context(runtime, "operator:tester", CLI, request_id="dies-1"))
                await pack.started.wait()
                group.cancel_scope.cancel()  # the client went away; the process lives on
            return sorted(await runtime.audit.query(AuditQuery(request_id="dies-1")), key=lambda e: e.op_index)
        finally:
            await runtime.aclose()

    events = anyio.run(main)
    assert [(e.verb, e.outcome) for e in events] == [("a.block", "interrupted"), ("a.count", "ok")]
    assert "the request ended before the op finished" in events[0].reason
    assert setup.raw("SELECT count(*) FROM {events} WHERE kind = 'outcome'") == [(2,)]
    assert setup.raw("SELECT count(*) FROM {open}") == [(0,)]


def test_an_op_that_cannot_be_audited_does_not_run(tmp_path: Path) -> None:
    init_project(tmp_path, "tester")
    pack = AuditPack()

    async def main() -> dict[str, Any]:
        store = PostgresAuditStore("postgresql://khive:pw@127.0.0.1:1/audit?connect_timeout=2")
        runtime = build_runtime(tmp_path, KhiveConfig(), {}, packs=["core"], extra_plugins=[pack], audit=store)
        try:
            return await dispatch(parse("[a.count(x=1), ping()] "), Context(runtime, "operator:tester", CLI))
        finally:
            await runtime.aclose()

    envelope = anyio.run(main)
    assert [result["error"]["code"] for result in envelope["results"]] == ["audit_store_unavailable"] * 2
    assert pack.runs == []


def start(process: ProcessId, index: int) -> AuditEvent:
    return AuditEvent(ts=datetime.now(UTC), request_id="r-guard", op_index=index, principal="operator:t",
                      transport=CLI, verb="a.count", args_digest="d", args_redacted={"x": index}, decision="allow",
                      reason="", outcome="started", duration_us=0, user="t", op_id=new_op_id(), process=process)


def test_recovery_marks_only_ops_whose_process_is_certainly_gone(setup: Setup) -> None:
    me = this_process()
    sleeper = subprocess.Popen(["sleep", "120"])
    gone = subprocess.Popen(["sleep", "120"])
    try:
        alive_other, gone_other = identify(sleeper.pid), identify(gone.pid)
        gone.kill()
        gone.wait()
        owners = {
            "me": me,
            "me, recycled pid": replace(me, start=me.start + 1),  # our pid, but another process had it before
            "live child": alive_other,
            "live child, recycled pid": replace(alive_other, start=alive_other.start - 1),
            "child that exited": gone_other,
            "earlier boot": replace(me, boot="00000000-0000-0000-0000-000000000000"),
            "another host": replace(me, host=f"{me.host}-elsewhere"),
            "another pid namespace": replace(me, pidns="pid:[1]"),
        }
        names = list(owners)

        async def body(store: AuditStore) -> tuple[int, int, dict[str, list[AuditEvent]]]:
            await store.write(starts=[start(owner, index) for index, owner in enumerate(owners.values())])
            other = setup.store()  # the next runtime, as another process opens the trail
            try:
                found, again = await other.recover(), await other.recover()
            finally:
                await other.aclose()
            reads = {outcome: await store.query(AuditQuery(request_id="r-guard", outcome=outcome))
                     for outcome in ("running", "interrupted", "ok")}
            return found, again, reads

        found, again, reads = setup.run(body)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (found, again) == (4, 0)
    assert sorted(names[e.op_index] for e in reads["interrupted"]) == [
        "child that exited", "earlier boot", "live child, recycled pid", "me, recycled pid"]
    assert sorted(names[e.op_index] for e in reads["running"]) == [
        "another host", "another pid namespace", "live child", "me"]
    assert reads["ok"] == []
    for event in reads["interrupted"]:
        assert event.process == owners[names[event.op_index]]  # who ran it, not who found it
        assert f"pid {event.process.pid} on {me.host}" in event.reason and f"recorded by pid {me.pid}" in event.reason
    assert setup.raw("SELECT count(*) FROM {events} WHERE kind = 'outcome'") == [(4,)]
    assert setup.raw("SELECT count(*) FROM {open}") == [(4,)]


OLD_SQLITE = """
CREATE TABLE audit_events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, request_id TEXT NOT NULL,
    op_index INTEGER NOT NULL, principal TEXT NOT NULL, transport TEXT NOT NULL, verb TEXT NOT NULL,
    args_digest TEXT NOT NULL, args_redacted TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT NOT NULL,
    outcome TEXT NOT NULL, duration_us INTEGER NOT NULL, write_keys TEXT NOT NULL);
CREATE INDEX audit_events_ts ON audit_events (ts);
CREATE INDEX audit_events_request ON audit_events (request_id);
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
"""
OLD_POSTGRES = f"""
CREATE TABLE {PG_TABLE} (id bigserial PRIMARY KEY, ts timestamptz NOT NULL, request_id text NOT NULL,
    op_index int NOT NULL, principal text NOT NULL, transport text NOT NULL, verb text NOT NULL,
    args_digest text NOT NULL, args_redacted jsonb NOT NULL, decision text NOT NULL, reason text NOT NULL,
    outcome text NOT NULL, duration_us bigint NOT NULL, write_keys jsonb NOT NULL);
CREATE INDEX {PG_TABLE}_ts ON {PG_TABLE} (ts);
CREATE INDEX {PG_TABLE}_request ON {PG_TABLE} (request_id);
CREATE FUNCTION khive_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'audit events are append-only (% on %)', TG_OP, TG_TABLE_NAME; END $$;
CREATE TRIGGER khive_audit_no_update_delete BEFORE UPDATE OR DELETE ON {PG_TABLE}
    FOR EACH ROW EXECUTE FUNCTION khive_audit_append_only();
CREATE TRIGGER khive_audit_no_truncate BEFORE TRUNCATE ON {PG_TABLE}
    FOR EACH STATEMENT EXECUTE FUNCTION khive_audit_append_only();
"""
OLD_ROWS = [("2025-01-01T12:00:00+00:00", "old-1", 0, "agent:x", "mcp-stdio", "wiki.write", "d0", '{"key": "a"}',
             "allow", "", "ok", 12, '["wiki:a"]'),
            ("2025-01-01T12:00:00+00:00", "old-1", 1, "agent:x", "mcp-stdio", "scan.run", "d1", "{}", "deny",
             "operator verb", "permission_denied", 0, "[]")]


def test_an_old_trail_is_migrated_and_its_rows_read_as_complete_events(setup: Setup) -> None:
    columns = ("ts, request_id, op_index, principal, transport, verb, args_digest, args_redacted, decision, reason, "
               "outcome, duration_us, write_keys")
    if setup.kind == "sqlite":
        path = setup.project / ".khive" / "audit.sqlite"
        path.parent.mkdir(exist_ok=True)
        db = sqlite3.connect(path)
        db.executescript(OLD_SQLITE)
        db.executemany(f"INSERT INTO audit_events ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       OLD_ROWS)
        db.commit()
        db.close()
    else:
        with psycopg.connect(setup.env["KHIVE_TEST_AUDIT_URL"], autocommit=True) as conn:
            conn.execute(OLD_POSTGRES)
            conn.cursor().executemany(f"INSERT INTO {PG_TABLE} ({columns}) VALUES "
                                      "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", OLD_ROWS)

    async def body(store: AuditStore) -> tuple[list[AuditEvent], list[AuditEvent], int]:
        old = await store.query(AuditQuery(request_id="old-1"))
        await store.write(starts=[start(this_process(), 0)])
        return old, await store.query(AuditQuery(outcome="permission_denied")), await store.count()

    old, denied, total = setup.run(body)
    assert [(e.op_index, e.verb, e.outcome, e.args_redacted, e.write_keys, e.process, e.op_id) for e in old] == [
        (1, "scan.run", "permission_denied", {}, (), None, ""),
        (0, "wiki.write", "ok", {"key": "a"}, ("wiki:a",), None, "")]
    assert [e.verb for e in denied] == ["scan.run"]
    assert total == 3
    with pytest.raises((sqlite3.DatabaseError, psycopg.Error), match="append-only"):
        setup.raw("UPDATE {events} SET outcome = 'ok'")
