"""Nobody acts as someone else over MCP (ADR 0032): over stdio the principal is the OS user running the
server, whatever the client calls itself; the client's name is recorded in the audit only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp_helpers import audit_events

from khive.bootstrap import open_runtime
from khive.identity import os_user
from khive.mcp_server import TOOL_NAME, build_server

pytestmark = [pytest.mark.anyio]

ME = f"agent:{os_user()}"


def with_auth(project: Path, rules: str) -> None:
    config = project / "khive.yaml"
    text = config.read_text()
    start = text.index("auth:")
    end = text.index("\naudit:") if "\naudit:" in text else len(text)
    config.write_text(text[:start] + f"auth:\n  default: allow\n  rules:\n{rules}" + text[end:])


@asynccontextmanager
async def client_named(project: Path, name: str) -> AsyncIterator[Client]:
    runtime = open_runtime(project, {})
    try:
        async with Client(build_server(runtime), client_info=types.Implementation(name=name, version="0")) as client:
            yield client
    finally:
        await runtime.aclose()


async def first_result(client: Client, ops: str) -> dict[str, Any]:
    answer = await client.call_tool(TOOL_NAME, {"ops": ops})
    assert answer.structured_content is not None
    return dict(answer.structured_content["results"][0])


async def test_a_client_calling_itself_ci_bot_gets_no_rule_meant_for_the_token(project: Path) -> None:
    with_auth(project, '    - {effect: allow, principal: "agent:ci-bot", verb: "scan.*"}\n')
    async with client_named(project, "ci-bot") as client:
        result = await first_result(client, 'scan.run(connection="nope")')
    assert result["error"]["code"] == "permission_denied"
    (event,) = await audit_events(project, verb="scan.run")
    assert (event.principal, event.client, event.decision) == (ME, "ci-bot", "deny")


async def test_renaming_the_client_does_not_escape_a_deny_rule(project: Path) -> None:
    with_auth(project, f'    - {{effect: deny, principal: "{ME}", verb: "wiki.write", reason: "read-only agents"}}\n')
    for name in ("claude-code", "definitely-not-claude", ""):
        async with client_named(project, name) as client:
            result = await first_result(client, 'wiki.write(key="x", summary="s", body="b")')
        assert result["error"]["code"] == "permission_denied", name
        assert "read-only agents" in result["error"]["message"]
    assert not (project / "wiki/global/x.md").exists()
    events = await audit_events(project, verb="wiki.write")
    assert {event.principal for event in events} == {ME}
    assert sorted(event.client for event in events) == ["", "claude-code", "definitely-not-claude"]


async def test_a_client_name_is_recorded_as_one_bounded_line(project: Path) -> None:
    async with client_named(project, "evil\nname " + "x" * 500) as client:
        assert (await first_result(client, "ping()"))["ok"]
    (event,) = await audit_events(project, verb="ping")
    assert event.principal == ME
    assert "\n" not in event.client and event.client.startswith("evil name x") and len(event.client) == 200
