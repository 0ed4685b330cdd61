"""``khive setup-agents``: connect MCP clients to this project, and leave them the agent guide.

Writes the khive server entry into Claude Code's ``.mcp.json`` and Cursor's ``.cursor/mcp.json``
in the project, the guide as a skill (``.claude/skills/khive/SKILL.md``), and prints the snippets
for clients whose configuration lives outside the project (Codex, Claude Desktop, VS Code).

Existing files are merged, never clobbered: other servers and keys stay as they are, only our entry
is added or replaced. Before a file changes, its previous bytes are kept beside it as
``<name>.bak-<UTC time>``. A file that is not valid JSON is left alone and named in the error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from khive.agent_guide import GUIDE, SKILL_PATH
from khive.errors import ConfigError

CLIENT_FILES = {"Claude Code": ".mcp.json", "Cursor": ".cursor/mcp.json"}


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    status: str  # created, updated, unchanged
    backup: Path | None = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="khive", help="the server's name in the clients' configs (default: khive)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")


def server_command(project: Path) -> tuple[str, list[str]]:
    """The command an MCP client starts: this installation's khive, pinned to the project."""
    beside = Path(sys.executable).parent / "khive"
    found = beside if beside.is_file() else (Path(shutil.which("khive") or "") if shutil.which("khive") else None)
    if found is not None:
        return str(found.absolute()), ["--project", str(project), "mcp"]
    return sys.executable, ["-m", "khive.cli", "--project", str(project), "mcp"]


def merged_config(path: Path, name: str, entry: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The file's JSON with ``mcpServers[name] = entry``; True when that changes anything."""
    data: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if text.strip():
            try:
                loaded = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}); fix or "
                                  "remove the file, then rerun khive setup-agents (nothing was written)",
                                  details={"file": str(path), "line": exc.lineno, "fix": "fix the JSON syntax"}
                                  ) from None
            if not isinstance(loaded, dict):
                raise ConfigError(f"{path}:1: expected a JSON object with mcpServers, found {type(loaded).__name__}",
                                  details={"file": str(path), "line": 1, "fix": 'start from {"mcpServers": {}}'})
            data = loaded
    servers = data.get("mcpServers")
    if servers is None:
        servers = data["mcpServers"] = {}
    elif not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers must be an object of servers, found {type(servers).__name__}",
                          details={"file": str(path), "field": "mcpServers", "fix": "make mcpServers an object"})
    changed = servers.get(name) != entry
    servers[name] = entry
    return data, changed


def write_file(path: Path, text: str, *, now: dt.datetime) -> Written:
    """Write ``text`` atomically; keep the previous bytes as a timestamped backup when they differ."""
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return Written(path, "unchanged")
        backup = path.with_name(f"{path.name}.bak-{now:%Y%m%dT%H%M%S%fZ}")
        backup.write_bytes(old)
    else:
        backup = None
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return Written(path, "updated" if backup else "created", backup)


def snippets(name: str, command: str, args: list[str]) -> dict[str, str]:
    quoted = ", ".join(json.dumps(arg) for arg in args)
    generic = json.dumps({"mcpServers": {name: {"command": command, "args": args}}}, indent=2)
    return {
        "Codex (~/.codex/config.toml)": f"[mcp_servers.{name}]\ncommand = {json.dumps(command)}\nargs = [{quoted}]",
        "Claude Desktop, Windsurf and other mcpServers JSON configs": generic,
        "VS Code (.vscode/mcp.json)": json.dumps({"servers": {name: {"type": "stdio", "command": command,
                                                                      "args": args}}}, indent=2),
        "Claude Code, user-wide instead of per project": f"claude mcp add {name} -- {command} {' '.join(args)}",
    }


def setup_agents(project: Path, *, name: str = "khive", dry_run: bool = False,
                 now: dt.datetime | None = None) -> tuple[list[Written], dict[str, str]]:
    moment = now or dt.datetime.now(dt.UTC)
    command, args = server_command(project)
    entries = {".mcp.json": {"type": "stdio", "command": command, "args": args, "env": {}},
               ".cursor/mcp.json": {"command": command, "args": args, "env": {}}}
    planned: list[tuple[Path, str, bool]] = []
    for relative, entry in entries.items():  # validate every file before writing any
        path = project / relative
        data, changed = merged_config(path, name, entry)
        planned.append((path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", changed))
    skill = project / SKILL_PATH
    planned.append((skill, GUIDE, not skill.exists() or skill.read_text(encoding="utf-8") != GUIDE))
    written = []
    for path, text, changed in planned:
        if dry_run:
            written.append(Written(path, ("would update" if path.exists() else "would create") if changed
                                   else "unchanged"))
        elif not changed and path.exists():
            written.append(Written(path, "unchanged"))
        else:
            written.append(write_file(path, text, now=moment))
    return written, snippets(name, command, args)


def handler(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.syntax import Syntax

    from khive.project.locate import locate_project

    project = locate_project(args.project, os.environ, Path.cwd())
    written, others = setup_agents(project, name=args.name, dry_run=args.dry_run)
    console = Console()
    console.rule(f"khive setup-agents: {project}")
    for item in written:
        backup = f"  (previous kept as {item.backup.name})" if item.backup else ""
        console.print(f"  {item.status:<13} {item.path.relative_to(project)}{backup}")
    for title, text in others.items():
        console.print(f"\n[bold]{title}[/bold]")
        console.print(Syntax(text, "toml" if "toml" in title else "json" if text.startswith("{") else "bash",
                             theme="ansi_dark", word_wrap=True))
    console.print(f"\nThe agent guide is {SKILL_PATH}; the request tool's description points agents to it.")
    return 0
