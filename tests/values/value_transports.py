"""The four ways a request reaches khive, as real processes: the CLI in-process, the CLI through the
daemon, MCP over stdio and MCP over Streamable HTTP (both through the daemon, as agents run them).

``KHIVE_DAEMON_STRICT=1`` on the daemon paths: a request the daemon did not answer fails instead of
quietly running in the client, so a test through the daemon really went through it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import daemons
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.mcp_server import TOOL_NAME

KHIVE = str(Path(sys.executable).parent / "khive")
TRANSPORTS = ("cli", "cli-daemon", "mcp-stdio", "mcp-http")
TOKEN = "values-test-token"


@dataclass
class Site:
    """A project and the environment its clients run with (its own daemon home)."""

    project: Path
    home: Path
    extra_env: Mapping[str, str]

    def env(self, *, daemon: bool) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("KHIVE_")}
        # KHIVE_HTTP_TOKEN everywhere: the starter khive.yaml refers to it, so it is part of the daemon's identity
        env.update(KHIVE_HOME=str(self.home), KHIVE_SOCKET=str(self.home / "khived.sock"), KHIVE_DAEMON_IDLE="120",
                   KHIVE_DAEMON_SPAWN_WAIT="30", KHIVE_HTTP_TOKEN=TOKEN, **self.extra_env)
        env.update({"KHIVE_DAEMON_STRICT": "1"} if daemon else {"KHIVE_NO_DAEMON": "1"})
        return env

    def khive(self, *args: str, daemon: bool, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KHIVE, "--project", str(self.project), *args], env=self.env(daemon=daemon),
                              cwd=self.project, capture_output=True, text=True, timeout=timeout, check=False)

    def daemon_pid(self) -> int | None:
        pid: int | None = daemons.daemon_pid(self.home)
        return pid

    def stop_daemon(self) -> None:
        pid = self.daemon_pid()
        if pid is None:
            return
        self.khive("daemon", "stop", daemon=True, timeout=60)
        if not daemons.wait_gone(pid, timeout=20):
            daemons.kill_daemon(self.home)


def _cli(site: Site, ops: str, *, daemon: bool) -> dict[str, Any]:
    done = site.khive("request", ops, daemon=daemon)
    assert done.stdout, done.stderr
    envelope: dict[str, Any] = json.loads(done.stdout)
    assert "Traceback" not in done.stderr, done.stderr
    return envelope


async def _stdio(site: Site, ops: str, errlog: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=KHIVE, args=["--project", str(site.project), "mcp"], cwd=site.project,
                                   env=site.env(daemon=True))
    with errlog.open("w") as stderr:
        async with Client(stdio_client(params, errlog=stderr)) as client:
            result = await client.call_tool(TOOL_NAME, {"ops": ops})
    assert "Traceback" not in errlog.read_text(), errlog.read_text()
    assert result.structured_content is not None
    return dict(result.structured_content)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def _serving(site: Site, errlog: Path) -> AsyncIterator[str]:
    port = _free_port()
    with errlog.open("wb") as log:
        process = subprocess.Popen([KHIVE, "--project", str(site.project), "serve", "--http", "--port", str(port)],
                                   env=site.env(daemon=True), cwd=site.project,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, errlog.read_text()
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.25):
                        break
                except OSError:
                    assert time.monotonic() < deadline, f"khive serve did not listen:\n{errlog.read_text()}"
                    await anyio.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


async def _http(site: Site, ops: str, errlog: Path) -> dict[str, Any]:
    async with _serving(site, errlog) as url:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool(TOOL_NAME, {"ops": ops})
    assert result.structured_content is not None
    return dict(result.structured_content)


async def ask(site: Site, transport: str, ops: str, logs: Path) -> dict[str, Any]:
    """Send ``ops`` over one transport and return the envelope the client got."""
    with anyio.fail_after(180):
        if transport == "cli":
            return await anyio.to_thread.run_sync(lambda: _cli(site, ops, daemon=False))
        if transport == "cli-daemon":
            return await anyio.to_thread.run_sync(lambda: _cli(site, ops, daemon=True))
        if transport == "mcp-stdio":
            return await _stdio(site, ops, logs / "stdio.log")
        if transport == "mcp-http":
            return await _http(site, ops, logs / "http.log")
    raise ValueError(f"unknown transport {transport!r}")


def run_ops(project: Path, env: dict[str, str], text: str) -> list[dict[str, Any]]:
    """Dispatch in-process as the operator (scan.run is an operator verb) and return the results."""
    async def go() -> list[dict[str, Any]]:
        runtime = open_runtime(project, env)
        try:
            envelope = await dispatch(parse(text), Context(runtime, "operator:tester", CLI, presentation="verbose"))
        finally:
            await runtime.aclose()
        results: list[dict[str, Any]] = envelope["results"]
        return results

    return anyio.run(go)
