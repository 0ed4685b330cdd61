"""The index build from nothing in one process against the same build writing through a second (ADR 0055, 0056).

    .venv/bin/python bench/bigproject.py --tables 10000 --until-first-search --keep /tmp/big   # a scanned project
    .venv/bin/python bench/buildsplit.py /tmp/big --pairs 3    # alternating runs: in process, then with a child

PROJECT is a project already scanned; its ``.khive/index.sqlite`` is deleted before every run. Each run is a fresh
interpreter that opens the runtime and builds the index from nothing with ``refresh()`` (as ``bench/bigproject.py``'s
``index_build``), one of two ways, the project's configuration otherwise as it is:

- ``inline``: ``index.build_process`` off, every row written by the index's own connection;
- ``child``: ``khive.index.buildprocess``, the writes made by a child process while this one makes the next rows
  (the minimum size set to 0 and no load limit, so it is taken whatever the project's size and the load).

One JSON line per run: wall and CPU seconds of the build (the parent's, and the child's from ``RUSAGE_CHILDREN``),
the load average, and ``khive.index.store.rows_digest`` of the index built, which must be equal between the two
ways. A last line sums the pairs.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
WAYS = ("inline", "child")


def one_run(project: Path, way: str) -> dict[str, Any]:
    import anyio

    from khive.bootstrap import open_runtime
    from khive.index.buildprocess import BuildProcess
    from khive.index.store import rows_digest

    index = project / ".khive" / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    runtime = open_runtime(project, {"WH_URL": "postgresql://bench@nowhere/bench"})
    runtime.index.build_process = BuildProcess(min_bytes=0, max_load=math.inf) if way == "child" else None
    cpu, wall = time.process_time(), time.perf_counter()
    report = runtime.index.refresh()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    digest = rows_digest(runtime.index.db)
    anyio.run(runtime.aclose)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"way": way, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "child_cpu_s": round(children.ru_utime + children.ru_stime, 3), "files": report.reindexed,
            "load": round(os.getloadavg()[0], 2), "rows_sha256": digest}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--one", choices=WAYS)
    args = parser.parse_args(argv)
    if args.one:
        print(orjson.dumps(one_run(args.project.resolve(), args.one)).decode(), flush=True)
        return
    runs: list[dict[str, Any]] = []
    for _ in range(args.pairs):
        for way in WAYS:
            done = subprocess.run([sys.executable, __file__, str(args.project), "--one", way], cwd=ROOT,
                                  check=True, capture_output=True, text=True)
            line = done.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            runs.append(orjson.loads(line))
    total = {way: sum(run["wall_s"] for run in runs if run["way"] == way) for way in WAYS}
    cpu = {way: sum(run["cpu_s"] + run["child_cpu_s"] for run in runs if run["way"] == way) for way in WAYS}
    print(orjson.dumps({"pairs": args.pairs, "wall_inline_s": round(total["inline"], 2),
                        "wall_child_s": round(total["child"], 2),
                        "child_vs_inline": round(total["child"] / total["inline"], 3) if total["inline"] else None,
                        "cpu_inline_s": round(cpu["inline"], 2), "cpu_child_s": round(cpu["child"], 2),
                        "same_rows": len({run["rows_sha256"] for run in runs}) == 1}).decode())


if __name__ == "__main__":
    main()
