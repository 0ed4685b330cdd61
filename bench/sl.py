"""Semantic layer: ``sl.search`` over 2,000 generated sources against a bare FTS5 query, plus the compiler.

Prints one JSON line. The search baseline is an in-memory FTS5 table holding the same text per source
(name, descriptions, column and measure names, usage narrative), queried with the same OR-query and
``ORDER BY bm25 LIMIT 10``; both sides are timed interleaved, query by query. The compile figures come
from bench/sl_compile.py (run alone so neither warms the other).

    .venv/bin/python bench/sl.py [--quick]
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.index.search import fts_query
from khive.scaffold import init_project

WORDS = ("order customer revenue refund invoice payment shipment product category region store channel campaign "
         "session visit subscription churn cohort ledger account balance inventory warehouse supplier return "
         "discount coupon margin cost price tax fee currency country city segment tier plan trial signup").split()
GOAL_RATIO = 3.0


def source_yaml(rng: random.Random, index: int) -> tuple[str, str, str]:
    name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{index}"
    columns = [f"{rng.choice(WORDS)}_{rng.choice(('id', 'name', 'code', 'status', 'at'))}" for _ in range(8)]
    columns = list(dict.fromkeys(columns))
    measures = [f"total_{rng.choice(WORDS)}" for _ in range(3)]
    measures = [m for m in dict.fromkeys(measures) if m not in columns]
    description = " ".join(rng.choice(WORDS) for _ in range(14))
    narrative = " ".join(rng.choice(WORDS) for _ in range(10))
    lines = [f"name: {name}", f"table: main.{name}", "descriptions:", f"  db: {description}", "columns:"]
    lines += [f"  - name: {column}" for column in columns]
    lines += ["measures:"] + [f"  - {{name: {m}, agg: sum, expr: amount}}" for m in measures]
    lines += ["usage:", f"  narrative: {narrative}", "  frequencyTier: warm"]
    text = " ".join([name.replace("_", " "), description, *columns, *measures, narrative])
    return name, "\n".join(lines) + "\n", text


def main() -> None:
    quick = "--quick" in sys.argv
    count, queries_n = (300, 60) if quick else (2000, 200)
    rng = random.Random(11)
    root = Path(tempfile.mkdtemp(prefix="khive-bench-sl-"))
    init_project(root, "bench")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  wh:\n    driver: sqlite\n    path: wh.sqlite\n"))
    folder = root / "semantic-layer" / "wh"
    folder.mkdir(parents=True)
    bare = sqlite3.connect(":memory:")
    bare.execute("CREATE VIRTUAL TABLE t USING fts5 (name, body, tokenize = 'porter unicode61')")
    for i in range(count):
        name, text, flat = source_yaml(rng, i)
        (folder / f"{name}.yaml").write_text(text)
        bare.execute("INSERT INTO t VALUES (?, ?)", (name, flat))
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(queries_n)]
    runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan,sl"})
    started = time.perf_counter()
    runtime.index.refresh()
    build_s = time.perf_counter() - started

    async def measure() -> tuple[list[float], list[float], int]:
        ctx = Context(runtime, "operator:bench", CLI)
        requests = [parse(f'sl.search(query="{q}")') for q in queries]
        for request in requests[:20]:
            envelope = await dispatch(request, ctx)
            assert envelope["status"] == "success", envelope
        ours, base, hits = [], [], 0
        sql = "SELECT name FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
        for _ in range(3):
            for request, query in zip(requests, queries, strict=True):
                clock = time.perf_counter()
                envelope = await dispatch(request, ctx)
                ours.append(time.perf_counter() - clock)
                hits += envelope["results"][0]["result"].get("count", 0)
                match = fts_query(query)
                clock = time.perf_counter()
                bare.execute(sql, (match,)).fetchall()
                base.append(time.perf_counter() - clock)
        await runtime.aclose()
        return ours, base, hits

    ours, base, hits = anyio.run(measure)
    ours_p50, base_p50 = statistics.median(ours) * 1000, statistics.median(base) * 1000
    compile_run = subprocess.run([sys.executable, str(Path(__file__).with_name("sl_compile.py"))],
                                 capture_output=True, text=True, check=True)
    compiled: dict[str, Any] = json.loads(compile_run.stdout)
    print(json.dumps({
        "bench": "sl", "sources": count, "queries": len(queries), "index_build_s": round(build_s, 2),
        "avg_hits": round(hits / len(ours), 1), "sl_search_p50_ms": round(ours_p50, 3),
        "sl_search_p95_ms": round(sorted(ours)[int(len(ours) * 0.95)] * 1000, 3),
        "bare_fts_p50_ms": round(base_p50, 3), "ratio_vs_bare_fts": round(ours_p50 / base_p50, 2),
        "goal_ratio": GOAL_RATIO, "search_ok": ours_p50 / base_p50 <= GOAL_RATIO,
        "compile": {k: compiled[k] for k in ("compile_p50_ms", "compile_fresh_graph_p50_ms",
                                             "compile_fresh_graph_cpu_p95_ms", "goal_ms", "ok")},
        "quick": quick,
    }))


if __name__ == "__main__":
    main()
