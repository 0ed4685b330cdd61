"""Helpers for the daemon tests (imported by conftest.py and the test modules): a daemon home with
the environment its clients run with, real ``khive`` subprocesses, bounded waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import daemons

from khive.audit.store import AuditQuery
from khive.bootstrap import open_runtime

KHIVE = str(Path(sys.executable).parent / "khive")
HERE = Path(__file__).resolve().parent


@dataclass
class Daemon:
    """One test's daemon home and the environment its clients run with."""

    home: Path
    env: dict[str, str]

    @property
    def socket(self) -> Path:
        return self.home / "khived.sock"

    def khive(self, *args: str, cwd: Path, env: Mapping[str, str] | None = None, stdin: str | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KHIVE, *args], cwd=cwd, env={**self.env, **(env or {})}, input=stdin,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def popen(self, *args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen([KHIVE, *args], cwd=cwd, env={**self.env, **(env or {})}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def status(self, cwd: Path) -> dict[str, Any]:
        done = self.khive("daemon", "status", "--json", cwd=cwd)
        assert done.returncode == 0, done.stderr
        status: dict[str, Any] = json.loads(done.stdout)
        return status

    def pid(self) -> int | None:
        return daemons.daemon_pid(self.home)

    def log(self) -> str:
        path = self.home / "khived.log"
        return path.read_text(errors="replace") if path.exists() else ""


def daemon_env(home: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("KHIVE_")}
    env.update(KHIVE_HOME=str(home), KHIVE_SOCKET=str(home / "khived.sock"), KHIVE_DAEMON_IDLE="60",
               KHIVE_PACKS="core", KHIVE_EXTRA_PACKS="daemonpack:PACK", KHIVE_DAEMON_SPAWN_WAIT="20",
               PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")])))
    env.update(extra)
    return env


def stop(daemon: Daemon) -> None:
    pid = daemon.pid()
    if pid is None:
        return
    subprocess.run([KHIVE, "daemon", "stop"], env=daemon.env, capture_output=True, timeout=60, check=False)
    if not daemons.wait_gone(pid, timeout=20):
        daemons.kill_daemon(daemon.home)


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    """Poll ``condition()`` until true; a bounded wait for a state, never an assertion about time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def audit(project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The project's audit trail, read through a fresh runtime as another process would."""
    async def read() -> list[dict[str, Any]]:
        runtime = open_runtime(project, env)
        try:
            return [event.to_dict() for event in await runtime.audit.query(AuditQuery(limit=1000))]
        finally:
            await runtime.aclose()

    return anyio.run(read)
