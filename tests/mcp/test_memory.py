"""The MCP server in memory: one tool, the envelope as structured content, protocol vs op errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_helpers import CLIENT_NAME, audit_events

from khive.identity import os_user
from khive.mcp_server import INVALID_PARAMS, TOOL_NAME

pytestmark = pytest.mark.anyio


async def call(client: Client, ops: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(TOOL_NAME, {"ops": ops, **arguments})
    envelope: dict[str, Any] | None = result.structured_content
    assert envelope is not None
    assert result.is_error is (envelope["status"] == "failed")  # ADR 0039: isError when no op succeeded
    return envelope


# --- tools/list ---------------------------------------------------------------------------------

async def test_exactly_one_tool_with_the_live_catalogue(client: Client) -> None:
    listing = await client.list_tools()
    assert [tool.name for tool in listing.tools] == ["request"]
    tool = listing.tools[0]
    description = tool.description or ""
    assert "  ping: Answer immediately" in description
    assert "  audit.query: Read the audit trail back" in description
    assert "(operator: CLI only)" in description.split("  audit.query:")[1].splitlines()[0]
    assert "(operator" not in description.split("  ping:")[1].splitlines()[0]
    assert "  testpack.steps: Report progress n times" in description  # the in-process pack is live too
    assert "$prev" in description  # the DSL guide
    schema = tool.input_schema
    assert schema["required"] == ["ops"]
    assert schema["properties"]["ops"]["type"] == "string"
    assert set(schema["properties"]) == {"ops", "presentation", "request_id"}
    assert tool.output_schema is not None
    assert set(tool.output_schema["required"]) == {"results", "summary", "status", "requestId"}


# --- the envelope -------------------------------------------------------------------------------

async def test_single_call_returns_envelope_as_structured_and_text_content(client: Client) -> None:
    result = await client.call_tool(TOOL_NAME, {"ops": 'ping(echo="hi")'})
    assert not result.is_error
    envelope = result.structured_content
    assert envelope is not None
    assert envelope["results"] == [{"ok": True, "verb": "ping", "result": {"pong": True, "echo": "hi"}}]
    assert envelope["summary"] == {"total": 1, "succeeded": 1, "failed": 0, "aborted": 0}
    assert envelope["status"] == "success"
    assert isinstance(envelope["requestId"], str) and envelope["requestId"]
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    assert json.loads(result.content[0].text) == envelope


async def test_json_form_is_accepted(client: Client) -> None:
    envelope = await call(client, '{"verb": "ping", "args": {"echo": [1, 2]}}')
    assert envelope["results"][0]["result"] == {"pong": True, "echo": [1, 2]}


async def test_batch_with_one_failing_op_is_partial(client: Client) -> None:
    envelope = await call(client, '[ping(echo=1), ping(bogus=2), pong()]')
    assert envelope["status"] == "partial"
    assert envelope["summary"] == {"total": 3, "succeeded": 1, "failed": 2, "aborted": 0}
    first, second, third = envelope["results"]
    assert first == {"ok": True, "verb": "ping", "result": {"pong": True, "echo": 1}}
    assert second["ok"] is False and second["error"]["code"] == "invalid_args"
    assert "unknown argument 'bogus'" in second["error"]["message"]
    assert third["ok"] is False and third["error"]["code"] == "unknown_verb"
    assert "ping" in third["error"]["details"]["closest"]


async def test_chain_passes_prev(client: Client) -> None:
    envelope = await call(client, 'ping(echo={"items": [{"id": 7}]}) | ping(echo=$prev.echo.items[0].id)')
    assert envelope["status"] == "success"
    assert envelope["results"][1]["result"] == {"pong": True, "echo": 7}


async def test_chain_bad_prev_aborts_the_rest(client: Client) -> None:
    envelope = await call(client, "ping(echo=1) | ping(echo=$prev.nope) | ping()")
    assert envelope["status"] == "partial"
    assert envelope["summary"] == {"total": 3, "succeeded": 1, "failed": 1, "aborted": 1}
    assert envelope["results"][1]["error"]["code"] == "ref_error"
    assert envelope["results"][2] == {"ok": False, "verb": "ping", "aborted": True}


# --- protocol errors ----------------------------------------------------------------------------

async def test_dsl_syntax_error_is_invalid_params_with_position(client: Client) -> None:
    with pytest.raises(MCPError) as info:
        await client.call_tool(TOOL_NAME, {"ops": "ping(echo=abc)"})
    error = info.value
    assert error.code == INVALID_PARAMS == -32602
    assert "DSL syntax error" in error.message
    data = error.data
    assert data["reason"] == "parse_error"
    assert data["code"] == "bareword-value"
    assert (data["line"], data["column"]) == (1, 11)
    assert data["excerpt"] == "ping(echo=abc)\n          ^"
    assert data["hint"] == 'did you mean echo="abc"?'
    assert data["message"]


async def test_dsl_syntax_error_on_a_later_line(client: Client) -> None:
    with pytest.raises(MCPError) as info:
        await client.call_tool(TOOL_NAME, {"ops": "[ping(),\n ping(echo=abc)]"})
    data = info.value.data
    assert (data["reason"], data["code"]) == ("parse_error", "bareword-value")
    assert (data["line"], data["column"]) == (2, 12)


async def test_syntax_error_never_reaches_the_dispatcher_and_is_audited_without_its_text(
        client: Client, project: Path) -> None:
    text = "ping(api_key=sk-live-4242)"  # unquoted: a parse error whose text holds a secret
    with pytest.raises(MCPError) as info:
        await client.call_tool(TOOL_NAME, {"ops": text, "request_id": "bad-text-1"})
    assert info.value.code == INVALID_PARAMS
    [event] = await audit_events(project)
    assert (event.verb, event.outcome, event.request_id) == ("(parse)", "parse_error", "bad-text-1")
    assert (event.principal, event.transport, event.client) == (f"agent:{os_user()}", "mcp-stdio", CLIENT_NAME)
    assert event.args_redacted["text_chars"] == len(text)
    assert (event.args_redacted["line"], event.args_redacted["column"]) == (1, 14)
    raw = (project / ".khive" / "audit.sqlite").read_bytes() + (project / ".khive" / "audit.sqlite-wal").read_bytes()
    assert b"sk-live-4242" not in raw and b"(parse)" in raw


@pytest.mark.parametrize(("name", "arguments", "fragment"), [
    ("nope", {"ops": "ping()"}, "unknown tool 'nope'"),
    ("request", {}, "'ops' is required"),
    ("request", {"ops": 42}, "'ops' is required"),
    ("request", {"ops": "ping()", "extra": 1}, "unknown argument(s) ['extra']"),
    ("request", {"ops": "ping()", "presentation": "loud"}, "presentation must be one of"),
    ("request", {"ops": "ping()", "request_id": 5}, "request_id must be a string"),
])
async def test_malformed_calls_are_invalid_params(client: Client, name: str, arguments: dict[str, Any],
                                                  fragment: str) -> None:
    with pytest.raises(MCPError) as info:
        await client.call_tool(name, arguments)
    assert info.value.code == INVALID_PARAMS
    assert fragment in info.value.message


# --- the gate -----------------------------------------------------------------------------------

async def test_operator_verb_is_denied_inside_the_envelope(client: Client) -> None:
    envelope = await call(client, "audit.query()")
    assert envelope["status"] == "failed"
    (result,) = envelope["results"]
    assert result["ok"] is False and result["verb"] == "audit.query"
    assert result["error"]["code"] == "permission_denied"
    assert "operator verb" in result["error"]["message"]


async def test_operator_verb_help_is_allowed(client: Client) -> None:
    envelope = await call(client, "audit.query(help=true)")
    assert envelope["status"] == "success"
    help_ = envelope["results"][0]["result"]
    assert help_["verb"] == "audit.query"
    assert help_["visibility"] == "operator"
    assert {"verb", "principal", "outcome", "since", "until", "limit"} <= set(help_["params"]["properties"])


async def test_operator_verb_denied_in_a_batch_does_not_stop_the_others(client: Client) -> None:
    envelope = await call(client, "[audit.query(), ping()]")
    assert envelope["status"] == "partial"
    assert [r["ok"] for r in envelope["results"]] == [False, True]


# --- presentation, request id, audit ------------------------------------------------------------

async def test_presentation_agent_drops_nulls_verbose_keeps_them(client: Client) -> None:
    default = await call(client, 'ping(echo={"a": null, "b": 1})')
    agent = await call(client, 'ping(echo={"a": null, "b": 1})', presentation="agent")
    verbose = await call(client, 'ping(echo={"a": null, "b": 1})', presentation="verbose")
    assert default["results"][0]["result"] == {"pong": True, "echo": {"b": 1}}
    assert agent["results"][0]["result"] == {"pong": True, "echo": {"b": 1}}
    assert verbose["results"][0]["result"] == {"pong": True, "echo": {"a": None, "b": 1}}


async def test_request_id_passes_through_to_envelope_and_audit(client: Client, project: Path) -> None:
    envelope = await call(client, "[ping(), verbs()]", request_id="req-42")
    assert envelope["requestId"] == "req-42"
    events = await audit_events(project, request_id="req-42")
    assert sorted((event.op_index, event.verb) for event in events) == [(0, "ping"), (1, "verbs")]


async def test_audit_records_transport_and_principal(client: Client, project: Path) -> None:
    envelope = await call(client, "[ping(echo=1), audit.query()]")
    events = await audit_events(project, request_id=envelope["requestId"])
    assert len(events) == 2
    for event in events:
        assert event.transport == "mcp-stdio"
        assert event.principal == f"agent:{os_user()}"  # never what the client calls itself
        assert event.client == CLIENT_NAME
    by_verb = {event.verb: event for event in events}
    assert (by_verb["ping"].decision, by_verb["ping"].outcome) == ("allow", "ok")
    assert (by_verb["audit.query"].decision, by_verb["audit.query"].outcome) == ("deny", "permission_denied")


# --- progress -----------------------------------------------------------------------------------

async def test_progress_notifications_reach_the_client(client: Client) -> None:
    received: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, total, message))

    result = await client.call_tool(TOOL_NAME, {"ops": "testpack.steps()"}, progress_callback=on_progress)
    assert result.structured_content is not None
    assert result.structured_content["results"] == [
        {"ok": True, "verb": "testpack.steps", "result": {"steps": 3}}]
    assert received == [(1, 3, "step"), (2, 3, "step"), (3, 3, "step")]


async def test_progress_without_a_callback_is_harmless(client: Client) -> None:
    envelope = await call(client, "testpack.steps(n=5)")
    assert envelope["results"][0]["result"] == {"steps": 5}


async def test_user_tier_is_the_person_the_server_runs_for(runtime: Any, project: Any) -> None:
    from mcp import Client

    from khive.mcp_server import build_server

    async with Client(build_server(runtime, user="ann")) as as_ann:
        envelope = await call(as_ann, 'wiki.write(key="my-notes", scope="user", summary="mine")')
    assert envelope["results"][0]["result"]["path"] == "wiki/users/ann/my-notes.md"
    assert (project / "wiki/users/ann/my-notes.md").is_file()
    async with Client(build_server(runtime)) as anonymous:  # no user: the principal's name
        envelope = await call(anonymous, 'wiki.write(key="my-notes", scope="user", summary="theirs")')
    assert envelope["results"][0]["result"]["path"].startswith("wiki/users/")
    assert envelope["results"][0]["result"]["path"] != "wiki/users/ann/my-notes.md"
