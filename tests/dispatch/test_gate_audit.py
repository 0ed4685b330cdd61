"""Authorization gate decisions and the audit events every op leaves behind."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest

from khive.audit.store import AuditQuery
from khive.context import CLI, MCP_HTTP, MCP_STDIO, Context
from khive.dispatch import dispatch
from khive.dsl import parse

pytestmark = pytest.mark.anyio


async def test_operator_verb_blocked_on_the_wire_but_help_allowed(run: Any) -> None:
    for transport in (MCP_STDIO, MCP_HTTP):
        denied = await run("t.admin()", principal="agent:x", transport=transport)
        error = denied["results"][0]["error"]
        assert error["code"] == "permission_denied"
        assert "operator verb" in error["message"]
        helped = await run("t.admin(help=true)", principal="agent:x", transport=transport)
        assert helped["results"][0]["result"]["visibility"] == "operator"
    assert (await run("t.admin(x=1)", transport=CLI))["status"] == "success"


async def test_deny_rule_wins_over_allow_and_carries_reason(make_runtime: Any) -> None:
    runtime = make_runtime({"auth": {"rules": [
        {"effect": "allow", "verb": "t.*"},
        {"effect": "deny", "principal": "agent:*", "verb": "t.write", "reason": "agents cannot write here"},
    ]}})
    ctx = Context(runtime, "agent:claude", MCP_STDIO)
    envelope = await dispatch(parse('[t.write(key="k"), t.echo()]'), ctx)
    assert envelope["results"][0]["error"]["code"] == "permission_denied"
    assert envelope["results"][0]["error"]["details"]["reason"] == "agents cannot write here"
    assert envelope["results"][1]["ok"] is True
    # the same verb from another principal is allowed
    ok = await dispatch(parse('t.write(key="k")'), Context(runtime, "operator:me", CLI))
    assert ok["status"] == "success"
    events = await runtime.audit.query(AuditQuery(verb="t.write", outcome="permission_denied"))
    assert len(events) == 1
    assert events[0].decision == "deny" and events[0].reason == "agents cannot write here"
    assert events[0].principal == "agent:claude" and events[0].transport == MCP_STDIO


async def test_default_deny_needs_an_allow_rule(make_runtime: Any) -> None:
    runtime = make_runtime({"auth": {"default": "deny", "rules": [{"effect": "allow", "verb": "ping"}]}})
    ctx = Context(runtime, "agent:a", MCP_STDIO)
    envelope = await dispatch(parse("[ping(), t.echo()]"), ctx)
    assert envelope["results"][0]["ok"] is True
    assert "auth.default is deny" in envelope["results"][1]["error"]["message"]


async def test_allow_rule_can_open_an_operator_verb_for_a_principal(make_runtime: Any) -> None:
    runtime = make_runtime({"auth": {"rules": [
        {"effect": "allow", "principal": "agent:admin-bot", "transport": "mcp-http", "verb": "t.admin"}]}})
    allowed = await dispatch(parse("t.admin()"), Context(runtime, "agent:admin-bot", MCP_HTTP))
    denied = await dispatch(parse("t.admin()"), Context(runtime, "agent:other", MCP_HTTP))
    assert allowed["status"] == "success" and denied["status"] == "failed"


async def test_every_op_is_audited_with_outcome_and_digest(run: Any, runtime: Any) -> None:
    envelope = await run('t.echo(x={"password": "hunter2", "url": "postgres://u:pw@h/db"}) | t.fail() | t.echo()',
                         request_id="audit-1")
    assert envelope["summary"]["aborted"] == 1
    events = sorted(await runtime.audit.query(AuditQuery(request_id="audit-1")), key=lambda e: e.op_index)
    assert [e.outcome for e in events] == ["ok", "boom", "aborted"]
    assert [e.decision for e in events] == ["allow", "allow", "not-evaluated"]
    assert events[0].args_redacted == {"x": {"password": "[redacted: secret-name]",
                                              "url": "postgres://u:[redacted: url-password]@h/db"}}
    assert len(events[0].args_digest) == 32
    assert events[2].reason.startswith("aborted")
    assert all(e.request_id == "audit-1" for e in events)
    assert events[0].duration_us >= 0


async def test_write_keys_are_audited(run: Any, runtime: Any) -> None:
    await run('[t.write(key="a"), t.write(key="a")]', request_id="wk")
    events = sorted(await runtime.audit.query(AuditQuery(request_id="wk")), key=lambda e: e.op_index)
    assert events[0].write_keys == ("test:a",)
    assert events[1].outcome == "write_conflict"


async def test_audit_counts_equal_ops_under_50_concurrent_requests(runtime: Any) -> None:
    rng = random.Random(7)
    shapes = ["ping()", "[t.echo(), t.fail(), t.slow(ms=5)]", "t.echo() | t.fail() | t.echo() | t.echo()",
              "t.admin()", '[t.write(key="a"), t.write(key="a"), nope()]', "t.deep(depth=500)"]
    texts = [rng.choice(shapes) for _ in range(50)]
    expected_ops = sum(len(parse(text).ops) for text in texts)
    before = await runtime.audit.count()
    envelopes: list[dict[str, Any]] = []

    async def one(index: int, text: str) -> None:
        transport = MCP_STDIO if index % 2 else CLI
        envelopes.append(await dispatch(parse(text), Context(runtime, f"p{index}", transport)))

    async with anyio.create_task_group() as group:
        for index, text in enumerate(texts):
            group.start_soon(one, index, text)
    assert len(envelopes) == 50
    assert sum(e["summary"]["total"] for e in envelopes) == expected_ops
    assert await runtime.audit.count() - before == expected_ops
    events = await runtime.audit.query(AuditQuery(limit=10_000))
    per_request: dict[str, set[int]] = {}
    for event in events:
        per_request.setdefault(event.request_id, set()).add(event.op_index)
    for envelope in envelopes:
        assert per_request[envelope["requestId"]] == set(range(envelope["summary"]["total"]))


async def test_audit_query_verb_filters(run: Any) -> None:
    await run("[ping(), t.echo(), t.fail()]")
    result = (await run('audit.query(verb="t.*", outcome="boom")'))["results"][0]["result"]
    assert result["count"] >= 1
    assert {event["verb"] for event in result["events"]} == {"t.fail"}
    assert (await run("audit.query(limit=0)"))["results"][0]["error"]["code"] == "invalid_args"
