"""``khive doctor``: discover.doctor plus historic_sql.probe per PostgreSQL connection, printed readably.

A composition root (reads the environment through the runtime it opens). Exit 0 when nothing is
high severity (or, from a probe, error), 1 when such a finding exists or an op failed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import orjson

PROBE = "historic_sql.probe"
COLOURS = {"high": "red", "error": "red", "medium": "yellow", "warning": "yellow", "low": "cyan", "info": "dim"}
FAILING = frozenset({"high", "error"})  # discover's top severity and historic_sql.probe's


def _ops(runtime: Any) -> list[str]:
    ops = ["discover.doctor()"]
    if PROBE in runtime.registry.verbs:
        ops += [f"{PROBE}(connection={orjson.dumps(name).decode()})"
                for name, conn in sorted(runtime.config.connections.items()) if conn.driver == "postgres"]
    return ops


def doctor(args: argparse.Namespace) -> int:
    # Imported here: every khive command builds this parser, and only `khive doctor` needs the runtime.
    import anyio
    from rich.console import Console
    from rich.table import Table

    from khive.bootstrap import locate_project, open_runtime, operator_principal
    from khive.context import CLI, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    project = locate_project(args.project, os.environ, Path.cwd())
    runtime = open_runtime(project, os.environ)

    async def run() -> list[tuple[str, dict[str, Any]]]:
        try:
            ctx = Context(runtime, operator_principal(), CLI, presentation="verbose")
            return [(text, (await dispatch(parse(text), ctx))["results"][0]) for text in _ops(runtime)]
        finally:
            await runtime.aclose()

    console, failed, high = Console(), False, False
    for text, result in anyio.run(run):
        console.rule(text)
        if not result["ok"]:
            failed = True
            console.print(f"[red]failed[/red]: {result['error']['code']}: {result['error']['message']}")
            continue
        payload = result["result"]
        if "grade" in payload:
            bench = payload["benchmark"]
            console.print(f"grade [bold]{payload['grade']}[/bold]  reachability {payload['reachability']['value']}  "
                          f"connectivity {payload['connectivity']['value']}  "
                          f"hit@3 {bench['hitAt3'] if bench['status'] == 'measured' else bench['status']}")
        findings = payload.get("findings") or []
        table = Table("severity", "code", "title", "detail / fix", "location")
        for item in findings:
            severity = str(item.get("severity", "info"))
            high = high or severity in FAILING
            detail = " ".join(str(part) for part in (item.get("detail") or item.get("message"), item.get("fix"))
                              if part)
            table.add_row(f"[{COLOURS.get(severity, 'white')}]{severity}[/]", str(item.get("code", "")),
                          str(item.get("title", "")), detail, str(item.get("location") or ""))
        console.print(table if findings else "no findings")
    return 1 if failed or high else 0
