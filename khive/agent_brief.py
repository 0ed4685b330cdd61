"""What the MCP server tells an agent before its first call: how to call khive, and what this project holds.

The server's ``instructions`` and the ``request`` tool's description both carry a short brief of the
project: each connection with its driver, what it holds (its description, tables by schema, the most
queried tables) and the wiki's topics, cut to ``BRIEF_TOKENS`` (approximate tokens, as budgets count
them) so a project with many connections never floods the agent's context: what does not fit is
counted and left to ``overview()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from khive.agent_guide import SKILL_PATH
from khive.budget import approx_tokens
from khive.overview import collect_overview
from khive.verbs import Visibility

if TYPE_CHECKING:
    from khive.services import Services

BRIEF_TOKENS = 300
SCHEMAS_NAMED = 6
TABLES_NAMED = 3
DESCRIPTION_CHARS = 120

HOW_TO = f"""\
Call khive with ONE tool, `request`, whose `ops` is a small DSL:
  single    verb(arg=1)  or  pack.verb(name="x", opts={{"k": [1, true, null]}})
  parallel  [a(x=1), b(y=2)]            (up to 100 ops, run concurrently)
  chain     a(q="x") | b(id=$prev.items[0].id)   (in order; $prev is the previous result)
Arguments are named JSON values. `any.verb(help=true)` returns a verb's parameter schema.
The result is an envelope: results[i] is {{ok, verb, result}} or {{ok: false, verb, error}}.
First call overview() (what is here), then discover.search(query=...) to find data and
discover.lookup(id=..., budget_tokens=...) for one entity.
The full guide, with examples that run on this project: {SKILL_PATH} (written by `khive setup-agents`).
"""


def connection_line(entry: Mapping[str, Any]) -> str:
    """``shop (duckdb): the demo shop; 19 tables in sales, catalog, ...; most queried: sales.orders, ...``."""
    description = " ".join(str(entry.get("description") or "").split())
    parts = [description if len(description) <= DESCRIPTION_CHARS else description[:DESCRIPTION_CHARS - 3] + "..."
             ] if description else []
    schemas: Mapping[str, int] = entry.get("schemas") or {}
    if entry.get("lastScan") is None:
        parts.append("not scanned yet")
    else:
        named = sorted(schemas, key=lambda name: (-schemas[name], name))[:SCHEMAS_NAMED]
        more = f" and {len(schemas) - len(named)} more" if len(schemas) > len(named) else ""
        parts.append(f"{entry.get('tables', 0)} tables" + (f" in {', '.join(named)}{more}" if named else ""))
    top = [item["table"] for item in (entry.get("topTables") or [])[:TABLES_NAMED]]
    if top:
        parts.append(f"most queried: {', '.join(top)}")
    if entry.get("sources"):
        parts.append(f"{entry['sources']} semantic-layer sources")
    return f"{entry['id']} ({entry['driver']})" + (f": {'; '.join(parts)}" if parts else "")


def project_brief(overview: Mapping[str, Any], max_tokens: int = BRIEF_TOKENS) -> str:
    """The project part of the instructions, within ``max_tokens`` (connections that do not fit are counted)."""
    connections = list(overview.get("connections") or [])
    if not connections:
        return ("This project has no connections yet (khive.yaml `connections:`); the wiki and semantic layer "
                "still answer.")
    head = f"This project ({overview.get('project')}) has {len(connections)} connection(s):"
    topics = (overview.get("wiki") or {}).get("topics") or []
    wiki = ("Wiki topics: " + ", ".join(f"{t['topic']} ({t['pages']})" for t in topics[:8])) if topics else ""
    tail = "Call overview() for counts, last scan and ingest times, and what is stale."
    lines = [head]
    for index, entry in enumerate(connections):
        line = "  " + connection_line(entry)
        left = len(connections) - index - 1
        reserve = f"  ... and {left} more connection(s): overview() lists them" if left else ""
        if approx_tokens("\n".join([*lines, line, reserve, wiki, tail])) > max_tokens:
            lines.append(f"  ... and {len(connections) - index} more connection(s): overview() lists them")
            break
        lines.append(line)
    if wiki and approx_tokens("\n".join([*lines, wiki, tail])) <= max_tokens:
        lines.append(wiki)
    lines.append(tail)
    return "\n".join(lines)


def server_instructions(runtime: Services) -> str:
    """The MCP ``instructions``: how to call khive, then this project's brief."""
    return HOW_TO + "\n" + project_brief(collect_overview(runtime)) + "\n"


def tool_description(runtime: Services, instructions: str | None = None) -> str:
    """The ``request`` tool's description: the instructions plus every verb with its one-line doc."""
    lines = [instructions if instructions is not None else server_instructions(runtime), "Verbs:"]
    for entry in runtime.registry.catalogue():
        marker = " (operator: CLI only)" if entry["visibility"] == Visibility.OPERATOR.value else ""
        lines.append(f"  {entry['verb']}: {entry['doc']}{marker}")
    return "\n".join(lines)
