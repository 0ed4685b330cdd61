"""Fixtures every pack's tests share; each pack's conftest provides its own ``runtime``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime


@pytest.fixture
def call(runtime: Runtime) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Run one op through the dispatcher; its result, or ``{"error": ...}`` when it failed."""

    async def call(text: str, principal: str = "operator:ann", **kwargs: Any) -> dict[str, Any]:
        envelope = await dispatch(parse(text), Context(runtime, principal, CLI, presentation="verbose", **kwargs))
        (result,) = envelope["results"]
        return dict(result["result"]) if result["ok"] else {"error": result["error"]}

    return call
