"""Freshness benchmark: the inotify watcher's drain() against the stat-walk baseline.

    .venv/bin/python bench/freshness.py            # prints ONE JSON line
    .venv/bin/python bench/freshness.py --quick    # 2,000 files and fewer rounds, for a smoke test

Builds 20,000 files in 200 directories under a temp dir, starts a ``ChangeWatcher`` on it, then
measures in milliseconds (median of 50 rounds):

* ``drain_idle_ms``       ``drain()`` with nothing changed (goal: ``goal_idle_ms``);
* ``stat_walk_ms``        ``stat_walk()`` of the whole tree: the baseline, what every search would cost
                          without the watcher;
* ``drain_one_change_ms`` ``drain()`` right after one file was modified in place (the write is untimed);
* ``start_ms``            ``start()``: one watch per directory plus the listing (once per process).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from khive.index.scanstat import stat_walk
from khive.index.watch import ChangeWatcher

GOAL_IDLE_MS = 5
DIRS = 200


def median_ms(fn: Callable[[], object], rounds: int, setup: Callable[[int], object] | None = None) -> float:
    times = []
    for i in range(rounds):
        if setup is not None:
            setup(i)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 4)


def max_user_watches() -> int | None:
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return None


def main() -> None:
    quick = "--quick" in sys.argv
    files, rounds = (2_000, 10) if quick else (20_000, 50)
    with tempfile.TemporaryDirectory(prefix="khive-freshness-") as tmp:
        root = Path(tmp) / "wiki"
        paths = []
        for d in range(DIRS):
            directory = root / f"d{d:03d}"
            directory.mkdir(parents=True)
            for f in range(files // DIRS):
                path = directory / f"page{f:03d}.md"
                path.write_text(f"# page {d}/{f}\n")
                paths.append(path)

        watcher = ChangeWatcher([root])
        start = time.perf_counter()
        watcher.start()
        start_ms = round((time.perf_counter() - start) * 1000, 2)
        with watcher:
            if not watcher.available or watcher.drain() != set():
                raise SystemExit("inotify is not available here; nothing to measure")
            idle = median_ms(watcher.drain, rounds)
            walk = median_ms(lambda: stat_walk([root]), rounds)

            def touch(i: int) -> None:
                with open(paths[i * 397 % len(paths)], "ab") as handle:
                    handle.write(b"x")

            seen: list[set[Path] | None] = []
            one = median_ms(lambda: seen.append(watcher.drain()), rounds, touch)
            if any(s is None or len(s) != 1 for s in seen):
                raise SystemExit(f"drain after one change did not report exactly one path: {seen[:3]}")

    print(json.dumps({
        "bench": "freshness",
        "files": len(paths),
        "dirs": DIRS,
        "drain_idle_ms": idle,
        "stat_walk_ms": walk,
        "drain_one_change_ms": one,
        "start_ms": start_ms,
        "goal_idle_ms": GOAL_IDLE_MS,
        "idle_speedup": round(walk / idle) if idle else None,
        "max_user_watches": max_user_watches(),
        "quick": quick,
    }))


if __name__ == "__main__":
    main()
