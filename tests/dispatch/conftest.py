from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from testpack import FixturePack

from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.project.config import KhiveConfig
from khive.runtime import Runtime, build_runtime
from khive.scaffold import init_project


@pytest.fixture
def make_runtime(tmp_path: Path) -> Callable[..., Runtime]:
    made: list[Runtime] = []

    def make(config: dict[str, Any] | None = None, plugin: object | None = None, **kwargs: Any) -> Runtime:
        init_project(tmp_path, "tester")
        runtime = build_runtime(tmp_path, KhiveConfig.model_validate(config or {}), {},
                                extra_plugins=[plugin or FixturePack()], **kwargs)
        made.append(runtime)
        return runtime

    yield make
    import anyio

    for runtime in made:
        anyio.run(runtime.aclose)


@pytest.fixture
async def runtime(make_runtime: Callable[..., Runtime]) -> AsyncIterator[Runtime]:
    yield make_runtime()


@pytest.fixture
def run(runtime: Runtime) -> Callable[..., Any]:
    async def run(text: str, principal: str = "operator:tester", transport: str = CLI, **kwargs: Any) -> dict[str, Any]:
        return await dispatch(parse(text), Context(runtime, principal, transport, **kwargs))

    return run
