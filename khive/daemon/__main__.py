"""``python -m khive.daemon [--detach] --project DIR``: how clients start the daemon.

With ``--detach`` the process forks before importing anything heavy and the parent exits at
once: the spawning client waits only for that, and the daemon is nobody's child (no zombie).
This is a composition root of its own (it reads the environment): it never goes through
``khive.cli``, so the daemon package does not import the command line that imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["--detach"]:
        words = words[1:]
        if os.fork() > 0:
            os._exit(0)
        os.setsid()
    parser = argparse.ArgumentParser(prog="python -m khive.daemon", description="serve one project's warm daemon")
    parser.add_argument("--project", help="project directory (default: KHIVE_PROJECT or nearest khive.yaml)")
    parser.add_argument("--idle-timeout", type=float, help="seconds without requests before it exits")
    args = parser.parse_args(words)

    from khive.bootstrap import single_threaded_blas

    single_threaded_blas(os.environ)  # before numpy is imported by the runtime
    from khive.threads import favour_the_event_loop

    favour_the_event_loop()
    from pathlib import Path

    from khive.daemon.lifecycle import serve_foreground
    from khive.daemon.paths import settings_from_env
    from khive.errors import KhiveError
    from khive.project.locate import locate_project

    try:
        project = locate_project(args.project, os.environ, Path.cwd())
        serve_foreground(project, os.environ, settings_from_env(os.environ), idle_seconds=args.idle_timeout)
    except KhiveError as exc:
        print(f"khive daemon: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
