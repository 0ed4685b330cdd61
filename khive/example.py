"""The built-in example behind ``khive demo`` until the full demo lands: a project and a few requests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio
import orjson
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax

from khive.bootstrap import open_runtime, operator_principal
from khive.context import CLI, MCP_STDIO, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import DslSyntaxError
from khive.project.layout import init_project

REQUESTS = (
    ("single", "verbs()", CLI),
    ("parallel batch", '[ping(echo="a"), ping(echo={"n": 1, "empty": null}), pnig()]', CLI),
    ("chain with $prev", 'ping(echo={"items": [{"id": "o-1"}]}) | ping(echo=$prev.echo.items[0].id)', CLI),
    ("operator verb over MCP (denied)", "audit.query(limit=2)", MCP_STDIO),
    ("operator verb from the CLI", "audit.query(limit=2)", CLI),
    ("syntax error", "ping(echo=abc)", CLI),
)


def run_example(target: Path | None) -> int:
    console = Console()
    root = target.resolve() if target else Path(tempfile.mkdtemp(prefix="khive-demo-"))
    init_project(root, "demo")
    runtime = open_runtime(root, os.environ)
    console.print(Panel(f"khive project at {root}\npacks: {', '.join(p.name for p in runtime.packs)}"
                        f"\nconfig_id: {runtime.config_id}", title="khive demo"))

    async def run() -> None:
        try:
            for title, text, transport in REQUESTS:
                console.rule(f"{title}  [dim]({transport})[/dim]")
                console.print(Syntax(text, "python", theme="ansi_dark", word_wrap=True))
                try:
                    request = parse(text)
                except DslSyntaxError as exc:
                    console.print(f"[red]{exc}[/red]")
                    continue
                principal = operator_principal() if transport == CLI else "agent:demo"
                envelope = await dispatch(request, Context(runtime, principal, transport))
                shown = orjson.dumps(envelope, option=orjson.OPT_INDENT_2).decode()
                console.print(Syntax(shown[:1500], "json", theme="ansi_dark", word_wrap=True))
        finally:
            await runtime.aclose()

    anyio.run(run)
    return 0
