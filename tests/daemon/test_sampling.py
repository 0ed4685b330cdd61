"""MCP sampling for handlers that run in the daemon: the caller's client answers, in both protocol forms."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from daemon_helpers import Daemon
from mcp import Client

from khive.bootstrap import open_runtime
from khive.daemon.paths import settings_from_env
from khive.mcp_server import build_server, forwarding_dispatcher
from khive.runtime import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
async def runtime(daemon: Daemon, project: Path) -> AsyncIterator[Runtime]:
    started = daemon.khive("daemon", "start", cwd=project)
    assert started.returncode == 0, started.stderr
    runtime = open_runtime(project, daemon.env)
    try:
        yield runtime
    finally:
        await runtime.aclose()


async def model(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    prompt = params.messages[0].content.text  # type: ignore[union-attr]
    return types.CreateMessageResult(role="assistant", model="test-model",
                                     content=types.TextContent(type="text", text=f"model says: {prompt}"))


def forwarding_server(runtime: Runtime, daemon: Daemon) -> Any:
    dispatcher = forwarding_dispatcher(runtime.project, daemon.env, settings_from_env(daemon.env))
    return build_server(runtime, dispatcher=dispatcher)


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # push (sampling/createMessage) and the round-trip form
async def test_a_handler_in_the_daemon_samples_through_the_callers_client(runtime: Runtime, daemon: Daemon,
                                                                         mode: str) -> None:
    async with Client(forwarding_server(runtime, daemon), mode=mode, sampling_callback=model) as client:
        result = await client.call_tool("request", {"ops": 'd.sample(prompt="hello")'})
    envelope = result.structured_content
    assert envelope is not None, result
    answer = envelope["results"][0]["result"]
    assert answer == {"sampler": True, "available": True, "text": "model says: hello", "pid": daemon.pid()}


async def test_a_client_without_sampling_is_reported_as_such(runtime: Runtime, daemon: Daemon) -> None:
    async with Client(forwarding_server(runtime, daemon), mode="legacy") as client:
        result = await client.call_tool("request", {"ops": 'd.sample(prompt="hello")'})
    answer = result.structured_content["results"][0]["result"]  # type: ignore[index]
    assert answer == {"sampler": True, "available": False, "pid": daemon.pid()}


async def test_cli_requests_carry_no_sampler(daemon: Daemon, project: Path) -> None:
    import json

    done = daemon.khive("request", 'd.sample(prompt="x")', cwd=project)
    assert json.loads(done.stdout)["results"][0]["result"] == {"sampler": False, "pid": daemon.pid()}
