"""Which process runs an op, and whether that process is still alive.

A write-ahead audit row names its process so that a later runtime can tell an op that is still
running from one whose process died (``interrupted``). A pid alone is not enough: pids are
recycled, several processes (daemon, CLI, MCP servers) share one audit file, and a PostgreSQL
trail is shared by several hosts. So a process is named by

    host      the host name (hosts sharing a PostgreSQL trail must have distinct names)
    boot      the kernel's boot id (/proc/sys/kernel/random/boot_id): a new value after every boot
    pidns     the pid namespace (/proc/self/ns/pid): containers on one kernel number pids apart
    pid
    start     the process start time in clock ticks after boot (/proc/<pid>/stat, field 22)

and judged ``gone`` only when that is certain: same host and an earlier boot, or same host, boot
and namespace and the pid is free, a zombie, or now belongs to a process that started at another
time (a recycled pid). Anything else (another host, another namespace) is ``unknown`` and its ops
stay ``running``: never mark the ops of a process that may be alive. Without /proc (not Linux) boot
and start are empty and only "is the pid free" can be checked.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

_PROC = Path("/proc")
_STARTTIME_FIELD = 19  # field 22 of /proc/<pid>/stat, counted after the ")" that ends the command name


class Liveness(Enum):
    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"  # not ours to judge (another host or pid namespace)


@dataclass(frozen=True, slots=True)
class ProcessId:
    host: str
    boot: str
    pidns: str
    pid: int
    start: int  # 0 when unknown

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "boot": self.boot, "pidns": self.pidns, "pid": self.pid, "start": self.start}

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host or 'an unnamed host'}"


_current: ProcessId | None = None


def this_process() -> ProcessId:
    """The running process (cached, and recomputed after a fork)."""
    global _current
    if _current is None or _current.pid != os.getpid():
        _current = identify(os.getpid())
    return _current


def identify(pid: int) -> ProcessId:
    """How a process of this host and pid namespace is named (start 0 when it is gone or unknown)."""
    return ProcessId(host=socket.gethostname(), boot=_read(_PROC / "sys/kernel/random/boot_id"),
                     pidns=_readlink(_PROC / "self/ns/pid"), pid=pid, start=_start_time(pid) or 0)


def judge(owner: ProcessId, me: ProcessId) -> Liveness:
    """Is ``owner`` alive, as far as ``me`` can tell?"""
    if owner.host != me.host:
        return Liveness.UNKNOWN
    if owner.boot != me.boot:
        # Same host, another boot id: that boot is over, and every process of it with it. An empty
        # boot id on one side only means a host that lost /proc, which we do not try to reason about.
        return Liveness.GONE if owner.boot and me.boot else Liveness.UNKNOWN
    if owner.pidns != me.pidns:
        return Liveness.UNKNOWN
    if owner.pid == me.pid:
        return Liveness.ALIVE if owner.start == me.start else Liveness.GONE
    if not me.boot:  # no /proc: only whether the pid is taken
        return Liveness.ALIVE if _pid_taken(owner.pid) else Liveness.GONE
    stat = _read(_PROC / str(owner.pid) / "stat")
    if not stat:
        return Liveness.GONE
    fields = stat.rsplit(")", 1)[-1].split()
    if len(fields) <= _STARTTIME_FIELD or fields[0] in {"Z", "X"}:  # a zombie has finished running
        return Liveness.GONE
    return Liveness.ALIVE if int(fields[_STARTTIME_FIELD]) == owner.start else Liveness.GONE


def _start_time(pid: int) -> int | None:
    fields = _read(_PROC / str(pid) / "stat").rsplit(")", 1)[-1].split()
    return int(fields[_STARTTIME_FIELD]) if len(fields) > _STARTTIME_FIELD else None


def _pid_taken(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds the pid
        return True
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""
