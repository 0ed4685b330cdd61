"""``khive demo [DIR]``: build the shop, connect a project to it, fill every pack, then show requests.

A composition root like the CLI (it builds the Runtime and starts the daemon), but it never reads
the environment itself: the CLI hands it ``env``. Every step is idempotent, so a re-run refreshes
the same directory: the warehouse is rebuilt only when its generator changed, scan writes a new
immutable run (with an empty diff), bootstrap never overwrites sources, wiki writes are no-ops.
A step whose verb is not installed is reported as skipped, never as a failure.
"""

from __future__ import annotations

import datetime as dt
import getpass
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from khive.atomicfile import replace_bytes
from khive.bootstrap import open_runtime, operator_principal
from khive.cli.demo import showcase
from khive.cli.demo.pages import write_ops
from khive.cli.demo.querylog import write_log
from khive.cli.demo.suite import write_suite
from khive.cli.demo.warehouse import build_warehouse
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import ConfigError
from khive.project.layout import STARTER_CONFIG
from khive.runtime import Runtime
from khive.scaffold import init_project
from khive.site.build import DEFAULT_DIR as SITE_DIR
from khive.site.build import build_site
from khive.site.reader import operator_reader

CONNECTION = "shop"
MARKER = "# written by `khive demo`"
CONFIG = f"""{MARKER}: re-running it rewrites this file; copy the project elsewhere to keep edits.
version: 1
name: khive-demo

auth:
  default: allow
  rules:
    - {{effect: deny, principal: "agent:*", verb: "wiki.delete", reason: "agents do not delete pages"}}

connections:
  {CONNECTION}:
    driver: duckdb
    path: data/shop.duckdb
    description: "the demo shop: sales, catalog, marketing, support and finance"
    historicSql:
      enabled: true
      queryLog: data/query-log.jsonl
      windowDays: 90
      minExecutions: 3
      concurrency: 1    # a 3,000-line log: one process beats starting a parse pool on 2 cores
      filters:
        serviceAccounts:
          - {{pattern: "^svc_", mode: mark-only}}
"""


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    note: str = ""
    skipped: bool = False


@dataclass
class DemoReport:
    root: Path
    phases: list[Phase] = field(default_factory=list)
    daemon: bool = False

    @property
    def skipped(self) -> list[str]:
        return [f"{phase.name}: {phase.note}" for phase in self.phases if phase.skipped]

    def seconds(self) -> dict[str, float]:
        return {phase.name: round(phase.seconds, 3) for phase in self.phases}


def write_config(root: Path) -> bool:
    """Write the demo's khive.yaml atomically; refuse a project the demo did not create. True when it changed."""
    path = root / "khive.yaml"
    if path.exists():
        current = path.read_text(encoding="utf-8")
        if current == CONFIG:
            return False
        if not current.startswith(MARKER) and current != STARTER_CONFIG:  # only ours, or an untouched `khive init`
            raise ConfigError(f"{root} already holds a khive project that `khive demo` did not create; "
                              "run the demo in a new directory (khive demo DIR)",
                              details={"project": str(root), "fix": "khive demo ./khive-demo"})
    replace_bytes(path, CONFIG.encode("utf-8"))
    return True


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "demo"


Step = Callable[[Runtime, "Reporter"], Awaitable[str]]


class Reporter:
    """Phase timings plus one rich progress display: a bar for the demo, one for the verb at work."""

    def __init__(self, console: Console, total: int):
        self.console = console
        self.progress = Progress(TextColumn("{task.description:<28}"), BarColumn(),
                                 TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), console=console,
                                 transient=True)
        self.overall = self.progress.add_task("khive demo", total=total)
        self.detail: TaskID | None = None

    async def sink(self, done: float, total: float | None, message: str | None) -> None:
        if self.detail is None:
            self.detail = self.progress.add_task(message or "working", total=total)
        self.progress.update(self.detail, completed=done, total=total, description=f"  {message or 'working'}"[:28])

    def finish(self, phase: Phase) -> None:
        if self.detail is not None:
            self.progress.remove_task(self.detail)
            self.detail = None
        self.progress.advance(self.overall)
        mark = "[yellow]skipped[/yellow]" if phase.skipped else "[green]done   [/green]"
        self.console.print(f"  {mark} {phase.name:<16} {phase.seconds:6.2f}s  [dim]{phase.note}[/dim]")


async def operator_request(runtime: Runtime, text: str, reporter: Reporter) -> dict[str, Any]:
    ctx = Context(runtime, operator_principal(), CLI, progress=reporter.sink)
    envelope = await dispatch(parse(text), ctx)
    failed = [r for r in envelope["results"] if not r["ok"]]
    if failed:
        error = failed[0].get("error") or {}
        raise ConfigError(f"demo step failed: {failed[0]['verb']}: {error.get('message', 'aborted')}",
                          details={"request": text, "error": error})
    return envelope


def missing(runtime: Runtime, *verbs: str) -> str:
    absent = [verb for verb in verbs if verb not in runtime.registry.verbs]
    return f"skipped: {', '.join(absent)} not installed" if absent else ""


async def scan_step(runtime: Runtime, reporter: Reporter) -> str:
    envelope = await operator_request(runtime, f'scan.run(connection="{CONNECTION}")', reporter)
    counts = envelope["results"][0]["result"].get("counts") or {}
    return f"{counts.get('tables', 0)} tables, {counts.get('columns', 0)} columns, {counts.get('foreignKeys', 0)} " \
           "declared foreign keys"


