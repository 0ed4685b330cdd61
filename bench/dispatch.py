"""In-process dispatch overhead per op (gate + audit + presentation included) and the DSL parse figures.

Prints one JSON line. Baselines measured in the same run: the bare handler call (dispatch
overhead), a no-op audit store (audit share), and bench/parse.py's bare Lark parse.

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
from khive.project.config import KhiveConfig
from khive.project.layout import init_project
from khive.runtime import build_runtime

ROUNDS = 5


class NullAudit:
    async def append(self, events: Sequence[AuditEvent]) -> None:
        return None

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


def main() -> None:
    project = Path(tempfile.mkdtemp(prefix="khive-bench-"))
    init_project(project, "bench")
    runtime = build_runtime(project, KhiveConfig(), {})
    null_runtime = build_runtime(project, KhiveConfig(), {}, audit=NullAudit())
    batch10 = "[" + ", ".join(f'ping(echo="{i}")' for i in range(10)) + "]"

    async def measure() -> dict[str, Any]:
        single = await per_op_us(runtime, 'ping(echo="x")', 2000)
        batch = await per_op_us(runtime, batch10, 300)
        single_null = await per_op_us(null_runtime, 'ping(echo="x")', 2000)
        batch_null = await per_op_us(null_runtime, batch10, 300)
        bare = await bare_handler_us(runtime, 20000)
        await runtime.aclose()
        return {
            "single_op_us": round(single, 1),
            "batch10_per_op_us": round(batch, 1),
            "single_op_no_audit_us": round(single_null, 1),
            "batch10_per_op_no_audit_us": round(batch_null, 1),
            "bare_handler_us": round(bare, 2),
            "audit_share_single": round((single - single_null) / single, 3),
            "audit_share_batch10": round((batch - batch_null) / batch, 3),
            "goal_batch_per_op_us": 150,
            "meets_goal": batch <= 150,
        }

    figures = anyio.run(measure)
    # The parse figures come from bench/parse.py (run alone, so neither benchmark warms the other).
    parse_run = subprocess.run([sys.executable, str(Path(__file__).with_name("parse.py")), *sys.argv[1:]],
                               capture_output=True, text=True, check=True)
    print(orjson.dumps({"bench": "dispatch", "dispatch": figures, "parse": orjson.loads(parse_run.stdout)}).decode())


if __name__ == "__main__":
    main()
