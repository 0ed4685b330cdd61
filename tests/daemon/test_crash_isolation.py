"""Crash isolation through the real CLI and daemon: a failure outside any op is still an envelope, the
daemon survives it, and a daemon lost mid-request is reported as such (never as an answer)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import daemons
import pytest
from daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.slow

FAULTS = {"KHIVE_EXTRA_PACKS": "daemonpack:PACK,faultpack:PACK"}
CODE = re.compile(r"[a-z][a-z0-9_]*\Z")


def envelope_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in done.stderr, done.stderr
    envelope: dict[str, Any] = json.loads(done.stdout)
    assert set(envelope) == {"results", "summary", "status", "requestId"}
    return envelope


def typed_failure(result: dict[str, Any]) -> None:
    assert not result["ok"] and CODE.match(result["error"]["code"]), result
    assert "Traceback" not in result["error"]["message"]


@pytest.mark.parametrize("ops", ["f.unencodable()", "[f.oddkeys(), d.read(tag=\"sibling\")]"])
def test_a_failure_outside_any_op_leaves_the_daemon_serving(daemon: Daemon, project: Path, ops: str) -> None:
    assert daemon.khive("request", 'd.read(tag="up")', cwd=project, env=FAULTS).returncode == 0
    pid = daemon.pid()
    done = daemon.khive("--verbose", "request", ops, cwd=project, env=FAULTS)
    envelope = envelope_of(done)
    assert done.returncode == 1 and f"answered by the daemon (pid {pid})" in done.stderr
    assert envelope["status"] in ("failed", "partial")
    typed_failure(envelope["results"][0])
    assert daemon.pid() == pid  # the same daemon answers the next request
    after = daemon.khive("--verbose", "request", 'd.read(tag="after")', cwd=project, env=FAULTS)
    assert after.returncode == 0 and f"answered by the daemon (pid {pid})" in after.stderr


@pytest.mark.parametrize("ops", ["f.unencodable()", "[f.oddkeys(), d.read(tag=\"sibling\")]"])
def test_a_failure_outside_any_op_in_the_local_cli_is_an_envelope(daemon: Daemon, project: Path, ops: str) -> None:
    done = daemon.khive("request", ops, cwd=project, env={**FAULTS, "KHIVE_NO_DAEMON": "1"})
    envelope = envelope_of(done)
    assert done.returncode == 1
    typed_failure(envelope["results"][0])


def test_a_write_lost_with_its_daemon_is_not_reported_as_answered(daemon: Daemon, project: Path,
                                                                   tmp_path: Path) -> None:
    assert daemon.khive("request", 'd.read(tag="up")', cwd=project).returncode == 0
    victim = daemon.pid()
    assert victim is not None
    hold = tmp_path / "hold"
    hold.mkdir()
    client = daemon.popen("--verbose", "request", f'd.write(tag="w", hold="{hold}")', "--request-id", "lost-w",
                          cwd=project)
    wait_for(lambda: (hold / "started-w").exists(), "the write to start in the daemon")
    os.kill(victim, signal.SIGKILL)
    assert daemons.wait_gone(victim)
    (hold / "release").write_text("go")
    stdout, stderr = client.communicate(timeout=120)
    assert client.returncode == 1
    assert "answered by the daemon" not in stderr
    assert f"NOT answered: the daemon (pid {victim}) did not answer" in stderr
    error = json.loads(stdout)["results"][0]["error"]
    assert error["code"] == "daemon_connection_lost" and "lost-w" in error["message"]


def test_a_read_resent_after_its_daemon_died_names_the_daemon_that_answered(daemon: Daemon, project: Path,
                                                                            tmp_path: Path) -> None:
    assert daemon.khive("request", 'd.read(tag="up")', cwd=project).returncode == 0
    victim = daemon.pid()
    assert victim is not None
    hold = tmp_path / "hold"
    hold.mkdir()
    client = daemon.popen("--verbose", "request", f'd.read(tag="r", hold="{hold}")', cwd=project)
    wait_for(lambda: (hold / "started-r").exists(), "the read to start in the daemon")
    os.kill(victim, signal.SIGKILL)
    assert daemons.wait_gone(victim)
    (hold / "release").write_text("go")
    stdout, stderr = client.communicate(timeout=120)
    assert client.returncode == 0, stderr
    answered_by = json.loads(stdout)["results"][0]["result"]["pid"]
    assert answered_by != victim
    if f"answered by the daemon (pid {answered_by}) after one resend" not in stderr:  # no daemon came up in time
        assert "went away mid-request and the resend found no daemon" in stderr and "dispatching locally" in stderr
