"""``khive mcp``: a real subprocess speaking MCP over stdin/stdout."""

from __future__ import annotations

from pathlib import Path

import anyio
import jsonschema
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import KHIVE, audit_events, clean_env

from khive.identity import os_user
from khive.mcp_server import INVALID_PARAMS, TOOL_NAME

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_khive_mcp_over_stdio(project: Path, tmp_path: Path, mode: str) -> None:
    # The SDK passes only a whitelist of variables by default; clean_env keeps the session's daemon
    # isolation (KHIVE_NO_DAEMON, KHIVE_HOME), so no daemon starts in the real ~/.khive.
    params = StdioServerParameters(command=str(KHIVE), args=["--project", str(project), "mcp"], cwd=project,
                                   env=clean_env())
    stderr_path = tmp_path / "stdio-stderr.log"
    with stderr_path.open("w") as stderr, anyio.fail_after(30):
        async with Client(stdio_client(params, errlog=stderr), mode=mode,
                          client_info=types.Implementation(name="stdio-test", version="0")) as client:
            listing = await client.list_tools()
            assert [tool.name for tool in listing.tools] == [TOOL_NAME]
            assert "  ping: " in (listing.tools[0].description or "")
            assert listing.tools[0].input_schema["required"] == ["ops"]

            result = await client.call_tool(TOOL_NAME, {"ops": '[ping(echo="x"), audit.query()]',
                                                        "request_id": "stdio-1"})
            envelope = result.structured_content
            assert envelope is not None
            assert envelope["requestId"] == "stdio-1"
            assert envelope["status"] == "partial"
            assert envelope["results"][0] == {"ok": True, "verb": "ping",
                                              "result": {"pong": True, "echo": "x"}}
            assert envelope["results"][1]["error"]["code"] == "permission_denied"

            with pytest.raises(MCPError) as info:
                await client.call_tool(TOOL_NAME, {"ops": "ping(echo=abc"})
            assert info.value.code == INVALID_PARAMS
            assert info.value.data["reason"] == "parse_error"
            assert info.value.data["line"] == 1

    events = await audit_events(project, request_id="stdio-1")
    # the principal is the OS user running khive mcp; the client's own name is only recorded
    me = f"agent:{os_user()}"
    assert {(event.verb, event.transport, event.principal, event.client) for event in events} == {
        ("ping", "mcp-stdio", me, "stdio-test"), ("audit.query", "mcp-stdio", me, "stdio-test")}
    assert "Traceback" not in stderr_path.read_text()


async def test_a_failed_envelope_sets_is_error_and_every_envelope_matches_the_output_schema(
        project: Path, tmp_path: Path) -> None:
    """ADR 0039: isError exactly when no op succeeded; structuredContent validates against the declared schema."""
    params = StdioServerParameters(command=str(KHIVE), args=["--project", str(project), "mcp"], cwd=project,
                                   env=clean_env())
    with (tmp_path / "stdio-stderr.log").open("w") as stderr, anyio.fail_after(30):
        async with Client(stdio_client(params, errlog=stderr)) as client:
            (tool,) = (await client.list_tools()).tools
            assert tool.output_schema is not None
            seen = {}
            for ops in ("ping()", "[ping(), audit.query()]", "audit.query()", "wiki.read(key=\"no/such-page\")",
                        'wiki.search(query="zzz") | wiki.read(key=$prev.hits[0].key) | ping()'):
                result = await client.call_tool(TOOL_NAME, {"ops": ops})
                envelope = result.structured_content
                jsonschema.validate(envelope, tool.output_schema)
                assert result.is_error is (envelope["status"] == "failed"), ops
                seen[ops] = envelope["status"]
    assert seen == {"ping()": "success", "[ping(), audit.query()]": "partial", "audit.query()": "failed",
                    "wiki.read(key=\"no/such-page\")": "failed",
                    'wiki.search(query="zzz") | wiki.read(key=$prev.hits[0].key) | ping()': "partial"}
