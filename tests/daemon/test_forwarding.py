"""forward_or_spawn from the outside: what runs where, strict mode, mismatches, kill -9 mid-flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import daemons
import pytest
from daemon_helpers import KHIVE, Daemon, audit, wait_for

from khive.identity import os_user
from khive.scaffold import init_project

pytestmark = pytest.mark.slow


def test_forwarded_request_is_audited_with_the_callers_transport_and_principal(daemon: Daemon,
                                                                                project: Path) -> None:
    done = daemon.khive("--verbose", "request", 'd.read(tag="who")', "--request-id", "fwd-1", cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["results"][0]["result"]
    assert result["pid"] == daemon.pid() and result["transport"] == "cli"
    assert result["principal"].startswith("operator:")
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "fwd-1"]
    assert (event["verb"], event["transport"], event["principal"]) == ("d.read", "cli", result["principal"])


def test_syntax_error_never_reaches_the_daemon(daemon: Daemon, project: Path) -> None:
    bad = daemon.khive("request", "d.read(tag=abc)", cwd=project)
    assert bad.returncode == 2 and 'did you mean tag="abc"?' in bad.stderr
    assert not daemon.socket.exists()  # nothing was spawned for it


def test_no_daemon_dispatches_locally_even_in_strict_mode_and_save_to_does_not(daemon: Daemon,
                                                                              project: Path) -> None:
    strict = {"KHIVE_DAEMON_STRICT": "1"}
    off = daemon.khive("--verbose", "request", 'd.read(tag="here")', cwd=project,
                       env={**strict, "KHIVE_NO_DAEMON": "1"})
    assert off.returncode == 0 and "dispatching locally: KHIVE_NO_DAEMON=1" in off.stderr
    assert json.loads(off.stdout)["results"][0]["result"]["pid"] != daemon.pid()
    assert not daemon.socket.exists()
    # save_to names a file under the project's exports/: the daemon serving the project writes it (ADR 0037)
    save = daemon.khive("--verbose", "request", 'd.read(tag="s", save_to="out.json")', cwd=project, env=strict)
    assert "dispatching locally" not in save.stderr
    assert json.loads(save.stdout)["results"][0]["error"]["code"] == "invalid_args"  # d.read has no save_to
    assert daemon.socket.exists()


def test_config_id_mismatch_falls_back_to_local_dispatch(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    assert daemon.khive("request", 'd.read(tag="a")', cwd=project).returncode == 0
    served = daemon.status(project)["requests_served"]
    other = tmp_path / "other"
    init_project(other, "tester")
    done = daemon.khive("--verbose", "request", 'd.read(tag="b")', "--request-id", "other-1", cwd=other)
    assert done.returncode == 0, done.stderr
    assert f"serves another configuration (project {project}" in done.stderr
    assert json.loads(done.stdout)["results"][0]["result"]["pid"] != daemon.pid()
    assert [e["verb"] for e in audit(other, daemon.env) if e["requestId"] == "other-1"] == ["d.read"]

    assert daemon.status(other)["requests_served"] == served

    stale = daemon.pid()
    assert stale is not None
    config = project / "khive.yaml"  # the daemon's own project, edited: its answers would be stale
    config.write_text(config.read_text() + "\n# edited\n")
    edited = daemon.khive("--verbose", "request", 'd.read(tag="c")', cwd=project)
    assert edited.returncode == 0, edited.stderr
    assert daemons.wait_gone(stale)  # the stale daemon leaves by itself...
    assert "stopping: khive.yaml changed" in daemon.log()
    fresh = daemon.khive("--verbose", "request", 'd.read(tag="d")', cwd=project)  # ...and the next one starts
    assert "answered by the daemon" in fresh.stderr and daemon.pid() not in (None, stale)


def test_strict_mode_turns_fallbacks_into_per_op_errors(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    assert daemon.khive("request", 'd.read(tag="a")', cwd=project).returncode == 0
    other = tmp_path / "other"
    init_project(other, "tester")
    done = daemon.khive("request", '[d.read(tag="x"), d.write(tag="y")]', cwd=other, env={"KHIVE_DAEMON_STRICT": "1"})
    assert done.returncode == 1
    envelope = json.loads(done.stdout)
    assert envelope["status"] == "failed" and envelope["summary"]["failed"] == 2
    for result, verb in zip(envelope["results"], ["d.read", "d.write"], strict=True):
        assert result["verb"] == verb and result["error"]["code"] == "daemon_unavailable"
        assert "KHIVE_DAEMON_STRICT=1" in result["error"]["message"]
        assert "serves another configuration" in result["error"]["message"]
    assert audit(other, daemon.env) == []  # nothing ran anywhere

    daemon.khive("daemon", "stop", cwd=project)  # a daemon that cannot start: its pack fails to load
    broken = daemon.khive("request", 'd.read(tag="z")', cwd=project,
                          env={"KHIVE_DAEMON_STRICT": "1", "KHIVE_DAEMON_SPAWN_WAIT": "1",
                               "KHIVE_EXTRA_PACKS": "daemonpack:PACK,daemonpack:NOPE"})
    error = json.loads(broken.stdout)["results"][0]["error"]
    assert error["code"] == "daemon_unavailable" and "did not come up within 1 s" in error["message"]
    assert "khived.log" in error["message"]
    wait_for(lambda: "KHIVE_EXTRA_PACKS entry 'daemonpack:NOPE' cannot be loaded" in daemon.log(), "the daemon log")


def test_warm_all_does_not_block_the_first_request(daemon: Daemon, project: Path) -> None:
    gate = project / ".warm-gate"
    gate.write_text("hold")
    first = daemon.khive("--verbose", "request", 'd.read(tag="first")', cwd=project)
    assert first.returncode == 0, first.stderr
    status = daemon.status(project)
    assert status["warm"]["state"] == "running"
    tasks = {(task["pack"], task["name"]): task for task in status["warm"]["tasks"]}
    assert tasks[("d", "gate")] == {"pack": "d", "name": "gate", "state": "running", "resources": ["nothing"]}
    gate.unlink()
    wait_for(lambda: daemon.status(project)["warm"]["state"] == "done", "warm_all to finish")
    done = {(task["pack"], task["name"]): task["state"] for task in daemon.status(project)["warm"]["tasks"]}
    assert done == {("d", "gate"): "done", ("core", "index"): "done"}  # the core pack warms the shared index


def test_kill_9_with_20_requests_in_flight(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    hold, journal = tmp_path / "hold", tmp_path / "journal.txt"
    hold.mkdir()
    assert daemon.khive("request", "verbs()", cwd=project).returncode == 0  # the daemon is up
    victim = daemon.pid()
    assert victim is not None

    def ops(verb: str, tag: str) -> str:
        return f'{verb}(tag="{tag}", journal="{journal}", hold="{hold}")'

    tags = {f"r{index}": "d.read" for index in range(10)} | {f"w{index}": "d.write" for index in range(10)}
    clients = {tag: daemon.popen("--verbose", "request", ops(verb, tag), "--request-id", f"req-{tag}", cwd=project)
               for tag, verb in tags.items()}
    wait_for(lambda: all((hold / f"started-{tag}").exists() for tag in tags), "20 requests in flight")
    os.kill(victim, signal.SIGKILL)
    assert daemons.wait_gone(victim)
    (hold / "release").write_text("go")

    envelopes = {}
    for tag, client in clients.items():
        stdout, stderr = client.communicate(timeout=180)
        envelopes[tag] = json.loads(stdout)
        result = envelopes[tag]["results"][0]
        if tags[tag] == "d.read":  # read-only: resent once (to a new daemon or locally) and answered
            assert client.returncode == 0, stderr
            assert result["ok"] and result["result"]["pid"] != victim
        else:  # a write is never re-run after a lost answer: a clear error instead
            assert client.returncode == 1
            error = result["error"]
            assert error["code"] == "daemon_connection_lost"
            assert "not resent because d.write write" in error["message"] and f"req-{tag}" in error["message"]

    ran = Counter(tuple(line.split()[:2]) for line in journal.read_text().splitlines())
    assert ran == Counter({("d.read", tag): 1 for tag, verb in tags.items() if verb == "d.read"})
    audited = Counter((e["verb"], str(e["requestId"]).removeprefix("req-")) for e in audit(project, daemon.env)
                      if str(e["requestId"]).startswith("req-") and e["outcome"] == "ok")
    assert audited == ran  # every executed op audited once; no write executed at all


LEAN_CLIENT = """
import sys
from khive.cli import main
code = main(sys.argv[1:])
heavy = sorted(name for name in ("pydantic", "numpy", "sqlglot", "duckdb", "khive.runtime", "khive.dispatch",
                                 "khive.plugins", "rich", "anyio", "mcp") if name in sys.modules)
