"""``khive serve --http`` forwards through the daemon too: the audit keeps the HTTP principal and transport."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import anyio
import httpx2
import psycopg
import pytest
from daemon_helpers import KHIVE, Daemon, audit, wait_for
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


def _outcome(project: Path, env: dict[str, str], request_id: str) -> str | None:
    events = [event for event in audit(project, env) if event["requestId"] == request_id]
    return str(events[0]["outcome"]) if events else None


def _sleeping(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as admin:
        found = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                              "AND query ILIKE '%pg_sleep(25)%' AND pid <> pg_backend_pid()").fetchone()
    return bool(found and found[0])


@pytest.mark.postgres
async def test_a_call_its_client_cancels_stops_its_statement(daemon: Daemon, project: Path, tmp_path: Path,
                                                             pg_database: str) -> None:
    """Found on realworld-pg: 12 calls cancelled by their client kept 8 pg_sleep(25) running, and another
    agent's SELECT 1 waited 19 s for a pool slot; each statement ran on for nobody and was audited ok."""
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n  pg: {driver: postgres, "
                                                 "url: env:PG_URL, allowPrivilegedRole: true}\n"))
    env = {**daemon.env, "PG_URL": pg_database, "KHIVE_PACKS": "core,scan"}
    port, log_path = free_port(), tmp_path / "serve.log"
    with log_path.open("wb") as log:
        command = [KHIVE, "--project", str(project), "serve", "--http", "--no-auth", "--port", str(port)]
        serve = subprocess.Popen(command, env=env, cwd=project, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_listening(serve, port, log_path)
        with anyio.fail_after(120):
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(60)) as http, \
                    Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
                async with anyio.create_task_group() as calls:
                    calls.start_soon(client.call_tool, "request", {
                        "ops": 'sql.execute(connection="pg", sql="SELECT pg_sleep(25)")', "request_id": "left"})
                    await anyio.to_thread.run_sync(wait_for, lambda: _sleeping(pg_database), "the statement")
                    calls.cancel_scope.cancel()  # the agent gives up on the call
                await anyio.to_thread.run_sync(
                    wait_for, lambda: _outcome(project, env, "left") not in (None, "running"), "the audit event")
                after = await client.call_tool("request", {"ops": 'sql.execute(connection="pg", sql="SELECT 1")'})
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    assert await anyio.to_thread.run_sync(_outcome, project, env, "left") == "caller_left"
    assert not _sleeping(pg_database)
    assert after.structured_content is not None and after.structured_content["status"] == "success"
