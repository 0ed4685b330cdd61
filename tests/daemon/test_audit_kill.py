"""The audit guarantee against kill -9 (ADR 0029), through real daemons, CLI clients and an MCP
server: every op that ran, or was running, has a start event; the next daemon records the
unfinished ones `interrupted`; every wiki page on disk has the event of its write."""

from __future__ import annotations

import json
import os
import pwd
import signal
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import daemons
import psycopg
import pytest
from daemon_helpers import KHIVE, Daemon, audit, wait_for

pytestmark = pytest.mark.slow


def journal_lines(journal: Path) -> list[str]:
    return journal.read_text().splitlines() if journal.exists() else []


def raw_outcomes(project: Path, request_id: str, pg_url: str | None = None) -> list[tuple[int, str, str]]:
    """(op_index, outcome, reason) of the outcome rows, read without any runtime (so without recovery)."""
    if pg_url is not None:
        with psycopg.connect(pg_url) as conn:
            return conn.execute("SELECT op_index, outcome, reason FROM khive_audit_events WHERE kind = 'outcome' "
                                "AND request_id = %s ORDER BY op_index", [request_id]).fetchall()
    db = sqlite3.connect(project / ".khive" / "audit.sqlite")
    try:
        return db.execute("SELECT op_index, outcome, reason FROM audit_events WHERE kind = 'outcome' "
                          "AND request_id = ? ORDER BY op_index", (request_id,)).fetchall()
    finally:
        db.close()


def kill(daemon: Daemon) -> int:
    victim = daemon.pid()
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    assert daemons.wait_gone(victim)
    return victim


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_kill_9_mid_chain_the_next_daemon_records_the_running_op_interrupted(
        daemon: Daemon, project: Path, tmp_path: Path, store: str, request: pytest.FixtureRequest) -> None:
    pg_url = None
    if store == "postgres":
        pg_url = request.getfixturevalue("pg_database")
        config = project / "khive.yaml"
        config.write_text(config.read_text().replace("store: sqlite", "store: postgres\n  url: env:KHIVE_AUDIT_URL"))
        daemon.env["KHIVE_AUDIT_URL"] = pg_url
    hold, journal = tmp_path / "hold", tmp_path / "journal.txt"
    hold.mkdir()
    assert daemon.khive("request", "ping()", cwd=project).returncode == 0  # the daemon is up
    steps = [f'd.write(tag="{tag}", journal="{journal}"{extra})'
             for tag, extra in (("a", ""), ("b", f', hold="{hold}"'), ("c", ""))]
    client = daemon.popen("request", " | ".join(steps), "--request-id", "chain-1", cwd=project)
    wait_for(lambda: (hold / "started-b").exists(), "op 1 of the chain running")
    victim = kill(daemon)
    stdout, _ = client.communicate(timeout=120)
    assert json.loads(stdout)["results"][1]["error"]["code"] == "daemon_connection_lost"  # a write is not resent
    assert [row[:2] for row in raw_outcomes(project, "chain-1", pg_url)] == [(0, "ok")]  # op 1 never finished

    assert daemon.khive("request", "ping()", cwd=project).returncode == 0  # starts the next daemon
    successor = daemon.pid()
    wait_for(lambda: len(raw_outcomes(project, "chain-1", pg_url)) == 2, "the next daemon's recovery")
    [(_, outcome, reason)] = raw_outcomes(project, "chain-1", pg_url)[1:]
    assert outcome == "interrupted" and f"pid {victim} " in reason and f"recorded by pid {successor} " in reason

    events = {e["opIndex"]: e for e in audit(project, daemon.env) if e["requestId"] == "chain-1"}
    assert journal_lines(journal) == [f"d.write a {victim}"]
    assert sorted(events) == [0, 1]  # op 2 never started: no event
    assert [(events[i]["outcome"], events[i]["args"]["tag"], events[i]["process"]["pid"]) for i in (0, 1)] == [
        ("ok", "a", victim), ("interrupted", "b", victim)]
    assert events[1]["writeKeys"] == ["d:b"]