print("HEAVY", heavy, file=sys.stderr)
raise SystemExit(code)
"""


def test_forwarding_client_imports_nothing_heavy(daemon: Daemon, project: Path) -> None:
    assert daemon.khive("request", "ping()", cwd=project).returncode == 0
    done = subprocess.run([sys.executable, "-c", LEAN_CLIENT, "--verbose", "request", 'd.read(tag="lean")'],
                          cwd=project, env=daemon.env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "answered by the daemon" in done.stderr and "HEAVY []" in done.stderr


@pytest.mark.anyio
async def test_khive_mcp_forwards_through_the_daemon(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=KHIVE, args=["--project", str(project), "mcp"], cwd=project, env=daemon.env)
    with (tmp_path / "mcp.log").open("w") as errlog, anyio.fail_after(120):
        async with Client(stdio_client(params, errlog=errlog),
                          client_info=types.Implementation(name="agent-x", version="0")) as client:
            result = await client.call_tool("request", {"ops": 'd.read(tag="mcp")', "request_id": "mcp-1"})
            envelope = result.structured_content
    assert envelope is not None and envelope["status"] == "success"
    assert envelope["results"][0]["result"]["pid"] == daemon.pid()
    assert envelope["results"][0]["result"]["transport"] == "mcp-stdio"
    events = await anyio.to_thread.run_sync(audit, project, daemon.env)
    [event] = [e for e in events if e["requestId"] == "mcp-1"]
    assert (event["transport"], event["principal"], event["client"]) == ("mcp-stdio", f"agent:{os_user()}", "agent-x")
