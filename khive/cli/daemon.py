"""``khive daemon run|start|stop|status|logs``: the daemon's own subcommands (a composition root)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from khive.daemon.paths import DaemonSettings, settings_from_env
from khive.errors import DaemonError

EXIT_OK, EXIT_NOT_RUNNING = 0, 1
START_WAIT_SECONDS = 20.0


def add_daemon_commands(commands: Any) -> None:
    daemon = commands.add_parser("daemon", help="the warm per-user daemon: run, start, stop, status, logs")
    actions = daemon.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="serve in the foreground (logs to stderr)")
    run.add_argument("--idle-timeout", type=float, help="seconds without requests before it exits "
                                                        "(default: KHIVE_DAEMON_IDLE or 1800)")
    run.set_defaults(handler=_run)
    actions.add_parser("start", help="start it in the background unless one is running").set_defaults(handler=_start)
    actions.add_parser("stop", help="stop the running daemon (in-flight requests finish)").set_defaults(handler=_stop)
    status = actions.add_parser("status", help="pid, uptime, config_id, requests served, warm state")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=_status)
    logs = actions.add_parser("logs", help="the end of the daemon log")
    logs.add_argument("-n", "--lines", type=int, default=50)
    logs.set_defaults(handler=_logs)


def _settings(args: argparse.Namespace) -> DaemonSettings:
    return settings_from_env(os.environ)


def _project(args: argparse.Namespace) -> Path:
    from khive.project.locate import locate_project

    return locate_project(args.project, os.environ, Path.cwd())


def _run(args: argparse.Namespace) -> int:
    from khive.daemon.lifecycle import serve_foreground

    serve_foreground(_project(args), os.environ, _settings(args), idle_seconds=args.idle_timeout)
    return EXIT_OK


def _start(args: argparse.Namespace) -> int:
    from khive.daemon.client import Local, connect_or_spawn
    from khive.daemon.lifecycle import probe

    settings = _settings(args)
    running = probe(settings)
    if running is None:
        started = connect_or_spawn(replace(settings, spawn_wait=START_WAIT_SECONDS), _project(args), os.environ)
        if isinstance(started, Local):
            raise DaemonError(started.reason, code="daemon_unavailable")
        started.close()
        running = probe(settings)
        if running is None:
            raise DaemonError(f"the daemon started but does not answer; see {settings.log_file}",
                              code="daemon_unavailable")
        print(f"khive daemon started: pid {running['pid']} on {settings.socket}")
    else:
        print(f"khive daemon already running: pid {running['pid']} on {settings.socket}")
    return EXIT_OK


def _stop(args: argparse.Namespace) -> int:
    from khive.daemon.connection import DaemonConnection

    settings = _settings(args)
    try:
        with DaemonConnection.open(settings.socket) as connection:
            answer = connection.call({"type": "stop"})
    except (OSError, DaemonError):
        print(f"khive: no daemon is running on {settings.socket}")
        return EXIT_OK
    deadline = time.monotonic() + 35.0
    while settings.socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"khive daemon stopped: pid {answer.get('pid')}")
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from khive.daemon.lifecycle import probe

    settings = _settings(args)
    status = probe(settings)
    if status is None:
        print(f"khive: no daemon is running on {settings.socket}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    if args.json:
        sys.stdout.write(orjson.dumps(status, option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    warm = status["warm"]
    tasks = ", ".join(f"{task['pack']}.{task['name']}={task['state']}" for task in warm["tasks"]) or "no tasks"
    print(f"pid              {status['pid']}\nuptime           {status['uptime_s']:.0f} s\n"
          f"project          {status['project']}\nconfig_id        {status['config_id']} "
          f"(runtime {status['runtime_config_id']})\nrequests served  {status['requests_served']} "
          f"({status['active']} in flight)\n"
          f"idle             {status['idle_s']:.0f} s of {status['idle_timeout_s']:g} s\n"
          f"warm             {warm['state']}: {tasks}\nsocket           {status['socket']}")
    return EXIT_OK


def _logs(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        with settings.log_file.open(encoding="utf-8", errors="replace") as handle:
            tail = deque(handle, maxlen=max(args.lines, 1))
    except FileNotFoundError:
        print(f"khive: no daemon log at {settings.log_file}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    sys.stdout.write("".join(tail))
    return EXIT_OK
