"""An agent's first calls over the real MCP client: search, then look up the best ref with ``$prev``."""

from __future__ import annotations

import pytest
from discover_project import Call
from mcp import Client

from khive.mcp_server import TOOL_NAME, build_server
from khive.runtime import Runtime

pytestmark = pytest.mark.anyio


async def test_search_then_lookup_through_mcp(scanned: Call, runtime: Runtime) -> None:
    ops = ('discover.search(query="shipment carrier", kinds=["table"], limit=3) | '
           'discover.lookup(id=$prev.refs[0].docId, budget_tokens=2000)')
    async with Client(build_server(runtime, user="ann")) as client:
        result = await client.call_tool(TOOL_NAME, {"ops": ops})
    envelope = result.structured_content
    assert envelope is not None and envelope["status"] == "success", envelope
    search, lookup = (item["result"] for item in envelope["results"])
    assert search["refs"][0]["id"] == "main.shipments"
    assert lookup["entity"]["docId"] == "table:shop:main.shipments" and lookup["budget"]["fits"]
