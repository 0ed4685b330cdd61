"""Helpers for the MCP server tests (imported by conftest.py and the test modules).

``ProgressPack`` is an in-process pack with one verb that reports progress; ``ServeProcess`` is a
running ``khive serve --http`` subprocess on a loopback port.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from khive.audit.events import AuditEvent
from khive.audit.store import AuditQuery
from khive.bootstrap import open_runtime
from khive.context import Context
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Params, Verb

KHIVE = Path(sys.executable).parent / "khive"
CLIENT_NAME = "pytest-client"
START_TIMEOUT = 15.0


# --- an in-process pack with a verb that reports progress ------------------------------------

class StepsParams(Params):
    n: int = 3


async def steps(params: StepsParams, ctx: Context) -> dict[str, int]:
    """Report progress n times, then answer."""
    for index in range(1, params.n + 1):
        await ctx.progress(index, params.n, "step")
    return {"steps": params.n}


class ProgressPack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="testpack", version="0")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("testpack.steps", StepsParams, steps, steps.__doc__ or "")]


# --- audit --------------------------------------------------------------------------------------

async def audit_events(project: Path, **query: Any) -> list[AuditEvent]:
    """Read the project's audit trail through a fresh runtime, as another process would."""
    runtime = open_runtime(project, {})
    try:
        return await runtime.audit.query(AuditQuery(**query))
    finally:
        await runtime.aclose()


# --- exceptions ---------------------------------------------------------------------------------

def leaves(exc: BaseException) -> Iterator[BaseException]:
    """Every non-group exception inside ``exc`` (the SDK wraps transport failures in task-group groups)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


# --- subprocesses -------------------------------------------------------------------------------

# set for the session by tests/conftest.py: daemon isolation, and every result checked against its model
DAEMON_ISOLATION = ("KHIVE_HOME", "KHIVE_SOCKET", "KHIVE_NO_DAEMON", "KHIVE_RESULT_CHECK")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any KHIVE_* leaking in from the developer's shell
    (except the session's daemon isolation, so a subprocess never reaches the real ~/.khive)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("KHIVE_") or key in DAEMON_ISOLATION}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_khive(*args: str, env: Mapping[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KHIVE), *args], env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, check=False)


@dataclass
class ServeProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    log: IO[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        self.log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_until_listening(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"khive serve exited with {self.process.returncode}:\n{self.stderr()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.25):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"khive serve did not accept connections within {timeout} s:\n{self.stderr()}")

    def stop(self) -> None:
        try:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
        finally:
            self.log.close()


def start_serve(project: Path, *args: str, env: Mapping[str, str], log_dir: Path) -> ServeProcess:
    """Start ``khive --project P serve --http --port N [args]`` on a free loopback port and wait for it."""
    port = free_port()
    log_path = log_dir / f"serve-{port}.log"
    log = log_path.open("wb")
    command = [str(KHIVE), "--project", str(project), "serve", "--http", "--port", str(port), *args]
    try:
        process = subprocess.Popen(command, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   cwd=project)
    except BaseException:
        log.close()
        raise
    server = ServeProcess(process, port, log_path, log)
    try:
        server.wait_until_listening()
    except BaseException:
        server.stop()
        raise
    return server