def test_kill_9_mid_batch_every_wiki_page_on_disk_has_its_audit_event(daemon: Daemon, project: Path,
                                                                       tmp_path: Path) -> None:
    env = {"KHIVE_PACKS": "core,wiki"}
    hold = tmp_path / "hold"
    hold.mkdir()
    assert daemon.khive("request", "ping()", cwd=project, env=env).returncode == 0
    keys = [f"kill/page-{index:03d}" for index in range(60)]
    ops = [f'd.write(tag="hold", hold="{hold}")'] + [
        f'wiki.write(key="{key}", summary="page {index}", body="written before the kill")'
        for index, key in enumerate(keys)]
    client = daemon.popen("request", "[" + ", ".join(ops) + "]", "--request-id", "wiki-kill", cwd=project, env=env)
    pages = project / "wiki" / "global" / "kill"
    wait_for(lambda: (hold / "started-hold").exists() and len(list(pages.glob("*.md"))) >= 5,
             "pages being written")
    kill(daemon)
    client.communicate(timeout=120)

    on_disk = {f"kill/{page.stem}" for page in pages.glob("*.md")}
    events = [e for e in audit(project, {**daemon.env, **env}) if e["requestId"] == "wiki-kill"]
    audited = {e["args"]["key"]: e for e in events if e["verb"] == "wiki.write"}
    assert len(on_disk) >= 5 and on_disk <= set(audited)
    assert len(events) == 61  # the whole batch was in the trail before its first op ran
    assert {e["outcome"] for e in events} <= {"ok", "interrupted"}
    assert [e["outcome"] for e in events if e["verb"] == "d.write"] == ["interrupted"]
    for key in on_disk:
        assert audited[key]["writeKeys"] and audited[key]["decision"] == "allow"


def test_a_result_json_cannot_hold_does_not_cost_the_events(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    assert daemon.khive("request", "ping()", cwd=project).returncode == 0
    chain = f'd.huge() | d.write(tag="big", note=$prev.n, journal="{journal}")'
    daemon.khive("request", chain, "--request-id", "huge-1", cwd=project)
    assert [line.split()[:2] for line in journal_lines(journal)] == [["d.write", "big"]]
    events = sorted((e for e in audit(project, daemon.env) if e["requestId"] == "huge-1"),
                    key=lambda e: e["opIndex"])
    assert [(e["verb"], e["outcome"]) for e in events] == [("d.huge", "ok"), ("d.write", "ok")]
    assert events[1]["args"]["note"] in (str(2**70), 2**70)  # as the audit stores it, or as a later rule encodes it


@pytest.mark.anyio
async def test_over_mcp_a_refused_operator_verb_and_a_parse_error_are_audited(daemon: Daemon, project: Path,
                                                                               tmp_path: Path) -> None:
    import mcp_types as types
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    hold = tmp_path / "hold"
    hold.mkdir()
    assert (await anyio.to_thread.run_sync(lambda: daemon.khive("request", "ping()", cwd=project))).returncode == 0
    params = StdioServerParameters(command=KHIVE, args=["--project", str(project), "mcp"], cwd=project, env=daemon.env)
    answers: dict[str, Any] = {}
    with (tmp_path / "mcp.log").open("w") as errlog, anyio.fail_after(120):
        async with Client(stdio_client(params, errlog=errlog),
                          client_info=types.Implementation(name="agent-x", version="0")) as client:
            with pytest.raises(MCPError):
                await client.call_tool("request", {"ops": "wiki.write(key=secret-key-123)", "request_id": "p-1"})

            async def batch() -> None:
                answers["batch"] = await client.call_tool("request", {
                    "ops": f'[audit.query(limit=1), d.write(tag="h", hold="{hold}")]', "request_id": "op-1"})

            async with anyio.create_task_group() as group:
                group.start_soon(batch)
                await anyio.to_thread.run_sync(wait_for, lambda: (hold / "started-h").exists(), "the batch running")
                await anyio.to_thread.run_sync(kill, daemon)
    events = await anyio.to_thread.run_sync(audit, project, daemon.env)
    mine = sorted((e for e in events if e["requestId"] in {"p-1", "op-1"}),
                  key=lambda e: (e["requestId"], e["opIndex"]))
    me = f"agent:{pwd.getpwuid(os.getuid()).pw_name}"  # the OS user, never the client's name (ADR 0032)
    assert [(e["requestId"], e["verb"], e["outcome"], e["transport"], e["principal"], e["client"]) for e in mine] == [
        ("op-1", "audit.query", "permission_denied", "mcp-stdio", me, "agent-x"),
        ("op-1", "d.write", "interrupted", "mcp-stdio", me, "agent-x"),
        ("p-1", "(parse)", "parse_error", "mcp-stdio", me, "agent-x")]
    assert "secret-key-123" not in json.dumps(mine)
