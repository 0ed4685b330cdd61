"""``khive serve --http``: a real Streamable HTTP server on a loopback port, with bearer tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import duckdb
import httpx
import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import ServeProcess, audit_events, clean_env, free_port, leaves, run_khive

from khive.answer_fit import MAX_ANSWER_BYTES, answer_bytes
from khive.mcp_server import INVALID_PARAMS, TOOL_NAME
from khive.values import ANSWER_ROW_BYTES

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Serve = Callable[..., ServeProcess]
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def connect(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """An MCP client over Streamable HTTP, sending ``Authorization: Bearer <token>`` when given one."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def call_with_id(client: Client, ops: str, request_id: str) -> dict[str, Any]:
    result = await client.call_tool(TOOL_NAME, {"ops": ops, "request_id": request_id})
    envelope: dict[str, Any] | None = result.structured_content
    assert envelope is not None
    return envelope


def assert_unauthorized(url: str, headers: dict[str, str]) -> None:
    response = httpx.post(url, json=TOOLS_LIST, headers={**ACCEPT, **headers})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"] == "unauthorized"


async def assert_client_rejected(url: str, token: str | None) -> None:
    with pytest.raises(Exception) as info:  # the SDK wraps it in exception groups
        async with connect(url, token) as client:
            await client.list_tools()
    assert any(isinstance(leaf, MCPError) for leaf in leaves(info.value)), info.value


async def test_bearer_token_from_env(project: Path, khive_serve: Serve) -> None:
    server = khive_serve(project, env=clean_env(KHIVE_HTTP_TOKEN="secret"))
    assert "serving MCP on http://127.0.0.1:" in server.stderr()

    assert_unauthorized(server.url, {})
    assert_unauthorized(server.url, {"Authorization": "Bearer wrong"})
    assert_unauthorized(server.url, {"Authorization": "Basic secret"})
    assert_unauthorized(server.url, {"Authorization": "Bearer secret-but-longer"})
    with anyio.fail_after(30):
        await assert_client_rejected(server.url, None)
        await assert_client_rejected(server.url, "wrong")

        async with connect(server.url, "secret") as client:
            listing = await client.list_tools()
            assert [tool.name for tool in listing.tools] == [TOOL_NAME]
            assert listing.tools[0].input_schema["required"] == ["ops"]

            envelope = await call_with_id(client, "[ping(echo=1), audit.query()]", "http-1")
            assert envelope["status"] == "partial"
            assert envelope["requestId"] == "http-1"

            with pytest.raises(MCPError) as error:
                await client.call_tool(TOOL_NAME, {"ops": "ping(echo=abc)"})
            assert error.value.code == INVALID_PARAMS
            assert error.value.data["code"] == "bareword-value"

    events = await audit_events(project, request_id="http-1")
    assert {(event.verb, event.transport, event.principal, event.outcome) for event in events} == {
        ("ping", "mcp-http", "agent:http", "ok"),
        ("audit.query", "mcp-http", "agent:http", "permission_denied"),
    }
    assert server.process.poll() is None, server.stderr()


async def test_tokens_from_khive_yaml_name_their_principal(project: Path, khive_serve: Serve) -> None:
    config = project / "khive.yaml"
    text = config.read_text()
    assert "  tokens: []\n" in text
    config.write_text(text.replace(
        "  tokens: []\n", '  tokens:\n    - {token: env:TEAM_TOKEN, principal: "agent:team-bot"}\n'))
    server = khive_serve(project, env=clean_env(TEAM_TOKEN="team-secret", KHIVE_HTTP_TOKEN="env-secret"))

    assert_unauthorized(server.url, {"Authorization": "Bearer TEAM_TOKEN"})
    with anyio.fail_after(30):
        async with connect(server.url, "team-secret") as client:
            await call_with_id(client, "ping()", "team-1")
        async with connect(server.url, "env-secret") as client:
            await call_with_id(client, "ping()", "env-1")

    (team,) = await audit_events(project, request_id="team-1")
    (env,) = await audit_events(project, request_id="env-1")
    assert (team.principal, team.transport) == ("agent:team-bot", "mcp-http")
    assert (env.principal, env.transport) == ("agent:http", "mcp-http")


async def test_the_principal_is_the_tokens_whatever_the_client_calls_itself(project: Path, khive_serve: Serve
                                                                            ) -> None:
    config = project / "khive.yaml"
    text = config.read_text().replace("  tokens: []\n", (
        '  tokens:\n    - {token: env:TEAM_TOKEN, principal: "agent:team-bot"}\n'
        '    - {token: env:OTHER_TOKEN, principal: "agent:other"}\n'))
    config.write_text(text.replace("  rules: []", '  rules:\n    - {effect: allow, principal: "agent:team-bot", '
                                   'verb: "scan.*"}', 1))
    server = khive_serve(project, env=clean_env(TEAM_TOKEN="team-secret", OTHER_TOKEN="other-secret"))
    headers = {"Authorization": "Bearer other-secret"}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20)) as http, Client(
                streamable_http_client(server.url, http_client=http),
                client_info=types.Implementation(name="team-bot", version="0")) as client:
            envelope = await call_with_id(client, 'scan.run(connection="nope")', "named-1")
    assert envelope["results"][0]["error"]["code"] == "permission_denied"
    (event,) = await audit_events(project, request_id="named-1")
    assert (event.principal, event.client, event.decision) == ("agent:other", "team-bot", "deny")


