"""Fixtures for the MCP server tests: a real project, a real runtime, real subprocesses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp_helpers import CLIENT_NAME, ProgressPack, ServeProcess, start_serve

from khive.bootstrap import open_runtime
from khive.mcp_server import build_server
from khive.runtime import Runtime
from khive.scaffold import init_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    init_project(root, "tester")
    return root


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    """The project's runtime plus the in-process ``testpack`` (one verb that reports progress)."""
    runtime = open_runtime(project, {}, extra_plugins=[ProgressPack()])
    try:
        yield runtime
    finally:
        await runtime.aclose()


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest, runtime: Runtime) -> AsyncIterator[Client]:
    """In memory: ``auto`` drives the SDK's modern direct path, ``legacy`` JSON-RPC streams + initialize."""
    async with Client(build_server(runtime), mode=request.param,
                      client_info=types.Implementation(name=CLIENT_NAME, version="0")) as client:
        yield client


@pytest.fixture
def khive_serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """``khive_serve(project, *args, env=...)`` starts ``khive serve --http``; all stop at teardown."""
    started: list[ServeProcess] = []

    def start(project: Path, *args: str, env: Mapping[str, str]) -> ServeProcess:
        server = start_serve(project, *args, env=env, log_dir=tmp_path)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
