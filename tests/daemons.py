"""Finding and ending test daemons by their KHIVE_HOME (never by name: only the pid in that home)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def daemon_pid(home: Path) -> int | None:
    """The pid in ``home/khived.pid`` when that process is alive and is a khive daemon."""
    try:
        pid = int((home / "khived.pid").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
    return pid if b"khive.daemon" in cmdline and state != "Z" else None


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def kill_daemon(home: Path) -> None:
    pid = daemon_pid(home)
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)
