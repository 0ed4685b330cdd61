"""``khive serve --http`` forwards through the daemon too: the audit keeps the HTTP principal and transport."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from daemon_helpers import KHIVE, Daemon, audit
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"khive serve exited: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.25):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"khive serve did not listen: {log.read_text()}")


async def test_khive_serve_forwards_with_the_http_principal(daemon: Daemon, project: Path, tmp_path: Path) -> None:
    port, log_path = free_port(), tmp_path / "serve.log"
    with log_path.open("wb") as log:
        command = [KHIVE, "--project", str(project), "serve", "--http", "--no-auth", "--port", str(port)]
        serve = subprocess.Popen(command, env=daemon.env, cwd=project, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_listening(serve, port, log_path)
        with anyio.fail_after(120):
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
                result = await client.call_tool("request", {"ops": 'd.read(tag="http")', "request_id": "http-1"})
                denied = await client.call_tool("request", {"ops": "audit.query()", "request_id": "http-2"})
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    envelope = result.structured_content
    assert envelope is not None and envelope["results"][0]["result"]["pid"] == daemon.pid()
    assert envelope["results"][0]["result"]["transport"] == "mcp-http"
    assert denied.structured_content["results"][0]["error"]["code"] == "permission_denied"  # type: ignore[index]
    events = {e["requestId"]: e for e in await anyio.to_thread.run_sync(audit, project, daemon.env)}
    assert (events["http-1"]["transport"], events["http-1"]["principal"]) == ("mcp-http", "agent:http-local")
    assert events["http-2"]["outcome"] == "permission_denied"  # operator verbs stay off the wire in the daemon
