"""One call of khive's ``request`` tool through an in-process MCP client: what an agent's call goes through."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from khive.bootstrap import open_runtime
from khive.mcp_server import TOOL_NAME, build_server


def request_over_mcp(project: Path, ops: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The result entry of the single op in ``ops``, asked over MCP of a runtime on ``project`` with ``env``."""

    async def run() -> dict[str, Any]:
        runtime = open_runtime(project, dict(env or {}))
        try:
            async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as c:
                answer = await c.call_tool(TOOL_NAME, {"ops": ops, "presentation": "verbose"})
        finally:
            await runtime.aclose()
        envelope = answer.structured_content
        assert envelope is not None
        (result,) = envelope["results"]
        return dict(result)

    return anyio.run(run)
