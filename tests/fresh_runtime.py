"""One op as a new CLI process runs it: a runtime of its own, nothing cached, the operator asking."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse


async def op_in_fresh_runtime(project: Path, text: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The result of the single op ``text``, which must succeed."""
    runtime = open_runtime(project, dict(env or {}))
    try:
        envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    finally:
        await runtime.aclose()
    (result,) = envelope["results"]
    assert result["ok"], result
    return dict(result["result"])
