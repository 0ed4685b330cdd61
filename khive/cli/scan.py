"""``khive scan CONNECTION``: run scan.run and print a short summary (``--json``: the whole envelope).

The envelope lists every added column of a first scan (137 lines for 14 tables); a person wants the
counts, what changed, the warnings and where the run was written. The request goes the way every
``khive request`` goes (the warm daemon, else in-process), through the CLI's own helpers.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from khive.project.runs import sync_time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("connection")
    parser.add_argument("--json", action="store_true", help="print the whole envelope (every table and column)")


def handler(args: argparse.Namespace) -> int:
    from khive.bootstrap import locate_project
    from khive.cli import app as cli
    from khive.daemon.paths import settings_from_env
    from khive.dsl import parse

    text = f"scan.run(connection={orjson.dumps(args.connection).decode()})"
    args.ops, args.presentation, args.request_id = text, "agent", ""
    if args.json:
        return cli._request(args)
    project = locate_project(args.project, os.environ, Path.cwd())
    outcome = cli._forward(args, parse(text), project, settings_from_env(os.environ))
    envelope = outcome if isinstance(outcome, dict) else cli._dispatch_locally(args, text, project)
    result = envelope["results"][0]
    if not result["ok"]:
        error = result["error"]
        fix = (error.get("details") or {}).get("fix")
        print(f"scan {args.connection} failed: {error['code']}: {error['message']}" + (f"\nfix: {fix}" if fix else ""))
        return cli.EXIT_FAILED
    print("\n".join(summary(result["result"], project)))
    return cli.EXIT_OK


def summary(report: Mapping[str, Any], project: Path) -> list[str]:
    """A few lines: counts, changes since the previous scan, warnings, where the run is."""
    counts = report.get("counts") or {}
    inferred = report.get("inferredRelationships") or {}
    lines = [f"scan {report['connection']} ({report.get('driver')}): {counts.get('tables', 0)} tables, "
             f"{counts.get('views', 0)} views, {counts.get('columns', 0)} columns, "
             f"{counts.get('foreignKeys', 0)} foreign keys; {inferred.get('accepted', 0)} relationships inferred"
             + (f" ({inferred['review']} to review)" if inferred.get("review") else "")]
    previous = report.get("previousSyncId")
    diff = report.get("diffSummary") or {}
    changes = [f"{kind} {_changes(diff.get(kind) or {})}" for kind in ("tables", "columns")
               if _changes(diff.get(kind) or {})]
    if report.get("unchangedSince"):
        lines.append(f"unchanged since {report['unchangedSince']} ({sync_time(str(report['unchangedSince']))}): "
                     "no new run written")
    elif previous is None:
        lines.append("first scan of this connection")
    else:
        lines.append(f"changes since {sync_time(previous)}: " + ("; ".join(changes) if changes else "none"))
    for warning in report.get("warnings") or []:
        lines.append(f"warning: {warning if isinstance(warning, str) else orjson.dumps(warning).decode()}")
    lines.extend(_protection(report))
    gaps = report.get("capabilityGaps") or []
    if gaps:
        lines.append(f"not available from {report.get('driver')}: {', '.join(str(gap) for gap in gaps)}")
    seconds = float((report.get("timings") or {}).get("totalMs") or 0) / 1000
    run = Path("raw-sources") / str(report["connection"]) / "live-database" / str(report["syncId"])
    pruned = report.get("prunedRuns") or []
    lines.append(f"run: {run}/ ({seconds:.1f} s); latest view: _schema/{report['connection']}/ "
                 f"(in {project})" + (f"; {len(pruned)} older run(s) removed (runs: in khive.yaml)" if pruned else ""))
    lines.append(f"details: khive scan {report['connection']} --json, or khive request "
                 f"'scan.status(connection=\"{report['connection']}\")'")
    return lines


def _protection(report: Mapping[str, Any]) -> list[str]:
    """What the scan left out and what it redacted (ADR 0035): counts and names, never a value."""
    lines = []
    excluded = report.get("excluded") or {}
    internal = excluded.get("internal") or []
    if internal:
        shown = ", ".join(f"{item['object']} ({item['reason']})" for item in internal[:5])
        more = int(excluded.get("internalCount") or len(internal)) - min(len(internal), 5)
        lines.append(f"left out {excluded.get('internalCount', len(internal))} server objects: {shown}"
                     + (f" and {more} more" if more > 0 else ""))
    if excluded.get("filtered"):
        lines.append(f"left out {excluded['filtered']} tables by the connection's tables: globs")
    redactions = report.get("redactions") or {}
    if redactions:
        lines.append(f"redacted {sum(redactions.values())} values: {_counted(redactions)}")
    skipped = report.get("skippedColumns") or {}
    if skipped:
        lines.append(f"columns not sampled: {_counted(skipped)}")
    return lines


def _counted(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items()))


def _changes(part: Mapping[str, Any]) -> str:
    """``+3 added, 1 modified`` from lists (or counts) of added, modified and deleted names."""
    words = []
    for key in ("added", "modified", "deleted"):
        value = part.get(key)
        count = len(value) if isinstance(value, list) else int(value or 0)
        if count:
            words.append(f"{count} {key}")
    return ", ".join(words)
