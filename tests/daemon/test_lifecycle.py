"""Spawning, single instance, stale files, status/stop/logs and idle shutdown, with real processes."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import daemons
import pytest
from daemon_helpers import Daemon

pytestmark = pytest.mark.slow

ANSWERED = re.compile(r"answered by the daemon \(pid (\d+)\)")


def answered_by(done: subprocess.CompletedProcess[str]) -> int:
    match = ANSWERED.search(done.stderr)
    assert match, f"not forwarded: {done.stderr}"
    return int(match.group(1))


def test_concurrent_clients_spawn_exactly_one_daemon(daemon: Daemon, project: Path) -> None:
    clients = [daemon.popen("--verbose", "request", f'd.read(tag="c{index}")', cwd=project) for index in range(4)]
    outputs = [client.communicate(timeout=120) for client in clients]
    pids = set()
    for client, (stdout, stderr) in zip(clients, outputs, strict=True):
        assert client.returncode == 0, stderr
        envelope = json.loads(stdout)
        assert envelope["status"] == "success"
        pids.add(answered_by(subprocess.CompletedProcess([], 0, stdout, stderr)))
        assert envelope["results"][0]["result"]["pid"] in pids  # the op ran in the daemon, not the client
    assert len(pids) == 1
    assert pids == {daemon.pid()}
    assert daemon.log().count("listening on") == 1
    status = daemon.status(project)
    assert status["requests_served"] == 4 and status["project"] == str(project)


def test_stale_socket_and_pid_file_are_cleaned_up(daemon: Daemon, project: Path) -> None:
    (daemon.home / "khived.pid").write_text("999999\n")  # no such process
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(daemon.socket))  # a socket file nobody listens on, as a killed daemon leaves it
    stale.close()
    assert daemon.socket.exists()

    done = daemon.khive("--verbose", "request", 'd.read(tag="after-stale")', cwd=project)
    assert done.returncode == 0, done.stderr
    assert answered_by(done) == daemon.pid()
    assert "removing stale socket" in daemon.log()
    assert (daemon.home / "khived.pid").read_text().strip() == str(daemon.pid())


def test_a_second_daemon_refuses_to_start(daemon: Daemon, project: Path) -> None:
    started = daemon.khive("daemon", "start", cwd=project)
    assert started.returncode == 0, started.stderr
    pid = daemon.pid()
    assert pid is not None and f"pid {pid}" in started.stdout
    again = daemon.khive("daemon", "start", cwd=project)
    assert again.returncode == 0 and f"already running: pid {pid}" in again.stdout

    second = daemon.khive("daemon", "run", cwd=project)
    assert second.returncode == 2
    assert "already running" in second.stderr and f"pid {pid}" in second.stderr
    assert daemon.pid() == pid and daemon.socket.exists()  # the live one is untouched


def test_status_stop_and_logs(daemon: Daemon, project: Path) -> None:
    assert daemon.khive("daemon", "status", cwd=project).returncode == 1  # none yet
    assert daemon.khive("request", 'd.read(tag="one")', cwd=project).returncode == 0
    status = daemon.status(project)
    assert status["pid"] == daemon.pid() and status["requests_served"] == 1
    assert status["uptime_s"] >= 0 and len(status["config_id"]) == 16 and status["runtime_config_id"]
    assert {task["pack"] for task in status["warm"]["tasks"]} == {"core", "d"}
    text = daemon.khive("daemon", "status", cwd=project)
    assert "requests served  1" in text.stdout and "warm" in text.stdout

    pid = daemon.pid()
    assert pid is not None
    stopped = daemon.khive("daemon", "stop", cwd=project)
    assert stopped.returncode == 0 and f"stopped: pid {pid}" in stopped.stdout
    assert daemons.wait_gone(pid)
    assert not daemon.socket.exists()
    logs = daemon.khive("daemon", "logs", "-n", "5", cwd=project)
    assert "stopped (asked to stop by a client) after 1 requests" in logs.stdout
    assert "no daemon is running" in daemon.khive("daemon", "stop", cwd=project).stdout


def test_idle_daemon_exits_on_its_own(daemon: Daemon, project: Path) -> None:
    done = daemon.khive("--verbose", "request", 'd.read(tag="idle")', cwd=project, env={"KHIVE_DAEMON_IDLE": "0.5"})
    pid = answered_by(done)
    assert daemons.wait_gone(pid, timeout=60)
    assert "idle for" in daemon.log() and not daemon.socket.exists()


def test_directories_are_created_private_and_the_socket_0600(daemon: Daemon, project: Path) -> None:
    home, sockets = daemon.home / "home", daemon.home / "sockets"
    env = {"KHIVE_HOME": str(home), "KHIVE_SOCKET": str(sockets / "k.sock")}
    try:
        assert daemon.khive("request", 'd.read(tag="perm")', cwd=project, env=env).returncode == 0
        assert os.stat(sockets / "k.sock").st_mode & 0o777 == 0o600
        assert os.stat(sockets).st_mode & 0o777 == 0o700 and os.stat(home).st_mode & 0o777 == 0o700
        assert (home / "khived.log").exists() and daemons.daemon_pid(home) is not None
    finally:
        daemon.khive("daemon", "stop", cwd=project, env=env)
        daemons.kill_daemon(home)
