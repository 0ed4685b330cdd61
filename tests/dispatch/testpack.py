"""A pack used only by tests: verbs that fail, crash, sleep, claim write keys, nest deeply, report progress."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import Field

from khive.context import Context
from khive.errors import OpError
from khive.hookspecs import PackInfo, SchemaPlan, hookimpl
from khive.verbs import Params, Verb, Visibility


class EchoParams(Params):
    x: Any = None
    y: Any = None


async def echo(params: EchoParams, ctx: Context) -> dict[str, Any]:
    return {"x": params.x, "y": params.y, "principal": ctx.principal}


class FailParams(Params):
    message: str = "it failed"


async def fail(params: FailParams, ctx: Context) -> None:
    raise OpError(params.message, code="boom", details={"why": None})


async def crash(params: FailParams, ctx: Context) -> None:
    raise RuntimeError(params.message)


class SlowParams(Params):
    ms: int = Field(default=50, ge=0, le=5000)


class Concurrency:
    running = 0
    peak = 0


async def slow(params: SlowParams, ctx: Context) -> dict[str, int]:
    Concurrency.running += 1
    Concurrency.peak = max(Concurrency.peak, Concurrency.running)
    try:
        await anyio.sleep(params.ms / 1000)
    finally:
        Concurrency.running -= 1
    return {"slept_ms": params.ms}


class WriteParams(Params):
    key: str


async def write(params: WriteParams, ctx: Context) -> dict[str, str]:
    return {"written": params.key}


class DeepParams(Params):
    depth: int = Field(ge=1, le=1_000_000)


async def deep(params: DeepParams, ctx: Context) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(params.depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


async def scores(params: EchoParams, ctx: Context) -> dict[str, Any]:
    return {"score": 0.123456789, "rank_score": 12345.678, "amount": 0.123456789,
            "ts": "2026-11-29T15:28:26.123456+00:00", "none": None, "empty": [], "blank": "",
            "rows": [[1, None], [None, 2]], "nested": {"gone": None, "kept": 0}}


class StepsParams(Params):
    n: int = 3


async def steps(params: StepsParams, ctx: Context) -> dict[str, int]:
    for index in range(1, params.n + 1):
        await ctx.progress(index, params.n, f"step {index}")
    return {"steps": params.n}


def broken_keys(params: Any) -> list[str]:
    raise RuntimeError("write-key rule bug")


VERBS = [
    Verb("t.echo", EchoParams, echo, "Echo x and y."),
    Verb("t.fail", FailParams, fail, "Fail with an OpError."),
    Verb("t.crash", FailParams, crash, "Raise a bare exception (a pack bug)."),
    Verb("t.slow", SlowParams, slow, "Sleep, tracking concurrency."),
    Verb("t.write", WriteParams, write, "Claim a write key.", write_keys=lambda p: [f"test:{p.key}"],
         write_key_rule="test:<key>", read_only=False),
    Verb("t.deep", DeepParams, deep, "Return a list nested depth levels."),
    Verb("t.scores", EchoParams, scores, "Scores, timestamps and empties."),
    Verb("t.verbose", EchoParams, scores, "Always verbose.", always_verbose=True),
    Verb("t.admin", EchoParams, echo, "An operator verb.", visibility=Visibility.OPERATOR),
    Verb("t.steps", StepsParams, steps, "Report progress n times."),
    Verb("t.badkeys", EchoParams, echo, "A write-key rule that raises (a pack bug).", write_keys=broken_keys,
         read_only=False),
]


class FixturePack:
    """Registered as an extra plugin by the fixtures."""

    def __init__(self, requires: tuple[str, ...] = (), schema_sql: str = "CREATE TABLE IF NOT EXISTS t (x)"):
        self.requires = requires
        self.schema_sql = schema_sql

    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="t", version="1.0", requires=self.requires)

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return VERBS

    @hookimpl
    def khive_schema_plans(self) -> list[SchemaPlan]:
        return [SchemaPlan("t-tables", (self.schema_sql,))]
