"""In-process dispatch overhead per op (gate + write-ahead audit + presentation included) and the DSL
parse figures.

Prints one JSON line. Baselines measured in the same run: the bare handler call (dispatch
overhead and its ratio), a no-op audit store (audit share), and bench/parse.py's bare Lark parse.
Cases: a single op (a start and an outcome transaction), a batch of 10 and a batch of 100 (one
start transaction for the batch, one outcome transaction per op), a chain of 10 (a start and an
outcome transaction per op).
``threading`` compares the same trivial handler declared as a plain ``def`` (run in a worker thread,
ADR 0027) and as an ``async def`` (run on the loop), and the bare thread hop.

    .venv/bin/python bench/dispatch.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

from khive.audit.events import AuditEvent
from khive.audit.store import AuditQuery
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.hookspecs import PackInfo, hookimpl
from khive.project.config import KhiveConfig
from khive.runtime import build_runtime
from khive.scaffold import init_project
from khive.threads import run_blocking
from khive.verbs import Params, Verb

ROUNDS = 5


class NullAudit:
    async def write(self, *, starts: Sequence[AuditEvent] = (), events: Sequence[AuditEvent] = (),
                    outcomes: Sequence[AuditEvent] = ()) -> None:
        return None

    async def append(self, events: Sequence[AuditEvent]) -> None:
        return None

    async def recover(self) -> int:
        return 0

    async def query(self, query: AuditQuery) -> list[AuditEvent]:
        return []

    async def count(self) -> int:
        return 0

    async def aclose(self) -> None:
        return None


async def per_op_us(runtime: Any, text: str, iterations: int) -> float:
    request = parse(text)
    ctx = Context(runtime, "operator:bench", CLI)
    for _ in range(50):
        await dispatch(request, ctx)
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        for _ in range(iterations):
            await dispatch(request, ctx)
        samples.append((time.perf_counter_ns() - started) / iterations / len(request.ops) / 1000)
    return statistics.median(samples)


async def bare_handler_us(runtime: Any, iterations: int) -> float:
    verb = runtime.registry.resolve("ping")
    params = verb.params.model_validate({})
    ctx = Context(runtime, "operator:bench", CLI)
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        for _ in range(iterations):
            await verb.handler(params, ctx)
        samples.append((time.perf_counter_ns() - started) / iterations / 1000)
    return statistics.median(samples)


class EchoParams(Params):
    echo: Any = None


def plain_echo(params: EchoParams, ctx: Context) -> dict[str, Any]:
    return {"echo": params.echo}


async def inline_echo(params: EchoParams, ctx: Context) -> dict[str, Any]:
    return {"echo": params.echo}


class HopPack:
    """The same trivial handler as a plain def (a worker thread runs it) and as an async def (the loop does)."""

    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="hop", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("hop.plain", EchoParams, plain_echo, "plain"),
                Verb("hop.inline", EchoParams, inline_echo, "async")]


async def thread_hop_us(iterations: int) -> dict[str, float]:
    """``await run_blocking(f)`` against calling ``f()`` directly."""
    def noop() -> None:
        return None

    hops, direct = [], []
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        for _ in range(iterations):
            await run_blocking(noop)
        hops.append((time.perf_counter_ns() - started) / iterations / 1000)
        started = time.perf_counter_ns()
        for _ in range(iterations):
            noop()
        direct.append((time.perf_counter_ns() - started) / iterations / 1000)
    return {"run_blocking_us": round(statistics.median(hops), 1), "direct_call_us": round(statistics.median(direct), 2)}


async def threading_figures(runtime: Any) -> dict[str, Any]:
    batch = "[" + ", ".join(f'hop.{{kind}}(echo="{i}")' for i in range(10)) + "]"
    plain = await per_op_us(runtime, 'hop.plain(echo="x")', 2000)
    inline = await per_op_us(runtime, 'hop.inline(echo="x")', 2000)
    plain_batch = await per_op_us(runtime, batch.format(kind="plain"), 300)
    inline_batch = await per_op_us(runtime, batch.format(kind="inline"), 300)
    return {"plain_def_single_op_us": round(plain, 1), "async_def_single_op_us": round(inline, 1),
            "plain_def_batch10_per_op_us": round(plain_batch, 1), "async_def_batch10_per_op_us": round(inline_batch, 1),
            "ratio_single": round(plain / inline, 2), "ratio_batch10": round(plain_batch / inline_batch, 2),
            **await thread_hop_us(5000)}


def main() -> None:
    project = Path(tempfile.mkdtemp(prefix="khive-bench-"))
    init_project(project, "bench")
    runtime = build_runtime(project, KhiveConfig(), {})
    null_runtime = build_runtime(project, KhiveConfig(), {}, audit=NullAudit())
    hop_runtime = build_runtime(project, KhiveConfig(), {}, audit=NullAudit(), extra_plugins=[HopPack()])
    cases = {"single": ('ping(echo="x")', 2000),
             "batch10": ("[" + ", ".join(f'ping(echo="{i}")' for i in range(10)) + "]", 300),
             "batch100": ("[" + ", ".join(f'ping(echo="{i}")' for i in range(100)) + "]", 30),
             "chain10": (" | ".join('ping(echo="c")' for _ in range(10)), 200)}

    async def measure() -> dict[str, Any]:
        figures: dict[str, Any] = {}
        bare = await bare_handler_us(runtime, 20000)
        for name, (text, iterations) in cases.items():
            ours = await per_op_us(runtime, text, iterations)
            null = await per_op_us(null_runtime, text, iterations)
            figures[f"{name}_per_op_us"] = round(ours, 1)
            figures[f"{name}_per_op_no_audit_us"] = round(null, 1)
            figures[f"{name}_audit_share"] = round((ours - null) / ours, 3)
            figures[f"{name}_ratio_to_bare_handler"] = round(ours / bare, 1)
        figures["threading"] = await threading_figures(hop_runtime)
        await runtime.aclose()
        figures["bare_handler_us"] = round(bare, 2)
        figures["goal_batch_per_op_us"] = 150
        figures["meets_goal"] = max(figures["batch10_per_op_us"], figures["batch100_per_op_us"]) <= 150
        return figures

    figures = anyio.run(measure)
    # The parse figures come from bench/parse.py (run alone, so neither benchmark warms the other).
    parse_run = subprocess.run([sys.executable, str(Path(__file__).with_name("parse.py")), *sys.argv[1:]],
                               capture_output=True, text=True, check=True)
    print(orjson.dumps({"bench": "dispatch", "dispatch": figures, "parse": orjson.loads(parse_run.stdout)}).decode())


if __name__ == "__main__":
    main()
