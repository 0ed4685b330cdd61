"""``khive doctor``: discover.doctor plus historic_sql.probe per warehouse connection, printed readably.

A composition root (reads the environment through the runtime it opens). Exit 0 when nothing is
high severity (or, from a probe, error), 1 when such a finding exists or an op failed. ``--format json``
(``--json``) prints every check's result as one JSON object, ``--format finding`` every finding as one list of
canonical findings (``khive/findings.py``); piped output is plain lines, never cut to a width.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from khive.services import Services

PROBE = "historic_sql.probe"
SCANS = "scan.connections()"  # what each connection's last scan redacted and left out
COLOURS = {"high": "red", "error": "red", "medium": "yellow", "warning": "yellow", "low": "cyan", "info": "dim"}
FAILING = frozenset({"high", "error"})  # discover's top severity and historic_sql.probe's
PROBED = frozenset({"postgres", "bigquery", "snowflake"})  # drivers whose history the probe reads from the server


def _ops(runtime: Services) -> list[str]:
    ops = ["discover.doctor()"]
    if "scan.connections" in runtime.registry.verbs:
        ops.append(SCANS)
    if PROBE in runtime.registry.verbs:
        ops += [f"{PROBE}(connection={orjson.dumps(name).decode()})"
                for name, conn in sorted(runtime.config.connections.items()) if conn.driver in PROBED]
    return ops


DIMENSIONS = ("reachability", "connectivity", "benchmark", "scanned", "links", "described", "history")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json", "finding"), default=None,
                        help="text (default); json: one object with each check's request and result; finding: "
                             "every finding of every check as one JSON list of canonical findings")
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def doctor(args: argparse.Namespace) -> int:
    # Imported here: every khive command builds this parser, and only `khive doctor` needs the runtime.
    import anyio

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

    checks = anyio.run(run)
    failing = any(not result["ok"] or any(str(item.get("severity")) in FAILING
                                          for item in (result.get("result") or {}).get("findings") or [])
                  for _, result in checks)
    form = args.format or ("json" if getattr(args, "json", False) else "text")
    if form == "json":
        document = {"project": str(project), "failing": failing,
                    "checks": [{"request": text, **result} for text, result in checks]}
        sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif form == "finding":
        sys.stdout.write(orjson.dumps(_canonical(checks), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print(checks)
    return 1 if failing else 0


def _canonical(checks: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from khive.findings import canonical, ordered

    out = []
    for text, result in checks:
        if not result["ok"]:  # a check that could not run is a finding too
            error = result["error"]
            out.append(canonical({"severity": "error", "code": error["code"], "message": error["message"],
                                  "details": error.get("details")}, text))
            continue
        out += [canonical(item, text) for item in (result.get("result") or {}).get("findings") or []]
    return ordered(out)


def _print(checks: list[tuple[str, dict[str, Any]]]) -> None:
    """A table on a terminal; piped, plain lines (one or two per finding), never cut to a width."""
    from rich.console import Console

    console = Console()
    for text, result in checks:
        if console.is_terminal:
            console.rule(text)
        else:
            print(f"== {text}")
        if not result["ok"]:
            _say(console, f"failed: {result['error']['code']}: {result['error']['message']}", "red")
            continue
        payload = result["result"]
        if text == SCANS:
            for line in redaction_lines(payload):
                _say(console, line)
            continue
        if "grade" in payload:
            _say(console, payload["summary"])
            _say(console, "  ".join(f"{name} {_shown(payload[name])} ({payload[name]['points']:g}/"
                                    f"{payload[name]['of']})" for name in DIMENSIONS if name in payload))
        findings = payload.get("findings") or []
        if not findings:
            _say(console, "no findings")
        elif console.is_terminal:
            console.print(_table(findings))
        else:
            for item in findings:
                location = f"  [{item['location']}]" if item.get("location") else ""
                print(f"{item.get('severity', 'info'):<8} {item.get('code', '')}: {_title(item)}{location}")
                if _detail(item):
                    print(f"         {_detail(item)}")


def _shown(dimension: dict[str, Any]) -> str:
    value = dimension.get("hitAt3", dimension.get("value"))
    return f"{value:.0%}" if isinstance(value, int | float) else str(dimension.get("status"))


def redaction_lines(payload: dict[str, Any]) -> list[str]:
    """Per connection: what its last scan redacted and left out, by kind (ADR 0035); never a value."""
    lines = []
    for item in payload.get("connections") or []:
        protection = item.get("protection")
        if protection is None:
            lines.append(f"{item['id']}: not scanned yet")
            continue
        if not protection.get("recorded"):
            lines.append(f"{item['id']}: scanned before redaction was recorded; rescan to count it")
            continue
        redactions = protection.get("redactions") or {}
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(redactions.items()))
        counted = f"{sum(redactions.values())} sample values" + (f" ({kinds})" if kinds else "")
        lines.append(f"{item['id']}: redacted {counted}; {protection.get('secretColumns', 0)} columns named like "
                     f"secrets not sampled; {protection.get('serverObjectsLeftOut', 0)} server objects left out")
    return lines or ["no connections"]


def _say(console: Any, line: str, style: str = "") -> None:
    if console.is_terminal and style:
        console.print(line, style=style, markup=False)
    elif console.is_terminal:
        console.print(line, markup=False)
    else:
        print(line)


def _title(item: dict[str, Any]) -> str:
    """A probe's finding has no title: its message is the headline and its fix the detail."""
    return str(item.get("title") or item.get("message") or "")


def _detail(item: dict[str, Any]) -> str:
    said = item.get("detail") or (item.get("message") if item.get("title") else None)
    return " ".join(str(part) for part in (said, item.get("fix")) if part)


def _table(findings: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table("severity", "code", "title", "detail / fix", "location")
    for item in findings:
        severity = str(item.get("severity", "info"))
        table.add_row(f"[{COLOURS.get(severity, 'white')}]{severity}[/]", str(item.get("code", "")),
                      _title(item), _detail(item), str(item.get("location") or ""))
    return table
