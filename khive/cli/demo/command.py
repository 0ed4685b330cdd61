"""``khive demo [DIR]``: the CLI side of the demo (reads the environment, starts the daemon as a subprocess)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

DEFAULT_DIR = "khive-demo"
DAEMON_START_TIMEOUT_S = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=None, help=f"where to build it (default: ./{DEFAULT_DIR})")
    parser.add_argument("--no-daemon", action="store_true", help="do not start the warm daemon at the end")


def start_daemon(root: Path) -> Callable[[], str]:
    """Spawn ``khive daemon start`` for the demo project (as a person would run it); the result waits for it.

    The daemon warms up while the demo shows its requests, so the two overlap instead of adding up.
    """
    command = [sys.executable, "-m", "khive.cli", "--project", str(root), "daemon", "start"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               text=True)

    def wait() -> str:
        try:
            out, err = process.communicate(timeout=DAEMON_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return f"skipped: khive daemon start did not answer within {DAEMON_START_TIMEOUT_S}s"
        if process.returncode == 2 and "invalid choice" in err:
            return "skipped: khive daemon not installed"
        if process.returncode != 0:
            return f"skipped: khive daemon start failed: {(err or out).strip()[:200]}"
        return (out.strip().splitlines() or ["started"])[-1].removeprefix("khive ")

    return wait


def handler(args: argparse.Namespace) -> int:
    import anyio

    from khive.cli.demo.run import run_demo

    target = Path(args.dir or args.project or DEFAULT_DIR)
    no_daemon = args.no_daemon or os.environ.get("KHIVE_NO_DAEMON", "").strip().lower() in {"1", "true", "yes", "on"}
    anyio.run(lambda: run_demo(target, os.environ, daemon=None if no_daemon else start_daemon))
    return 0  # a failed step raises (exit 2 with its message); a missing verb is a skipped step
