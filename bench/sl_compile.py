"""Semantic-layer compiler benchmark: a 3-join query over ~50 sources, against sqlglot's own transpile.

    .venv/bin/python bench/sl_compile.py     # prints ONE JSON line

Builds 50 sources in code (10 facts, each many_to_one to 4 of 30 dimensions, each dimension
many_to_one to one of 10 sub-dimensions) and compiles four measures of one fact (sum, count,
avg, derived) by three dimensions with a filter: joins fact -> dim_0 -> sub_0 and fact -> dim_1.
Reports p50/p95 of ``compile_query`` with warm caches (a caller that keeps its Source objects: the
join graph and parsed expressions are reused), again with the join graph rebuilt every call (a
caller that reloads sources, as the verbs do), one cold compile (all caches cleared), and as a
baseline p50/p95 of ``sqlglot.transpile`` of the resulting SQL (parse + generate in the same
dialect). Each figure is wall-clock p50/p95 plus thread-CPU p95: on a shared machine the wall-clock
tail measures the neighbours, so the goal is judged on CPU time: compile p95 <= 5 ms, both ways.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import sqlglot

from packs.sl.compiler import compile_query
from packs.sl.compiler.graph import _CACHE as GRAPH_CACHE
from packs.sl.compiler.model import _parsed
from packs.sl.models import Source

GOAL_MS = 5.0
RUNS = 400
DIALECT = "postgres"


def sources() -> dict[str, Source]:
    found: list[dict[str, Any]] = []
    for i in range(10):
        found.append({
            "name": f"fact_{i}", "table": f"warehouse.fact_{i}", "grain": ["id"],
            "columns": [{"name": "id", "type": "number"}, {"name": "created_at", "type": "time"}],
            "measures": [{"name": "revenue", "agg": "sum", "expr": "amount"},
                         {"name": "n", "agg": "count"},
                         {"name": "avg_amount", "agg": "avg", "expr": "amount"},
                         {"name": "per_row", "agg": "derived", "expr": "revenue / n"}],
            "joins": [{"to": f"dim_{(3 * i + t) % 30}", "on": [{"from": f"dim_{(3 * i + t) % 30}_id", "to": "id"}]}
                      for t in range(4)]})
    for j in range(30):
        found.append({"name": f"dim_{j}", "table": f"warehouse.dim_{j}", "grain": ["id"],
                      "columns": [{"name": "id", "type": "number"}, {"name": "label"}, {"name": "kind"}],
                      "joins": [{"to": f"sub_{j % 10}", "on": [{"from": "sub_id", "to": "id"}]}]})
    for k in range(10):
        found.append({"name": f"sub_{k}", "table": f"warehouse.sub_{k}", "grain": ["id"],
                      "columns": [{"name": "id", "type": "number"}, {"name": "title"}]})
    return {data["name"]: Source.model_validate(data) for data in found}


QUERY: dict[str, Any] = {
    "measures": ["fact_0.revenue", "fact_0.n", "fact_0.avg_amount", "fact_0.per_row"],
    "dimensions": ["dim_0.label", "sub_0.title", "dim_1.kind"],
    "filters": ["dim_1.kind <> 'test'"],
    "order_by": ["revenue desc"],
    "limit": 100,
}


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return round(statistics.median(ordered), 3), round(ordered[int(len(ordered) * 0.95) - 1], 3)


class Timer:
    """Wall-clock and thread CPU milliseconds of repeated calls."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, call: Callable[[], object]) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        call()
        self.cpu.append((time.thread_time() - cpu) * 1000)
        self.wall.append((time.perf_counter() - wall) * 1000)

    def report(self, name: str) -> dict[str, float]:
        (p50, p95), (_, cpu95) = percentiles(self.wall), percentiles(self.cpu)
        return {f"{name}_p50_ms": p50, f"{name}_p95_ms": p95, f"{name}_cpu_p95_ms": cpu95}


def main() -> None:
    catalog = sources()
    _parsed.cache_clear()
    GRAPH_CACHE.clear()
    started = time.perf_counter()
    result = compile_query(catalog, dialect=DIALECT, **QUERY)
    cold_ms = (time.perf_counter() - started) * 1000
    assert len(result.plan["joins"]) == 3, result.plan["joins"]
    warm, fresh_graph, transpile = Timer(), Timer(), Timer()
    for _ in range(RUNS):
        warm.time(lambda: compile_query(catalog, dialect=DIALECT, **QUERY))
        GRAPH_CACHE.clear()
        fresh_graph.time(lambda: compile_query(catalog, dialect=DIALECT, **QUERY))
        transpile.time(lambda: sqlglot.transpile(result.sql, read=DIALECT, write=DIALECT, pretty=True))
    figures = {**warm.report("compile"), **fresh_graph.report("compile_fresh_graph"),
               "compile_cold_ms": round(cold_ms, 3), **transpile.report("transpile_baseline")}
    ok = max(figures["compile_cpu_p95_ms"], figures["compile_fresh_graph_cpu_p95_ms"]) <= GOAL_MS
    print(json.dumps({"bench": "sl_compile", "sources": len(catalog), "joins": len(result.plan["joins"]),
                      "dialect": DIALECT, "runs": RUNS, **figures, "goal_ms": GOAL_MS, "ok": ok}))


if __name__ == "__main__":
    main()
