"""The agent and sampling providers through the real MCP client (``mcp.Client`` in memory, both protocol eras).

``legacy`` speaks the handshake protocol, where the server pushes ``sampling/createMessage`` in the middle
of the tool call; ``auto`` speaks 2026-07-28, where the call answers ``input_required`` and the client
re-sends it with the samples. The sampling callback stands in for the client's LLM: it answers JSON built
from the prompt's input, the way a model would, or something invalid.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from ruamel.yaml import YAML

from khive.mcp_server import TOOL_NAME, build_server
from khive.runtime import Runtime

pytestmark = pytest.mark.anyio
Call = Callable[..., Awaitable[dict[str, Any]]]


async def request(client: Client, ops: str) -> dict[str, Any]:
    result = await client.call_tool(TOOL_NAME, {"ops": ops, "presentation": "verbose"})
    envelope = result.structured_content
    assert envelope is not None
    (entry,) = envelope["results"]
    return dict(entry["result"]) if entry["ok"] else {"error": entry["error"]}


def shard_usage(project: Path, table: str) -> dict[str, Any]:
    data = YAML(typ="safe").load((project / "_schema/tpch/tpch.main.yaml").read_text())
    usage: dict[str, Any] = data["tables"][table]["usage"]
    return usage


def model_answer(params: types.CreateMessageRequestParams) -> dict[str, Any]:
    """What a model asked for this prompt might answer: valid output over the input it was given."""
    text = params.messages[0].content.text  # type: ignore[union-attr]
    inputs = json.loads(text.rsplit("Input:\n", 1)[1])
    if "tableSets" in inputs:
        return {"patterns": [{"slug": "llm-" + "-".join(t.split(".")[-1] for t in s["tables"]),
                              "title": "LLM pattern", "narrative": "Analysts combine these tables.",
                              "definitionSql": s["templates"][0]["canonicalSql"], "tablesInvolved": s["tables"],
                              "slRefs": [], "constituentTemplateIds": [t["id"] for t in s["templates"]]}
                             for s in inputs["tableSets"]]}
    return {"narrative": f"LLM: {inputs['table']} is read every day.", "frequencyTier": "high",
            "commonFilters": [name for name, _ in inputs["staged"]["columnsByClause"].get("where", [])],
            "commonJoins": []}


def sampler(answer: Callable[[types.CreateMessageRequestParams], str], seen: list[str]) -> Any:
    async def sampling_callback(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.append(params.system_prompt or "")
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text=answer(params)))

    return sampling_callback


@pytest.fixture
async def ingested(call: Call) -> Call:
    assert "error" not in await call('scan.run(connection="tpch")')
    result = await call('historic_sql.ingest(connection="tpch", provider="agent")')
    assert result["workUnits"] == 5 and result["digests"] == {} and len(result["pendingUnits"]) == 5
    return call


async def test_agent_provider_round_trip_through_the_request_tool(ingested: Call, runtime: Runtime,
                                                                  project: Path) -> None:
    async with Client(build_server(runtime), mode="legacy") as client:
        listed = await request(client, 'historic_sql.units(connection="tpch")')
        assert listed["total"] == 5
        unit = next(u for u in listed["units"] if u["target"] == "main.orders")
        assert unit["outputSchema"]["title"] == "UsageOutput"
        assert "o_orderstatus" in unit["input"]["columns"]  # the scan's columns ride along
        bad = await request(client, f'historic_sql.submit(unit="{unit["unit"]}", output={{"narrative": ""}})')
        assert bad["error"]["code"] == "invalid_output"
        assert "frequencyTier: Field required" in bad["error"]["message"]
        output = json.dumps({"narrative": "Orders are counted by status every morning.", "frequencyTier": "high",
                             "commonFilters": ["o_orderdate"], "commonGroupBys": ["o_orderstatus"],
                             "commonJoins": [{"table": "main.customer", "on": ["o_custkey = c_custkey"]}]})
        done = await request(client, f'historic_sql.submit(unit="{unit["unit"]}", output={output})')
        assert done["stored"] and done["pendingUnits"] == 4
        again = await request(client, f'historic_sql.submit(unit="{unit["unit"]}", output={output})')
        assert again["error"]["code"] == "unit_not_pending" and "already digested" in again["error"]["message"]
        blocked = await request(client, 'historic_sql.ingest(connection="tpch")')
        assert blocked["error"]["code"] == "permission_denied"  # operator verbs stay off the wire
    assert shard_usage(project, "orders")["narrative"] == "Orders are counted by status every morning."
    usage = await ingested('historic_sql.usage(connection="tpch", table="orders")')
    assert usage["provider"] == "agent" and usage["current"]
    rerun = await ingested('historic_sql.ingest(connection="tpch", provider="agent")')
    assert rerun["workUnits"] == 4  # the submitted unit is done; the others still wait


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sampling_provider_uses_the_clients_llm(ingested: Call, runtime: Runtime, project: Path,
                                                      mode: str) -> None:
    seen: list[str] = []
    callback = sampler(lambda params: json.dumps(model_answer(params)), seen)
    async with Client(build_server(runtime), mode=mode, sampling_callback=callback) as client:
        assert (client.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")  # the round-trip form
        result = await request(client, 'historic_sql.digest(connection="tpch")')
    assert result["digests"] == {"sampling": 5} and result["rejected"] == [] and result["pendingUnits"] == []
    assert len(seen) == 5 and all("JSON" in prompt for prompt in seen)
    assert shard_usage(project, "orders")["narrative"] == "LLM: main.orders is read every day."
    slugs = result["projection"]["patterns"]["slugs"]
    assert slugs == ["llm-customer-nation-orders", "llm-lineitem-orders"]
    assert (project / "wiki/global/historic-sql/llm-lineitem-orders.md").is_file()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_invalid_sampling_output_is_rejected_with_the_reason(ingested: Call, runtime: Runtime,
                                                                   project: Path, mode: str) -> None:
    def answer(params: types.CreateMessageRequestParams) -> str:
        found = model_answer(params)
        if "patterns" in found:
            return "Sure! Here are some patterns: revenue, returns."
        return json.dumps({**found, "frequencyTier": "sometimes"})

    callback = sampler(answer, [])
    async with Client(build_server(runtime), mode=mode, sampling_callback=callback) as client:
        result = await request(client, 'historic_sql.digest(connection="tpch")')
    reasons = {r["unit"].split("/", 1)[1].split("@")[0]: r["reason"] for r in result["rejected"]}
    assert "frequencyTier: Input should be 'high', 'mid', 'low' or 'unused'" in reasons["table/main.orders"]
    assert "not JSON" in reasons["patterns"]
    assert result["digests"] == {"deterministic": 5}  # each rejected unit falls back to the deterministic digest
    assert shard_usage(project, "orders")["narrative"].startswith("orders is queried")


async def test_a_client_without_sampling_gets_deterministic_digests(ingested: Call, runtime: Runtime) -> None:
    async with Client(build_server(runtime), mode="legacy") as client:
        result = await request(client, 'historic_sql.digest(connection="tpch")')
    assert result["digests"] == {"deterministic": 5} and result["pendingUnits"] == []


async def test_digest_without_a_session_is_deterministic_and_ingest_waits_for_one(call: Call) -> None:
    assert "error" not in await call('scan.run(connection="tpch")')
    waiting = await call('historic_sql.ingest(connection="tpch", provider="sampling")')
    assert waiting["digests"] == {} and len(waiting["pendingUnits"]) == 5  # the CLI has no client LLM to ask
    done = await call('historic_sql.digest(connection="tpch")')  # e.g. forwarded to the daemon: no session
    assert done["digests"] == {"deterministic": 5} and done["pendingUnits"] == []