async def bootstrap_step(runtime: Runtime, reporter: Reporter) -> str:
    envelope = await operator_request(runtime, f'sl.bootstrap(connection="{CONNECTION}")', reporter)
    result = envelope["results"][0]["result"]
    return ", ".join(f"{len(v)} {k}" for k, v in result.items() if isinstance(v, list)) or "sources written"


async def ingest_step(runtime: Runtime, reporter: Reporter) -> str:
    envelope = await operator_request(runtime, f'historic_sql.ingest(connection="{CONNECTION}")', reporter)
    result = envelope["results"][0]["result"]
    counts = result.get("counts") or {}
    patterns = (result.get("projection") or {}).get("patterns") or {}
    return f"{counts.get('templates', 0)} query templates over {counts.get('tables', 0)} tables, " \
           f"{len(patterns.get('slugs') or [])} join patterns"


async def wiki_step(runtime: Runtime, reporter: Reporter) -> str:
    envelope = await operator_request(runtime, write_ops(), reporter)
    changed = sum(1 for r in envelope["results"] if r["result"].get("changed"))
    return f"{len(envelope['results'])} pages ({changed} changed)"


SETUP: tuple[tuple[str, tuple[str, ...], Step], ...] = (
    ("scan", ("scan.run",), scan_step),
    ("semantic layer", ("sl.bootstrap",), bootstrap_step),
    ("query history", ("historic_sql.ingest",), ingest_step),
    ("wiki pages", ("wiki.write",), wiki_step),
)


async def run_demo(target: Path, env: Mapping[str, str], *, console: Console | None = None,
                   daemon: Callable[[Path], Callable[[], str]] | None = None, now: dt.datetime | None = None
                   ) -> DemoReport:
    """Build and show the demo in ``target``; ``daemon(root)`` starts the warm daemon, its result says how it went."""
    console = console or Console()
    root = target.resolve()
    report = DemoReport(root)
    reporter = Reporter(console, total=7 + len(SETUP))
    console.rule(f"[bold]khive demo[/bold] in {root}")

    async def timed(name: str, work: Callable[[], Awaitable[str] | str]) -> None:
        started = time.perf_counter()
        outcome = work()
        note = outcome if isinstance(outcome, str) else await outcome
        phase = Phase(name, time.perf_counter() - started, note.removeprefix("skipped: "), note.startswith("skipped"))
        report.phases.append(phase)
        reporter.finish(phase)

    with reporter.progress:
        await timed("project", lambda: _project(root))
        await timed("warehouse", lambda: _warehouse(root))
        end = (now or dt.datetime.now(dt.UTC)).replace(hour=0, minute=0, second=0, microsecond=0)
        await timed("query log", lambda: f"{write_log(root / 'data' / 'query-log.jsonl', end)} executions")
        opened: list[Runtime] = []
        await timed("packs", lambda: _open(root, env, opened))
        runtime = opened[0]
        try:
            for name, verbs, step in SETUP:
                absent = missing(runtime, *verbs)
                await timed(name, partial(str, absent) if absent else partial(step, runtime, reporter))
            waiting = daemon(root) if daemon else None  # it warms up while the requests are shown
            await timed("requests", lambda: showcase.show(runtime, console))
            await timed("site", lambda: site_step(runtime, root))
            await timed("daemon", lambda: waiting() if waiting else "skipped: not started (--no-daemon)")
            report.daemon = waiting is not None and not report.phases[-1].skipped
        finally:
            await runtime.aclose()
    total = sum(phase.seconds for phase in report.phases)
    console.rule(f"[bold]done[/bold] in {total:.1f}s")
    if report.skipped:
        console.print("[yellow]skipped:[/yellow] " + "; ".join(report.skipped))
    khive = f"khive --project {root}"
    hints = [f"[bold]{khive} setup-agents[/bold]   connect Claude Code, Cursor or Codex",
             f"[bold]{khive} request 'discover.search(query=\"refund rate\")'[/bold]   ask it yourself",
             f"[bold]{khive} audit[/bold]   who ran what, the denial included"]
    if report.daemon:
        hints.append(f"[bold]{khive} daemon stop[/bold]   stop the warm daemon (it also idles out)")
    site = root / SITE_DIR / "index.html"
    if site.is_file():  # last: what a person opens next
        hints.append(f"[bold]{khive} site serve[/bold]   the site below, with live search")
        hints.append(f"[bold]open file://{site}[/bold]   the site: tables, sources, wiki, review, audit")
    console.print("next:\n" + "\n".join(f"  {hint}" for hint in hints), highlight=False)
    return report


async def site_step(runtime: Runtime, root: Path) -> str:
    built = await build_site(operator_reader(runtime), root / SITE_DIR)
    problems = f", {len(built.failures)} verbs did not answer" if built.failures else ""
    return f"{built.pages} pages, {built.questions} search answers{problems}"


def _open(root: Path, env: Mapping[str, str], opened: list[Runtime]) -> str:
    runtime = open_runtime(root, env)
    opened.append(runtime)
    return ", ".join(info.name for info in runtime.packs)


def _project(root: Path) -> str:
    created = init_project(root, _user())
    changed = write_config(root)
    suite = write_suite(root)
    return (f"{len(created)} paths created" + (", khive.yaml written" if changed else "")
            + (", retrieval suite written" if suite else ""))


def _warehouse(root: Path) -> str:
    build = build_warehouse(root / "data" / "shop.duckdb")
    rows = sum(build.rows.values())
    return f"{len(build.rows)} tables, {rows:,} rows" + ("" if build.rebuilt else " (unchanged)")
