"""The demo's requests, sent the way an agent sends them: a real MCP client talking to the khive server.

The client runs in memory (``mcp.Client`` on ``build_server``), so the requests travel the MCP wire
(operator verbs are refused there) without a subprocess. A request whose verbs are not installed
is shown as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from mcp import Client, MCPError
from rich.console import Console
from rich.syntax import Syntax

from khive.mcp_server import TOOL_NAME, build_server
from khive.runtime import Runtime

CLIENT_NAME = "khive-demo"
MAX_LINES = 28


@dataclass(frozen=True, slots=True)
class Example:
    title: str
    ops: str
    verbs: tuple[str, ...]
    why: str


EXAMPLES: tuple[Example, ...] = (
    Example("single op", 'discover.search(query="net revenue by region", limit=4)', ("discover.search",),
            "one search across wiki pages, semantic-layer sources and scanned tables"),
    Example("parallel batch",
            '[scan.tables(connection="shop", query="refunds", limit=3), sl.search(query="revenue", limit=3), '
            'wiki.search(query="how do we report revenue")]',
            ("scan.tables", "sl.search", "wiki.search"), "three packs at once; one failure never aborts a sibling"),
    Example("chain with $prev",
            'discover.search(query="support tickets", kinds=["table"], limit=1) '
            '| scan.entity(connection="shop", table=$prev.refs[0].id)',
            ("discover.search", "scan.entity"), "the second op reads the first one's answer"),
    Example("budgeted lookup", 'discover.lookup(id="table:shop:sales.orders", budget_tokens=400)',
            ("discover.lookup",), "everything about one table, shed to fit a token budget"),
    Example("operator verb over the wire", 'scan.run(connection="shop")', ("scan.run",),
            "agents may not re-scan: operator verbs are CLI-only, and the denial is audited"),
    Example("syntax error", "sl.search(query=revenue)", ("sl.search",),
            "a malformed request is an MCP invalid_params error with line, column and a fix"),
)


def shorten(value: Any, *, items: int = 3, text: int = 160) -> Any:
    """A readable excerpt of an answer: long lists cut to a few items, long strings to one line."""
    if isinstance(value, dict):
        return {key: shorten(item, items=items, text=text) for key, item in value.items()}
    if isinstance(value, list):
        kept = [shorten(item, items=items, text=text) for item in value[:items]]
        return [*kept, f"... {len(value) - items} more"] if len(value) > items else kept
    if isinstance(value, str) and len(value) > text:
        return value[:text] + "..."
    return value


async def show(runtime: Runtime, console: Console) -> str:
    """Send every example through an MCP client and print request and answer; returns a one-line tally."""
    shown = skipped = 0
    server = build_server(runtime, user="demo")
    async with Client(server, client_info=types.Implementation(name=CLIENT_NAME, version="1")) as client:
        for example in EXAMPLES:
            console.rule(f"[bold]{example.title}[/bold]  [dim]{example.why}[/dim]")
            console.print(Syntax(example.ops, "python", theme="ansi_dark", word_wrap=True))
            absent = [verb for verb in example.verbs if verb not in runtime.registry.verbs]
            if absent:
                console.print(f"[yellow]skipped: {', '.join(absent)} not installed[/yellow]")
                skipped += 1
                continue
            envelope = await _call(client, example.ops)
            for line in headlines(envelope):
                console.print(line, highlight=False)
            console.print(_answer(envelope))
            shown += 1
    return f"{shown} requests over MCP" + (f", {skipped} skipped" if skipped else "")


async def _call(client: Client, ops: str) -> dict[str, Any]:
    try:
        result = await client.call_tool(TOOL_NAME, {"ops": ops})
    except MCPError as exc:  # the protocol error a client gets for text that does not parse
        return {"mcp_error": {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}}
    return dict(result.structured_content or {})


def headlines(envelope: dict[str, Any]) -> list[str]:
    """One line per op, before the JSON: what came back, in words a person scans."""
    if "mcp_error" in envelope:
        error = envelope["mcp_error"]
        data = error.get("data") or {}
        return [f"[red]MCP error {error['code']}[/red] {data.get('code', '')}: {data.get('message', error['message'])}"
                f" [dim]({data.get('hint', '')})[/dim]"]
    lines = [f"[bold]status: {envelope.get('status')}[/bold]"]
    for item in envelope.get("results", []):
        if not item.get("ok"):
            error = item.get("error") or {}
            lines.append(f"  [red]✗ {item['verb']}[/red] {error.get('code', 'aborted')}: {error.get('message', '')}")
            continue
        lines.append(f"  [green]✓ {item['verb']}[/green] {_gist(item.get('result'))}")
    return lines


def _gist(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    for key in ("refs", "tables", "hits", "results", "sources", "pages"):
        found = result.get(key)
        if isinstance(found, list) and found:
            names = [str(entry.get("id") or entry.get("key") or entry.get("name") or "") for entry in found[:3]
                     if isinstance(entry, dict)]
            return f"{len(found)} {key}: " + ", ".join(name for name in names if name)
    entity = result.get("entity")
    if isinstance(entity, dict):
        return f"{entity.get('kind', '')} {entity.get('id', '')}: {', '.join(k for k in result if k != 'entity')}"
    lists = ", ".join(f"{len(value)} {key}" for key, value in result.items() if isinstance(value, list) and value)
    if "id" in result:
        return f"{result['id']}" + (f": {lists}" if lists else "")
    return lists or ", ".join(list(result)[:6])


def _answer(envelope: dict[str, Any]) -> Syntax:
    shown = {key: value for key, value in envelope.items() if key not in ("summary", "request_id", "status")}
    text = orjson.dumps(shorten(shown, items=2), option=orjson.OPT_INDENT_2).decode()
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        text = "\n".join([*lines[:MAX_LINES], f"  ... {len(lines) - MAX_LINES} more lines"])
    return Syntax(text, "json", theme="ansi_dark", word_wrap=True)
