"""A failure outside any op reaches an MCP client as an envelope (every op failed with a typed code),
never as a JSON-RPC error: not from the dispatcher, not from a result that cannot be encoded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp_helpers import CLIENT_NAME

from khive.bootstrap import open_runtime
from khive.context import Context
from khive.dsl.nodes import Request
from khive.hookspecs import PackInfo, hookimpl
from khive.mcp_server import INVALID_PARAMS, TOOL_NAME, build_server
from khive.runtime import Runtime
from khive.verbs import NoParams, Verb

pytestmark = pytest.mark.anyio


class NotJson:
    """Nothing can encode this: not even a text form exists (khive/values.py falls back to text)."""

    def __str__(self) -> str:
        raise RuntimeError("no text form")

    __repr__ = __str__


async def unencodable(params: NoParams, ctx: Context) -> dict[str, Any]:
    return {"value": NotJson()}


class FaultPack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="fault", version="0")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("fault.unencodable", NoParams, unencodable, "Answer with a value JSON cannot hold.")]


@pytest.fixture
async def faulty(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {}, extra_plugins=[FaultPack()])
    try:
        yield runtime
    finally:
        await runtime.aclose()


async def broken_dispatcher(request: Request, ctx: Context) -> dict[str, Any]:
    raise RuntimeError("the forwarder broke")


async def call(server: Any, mode: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async with Client(server, mode=mode, client_info=types.Implementation(name=CLIENT_NAME, version="0")) as client:
        return await client.call_tool(TOOL_NAME, arguments)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_failing_dispatcher_is_an_envelope_not_a_protocol_error(faulty: Runtime, mode: str) -> None:
    result = await call(build_server(faulty, dispatcher=broken_dispatcher), mode,
                        {"ops": "[ping(), verbs()]", "request_id": "mcp-broken"})
    envelope = result.structured_content
    assert envelope is not None and envelope["status"] == "failed" and envelope["requestId"] == "mcp-broken"
    for op in envelope["results"]:
        assert op["error"]["code"] == "internal_error" and op["error"]["details"]["stage"] == "mcp_server"
        assert "RuntimeError: the forwarder broke" in op["error"]["message"] and "mcp-broken" in op["error"]["message"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_result_that_cannot_be_encoded_is_a_typed_failure(faulty: Runtime, mode: str) -> None:
    result = await call(build_server(faulty), mode, {"ops": "[fault.unencodable(), ping()]"})
    envelope = result.structured_content
    assert envelope is not None
    first = envelope["results"][0]
    assert not first["ok"] and first["error"]["code"].replace("_", "").isalpha()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_request_id_that_is_not_unicode_is_invalid_params(faulty: Runtime, mode: str) -> None:
    async with Client(build_server(faulty), mode=mode,
                      client_info=types.Implementation(name=CLIENT_NAME, version="0")) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(TOOL_NAME, {"ops": "ping()", "request_id": "x\udcff"})
    assert raised.value.error.code == INVALID_PARAMS
