from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.project.layout import init_project
from khive.runtime import Runtime


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_project(tmp_path / "proj", "ann")
    return tmp_path / "proj"


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {"KHIVE_PACKS": "core,wiki"})
    yield runtime
    await runtime.aclose()


@pytest.fixture
def call(runtime: Runtime) -> Callable[..., Any]:
    """Run one op and return its result (or its error envelope when ok is false)."""

    async def call(text: str, principal: str = "operator:ann", **kwargs: Any) -> dict[str, Any]:
        envelope = await dispatch(parse(text), Context(runtime, principal, CLI, presentation="verbose", **kwargs))
        (result,) = envelope["results"]
        return dict(result["result"]) if result["ok"] else {"error": result["error"]}

    return call
