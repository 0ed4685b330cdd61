"""``khive ingest <connection>``: run ``historic_sql.ingest`` with a progress bar (a composition root).

Prints the envelope like ``khive request``; exit 0 when the ingest succeeded, 1 when it failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("connection")
    parser.add_argument("--window-days", type=int, help="override historicSql.windowDays")
    parser.add_argument("--provider", choices=("deterministic", "agent", "sampling"),
                        help="override historicSql.provider")


def ops_text(args: argparse.Namespace) -> str:
    parts = [f"connection={orjson.dumps(args.connection).decode()}"]
    if args.window_days is not None:
        parts.append(f"window_days={int(args.window_days)}")
    if args.provider:
        parts.append(f"provider={orjson.dumps(args.provider).decode()}")
    return f"historic_sql.ingest({', '.join(parts)})"


def handler(args: argparse.Namespace) -> int:
    # Imported here: every khive command builds this parser, and only `khive ingest` needs the runtime.
    import anyio

    from khive.bootstrap import locate_project, open_runtime, operator_principal
    from khive.cli.progress import RichProgressSink
    from khive.context import CLI, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    runtime = open_runtime(locate_project(args.project, os.environ, Path.cwd()), os.environ)
    text = ops_text(args)

    async def run() -> dict[str, Any]:
        try:
            with RichProgressSink() as progress:
                ctx = Context(runtime, operator_principal(), CLI, presentation="agent", progress=progress)
                return await dispatch(parse(text), ctx)
        finally:
            await runtime.aclose()

    envelope = anyio.run(run)
    sys.stdout.write(orjson.dumps(envelope, option=orjson.OPT_INDENT_2).decode() + "\n")
    (result,) = envelope["results"]
    if result["ok"]:
        found = result["result"]
        print(f"khive: ingest {found['syncId']}: {found['counts']['templates']} templates, "
              f"{found['counts']['tables']} tables, {found['workUnits']} work units"
              + (f"; unchanged since {found['unchangedSince']}: no new run written" if found.get("unchangedSince")
                 else ""), file=sys.stderr)
        redacted = found.get("redactions") or {}
        if redacted:
            kinds = ", ".join(f"{kind} {count}" for kind, count in redacted.items())
            print(f"khive: redacted in {sum(redacted.values())} places of the stored templates: {kinds}",
                  file=sys.stderr)
    return 0 if envelope["status"] == "success" else 1