def test_missing_token_variable_named_in_khive_yaml_refuses_to_start(project: Path) -> None:
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "  tokens: []\n", '  tokens:\n    - {token: env:TEAM_TOKEN, principal: "agent:team-bot"}\n'))
    done = run_khive("--project", str(project), "serve", "--http", "--port", str(free_port()),
                     env=clean_env())
    assert done.returncode == 2
    assert "TEAM_TOKEN" in done.stderr


def test_serve_without_any_token_refuses_to_start(project: Path) -> None:
    done = run_khive("--project", str(project), "serve", "--http", "--port", str(free_port()),
                     env=clean_env())
    assert done.returncode == 2
    assert "token" in done.stderr
    assert "KHIVE_HTTP_TOKEN" in done.stderr


async def test_no_auth_on_loopback_needs_no_token(project: Path, khive_serve: Serve) -> None:
    server = khive_serve(project, "--no-auth", "--host", "127.0.0.1", env=clean_env())
    response = httpx.post(server.url, json=TOOLS_LIST, headers=ACCEPT)
    assert response.status_code != 401
    with anyio.fail_after(30):
        async with connect(server.url) as client:
            listing = await client.list_tools()
            assert [tool.name for tool in listing.tools] == [TOOL_NAME]
            envelope = await call_with_id(client, 'ping(echo="local")', "local-1")
            assert envelope["results"] == [
                {"ok": True, "verb": "ping", "result": {"pong": True, "echo": "local"}}]
    (event,) = await audit_events(project, request_id="local-1")
    assert (event.transport, event.principal) == ("mcp-http", "agent:http-local")


def test_no_auth_on_a_public_address_refuses_to_start(project: Path) -> None:
    # The refusal happens before anything binds; the short timeout bounds the damage of a regression.
    done = run_khive("--project", str(project), "serve", "--http", "--no-auth", "--host", "0.0.0.0",
                     "--port", str(free_port()), env=clean_env(), timeout=15)
    assert done.returncode == 2
    assert "--no-auth is only allowed on a loopback address" in done.stderr


async def test_a_batch_of_large_results_reaches_the_sdk_client(project: Path, khive_serve: Serve) -> None:
    # Two 256 KiB results in one answer made a 1.1 MB server-sent event, which the SDK's client refuses ("SSE
    # stream failed"): the ops of one MCP request share its rows, and over HTTP an explicit max_bytes is lowered
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}\n", "connections:\n  wh: {driver: duckdb, path: wh.duckdb}\n"))
    duckdb.connect(str(project / "wh.duckdb")).close()
    rows = "SELECT i, repeat('x', 1000) AS pad FROM range(1000) t(i)"
    one = f'sql.execute(connection="wh", sql="{rows}", limit=1000)'
    asking = f'sql.execute(connection="wh", sql="{rows}", limit=1000, max_bytes=4000000)'
    server = khive_serve(project, env=clean_env(KHIVE_HTTP_TOKEN="secret"))
    with anyio.fail_after(60):
        async with connect(server.url, "secret") as client:
            pair = await call_with_id(client, f"[{one}, {one}]", "big-pair")
            alone = await call_with_id(client, one, "big-alone")
            asked = await call_with_id(client, asking, "big-asked")
    for envelope in (pair, alone, asked):
        assert all(entry["ok"] for entry in envelope["results"]), envelope["results"][0]
    shares = [entry["result"] for entry in pair["results"]]
    assert all(0 < len(orjson.dumps(result["rows"])) <= ANSWER_ROW_BYTES // 2 for result in shares)
    assert all(result["truncated"] and any("share" in note for note in result["notes"]) for result in shares)
    (single,) = [entry["result"] for entry in alone["results"]]
    assert len(single["rows"]) > len(shares[0]["rows"])  # one op alone keeps the default
    assert not any("share" in note for note in single["notes"])
    (lowered,) = [entry["result"] for entry in asked["results"]]
    assert len(orjson.dumps(lowered["rows"])) <= ANSWER_ROW_BYTES
    assert any("max_bytes was" in note and "save_to" in note for note in lowered["notes"])


async def test_results_that_would_pass_1_mib_are_left_out_with_a_typed_error(project: Path,
                                                                            khive_serve: Serve) -> None:
    # Eight echoes of up to 120 KB: the answer carries them twice, over 1.4 MB in all, which the SDK's HTTP client
    # refuses whole. The fewest, largest results are left out so that the rest arrive.
    sizes = [60_000, 60_000, 60_000, 60_000, 60_000, 60_000, 59_000, 10]
    ops = "[" + ", ".join(f'ping(echo="{"é" * size}")' for size in sizes) + "]"
    server = khive_serve(project, env=clean_env(KHIVE_HTTP_TOKEN="secret"))
    with anyio.fail_after(60):
        async with connect(server.url, "secret") as client:
            envelope = await call_with_id(client, ops, "echoes")
    assert answer_bytes(envelope) <= MAX_ANSWER_BYTES
    left_out = [index for index, entry in enumerate(envelope["results"]) if not entry["ok"]]
    assert left_out and 7 not in left_out and 6 not in left_out  # the largest go first, the small ones stay
    for index in left_out:
        error = envelope["results"][index]["error"]
        assert error["code"] == "answer_too_large" and error["details"]["succeeded"] is True
        assert "save_to" in error["message"]
    kept = [entry["result"]["echo"] for entry in envelope["results"] if entry["ok"]]
    assert len(kept) == len(sizes) - len(left_out) and "é" * 10 in kept
    assert envelope["summary"] == {"total": 8, "succeeded": len(kept), "failed": len(left_out), "aborted": 0}
    assert envelope["status"] == "partial"
