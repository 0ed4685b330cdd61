"""``python -m khive.daemon [--detach] <khive arguments>``: how clients start the daemon.

With ``--detach`` the process forks before importing anything heavy and the parent exits at
once: the spawning client waits only for that, and the daemon is nobody's child (no zombie).
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--detach"]:
        argv = argv[1:]
        if os.fork() > 0:
            os._exit(0)
        os.setsid()
    from khive.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
