"""``khive setup-agents``: connect MCP clients to this project, and leave them a guide made from it.

Writes the khive server entry into Claude Code's ``.mcp.json`` and Cursor's ``.cursor/mcp.json`` in
the project with the environment the server needs (``khive.cli.agent_clients``), prints the snippets for
clients whose configuration lives elsewhere (Codex, Claude Desktop, VS Code, opencode), and writes
the guide generated from the project (``khive.guide``) as a skill, ``.claude/skills/khive/SKILL.md``.
With ``--env-file`` it also copies the variables khive.yaml needs from this shell into ``.khive/env``
(0600, git-ignored) for clients that cannot pass them.

Existing files are merged, never clobbered: other servers and keys stay, in khive's entry only what
khive owns changes, and in the guide only the part between its markers. Before a file changes its
previous bytes are kept beside it as ``<name>.bak-<UTC time>``. A file that is not valid JSON is left
alone and named in the error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from khive.agent_guide import SKILL_PATH
from khive.atomicfile import replace_bytes
from khive.cli.agent_clients import SETTINGS, WRITTEN, Launch, mcp_servers_entry, merge_entry, snippets
from khive.errors import ConfigError
from khive.project.envfile import ENV_FILE, env_file, is_placeholder, read_env_file

if TYPE_CHECKING:
    from khive.guide import Guide

GUIDE_PRINCIPAL = "agent:khive-setup-agents"  # the guide's examples are checked as an agent would run them


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    status: str  # created, updated, unchanged (or would ... with --dry-run)
    backup: Path | None = None


@dataclass(frozen=True, slots=True)
class Setup:
    written: list[Written]
    snippets: dict[str, str]
    launch: Launch
    missing: list[str]  # variables khive.yaml needs that are set neither here nor in .khive/env
    guide: Guide


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="khive", help="the server's name in the clients' configs (default: khive)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    parser.add_argument("--env-file", action="store_true",
                        help=f"also copy the variables khive.yaml needs from this shell into {ENV_FILE} (0600), "
                             "for clients that cannot pass them")


def server_command(project: Path) -> tuple[str, list[str]]:
    """The command an MCP client starts: this installation's khive, pinned to the project."""
    beside = Path(sys.executable).parent / "khive"
    found = beside if beside.is_file() else (Path(shutil.which("khive") or "") if shutil.which("khive") else None)
    if found is not None:
        return str(found.absolute()), ["--project", str(project), "mcp"]
    return sys.executable, ["-m", "khive.cli", "--project", str(project), "mcp"]


def launch_for(project: Path, env: Mapping[str, str]) -> Launch:
    from khive.project.config import load_config, referenced_variables
    from khive.project.locate import CONFIG_NAME

    command, args = server_command(project)
    variables = referenced_variables(load_config(project / CONFIG_NAME))
    settings = {name: env[name] for name in SETTINGS if env.get(name)}
    return Launch(command, tuple(args), variables, settings)


def read_json_config(path: Path) -> dict[str, Any]:
    """The file's JSON object (empty when the file is missing or blank); a ConfigError naming line and fix."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}); fix or remove the "
                          "file, then rerun khive setup-agents (nothing was written)",
                          details={"file": str(path), "line": exc.lineno, "fix": "fix the JSON syntax"}) from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}:1: expected a JSON object with mcpServers, found {type(loaded).__name__}",
                          details={"file": str(path), "line": 1, "fix": 'start from {"mcpServers": {}}'})
    return loaded


def merged_config(path: Path, name: str, entry: dict[str, Any], launch: Launch) -> dict[str, Any]:
    """The file's JSON with khive's entry merged into ``mcpServers[name]``."""
    data = read_json_config(path)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers must be an object of servers, found {type(servers).__name__}",
                          details={"file": str(path), "field": "mcpServers", "fix": "make mcpServers an object"})
    servers[name] = merge_entry(servers.get(name), entry, launch)
    return data


def write_file(path: Path, text: str, *, now: dt.datetime, mode: int | None = None) -> Written:
    """Write ``text`` atomically; keep the previous bytes as a timestamped backup when they differ."""
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return Written(path, "unchanged")
        backup = path.with_name(f"{path.name}.bak-{now:%Y%m%dT%H%M%S%fZ}")
        backup.write_bytes(old)
        if mode is not None:
            backup.chmod(mode)
    else:
        backup = None
    replace_bytes(path, text.encode("utf-8"), mode=mode)
    return Written(path, "updated" if backup else "created", backup)


def env_file_text(path: Path, launch: Launch, env: Mapping[str, str]) -> str:
    """``.khive/env`` with this shell's value of every variable khive.yaml needs; other lines are kept."""
    ours = {name: env[name] for name in launch.variables if env.get(name) and not is_placeholder(env[name])}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else [
        "# Variables khive.yaml refers to (env:VAR), for MCP clients that cannot pass them.",
        "# Secrets: keep this file out of git (.khive/ is git-ignored) and private (chmod 600).",
    ]
    out = []
    for line in lines:
        name = line.strip().removeprefix("export ").split("=", 1)[0].strip()
        if name in ours:
            out.append(f"{name}={json.dumps(ours.pop(name))}")
        else:
            out.append(line)
    out += [f"{name}={json.dumps(value)}" for name, value in ours.items()]
    return "\n".join(out) + "\n"


async def build_guide(project: Path, env: Mapping[str, str]) -> Guide:
    """The guide generated from the project, its examples checked through in-process dispatch as an agent."""
    from khive.bootstrap import open_runtime
    from khive.context import MCP_STDIO, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse
    from khive.guide import generate_guide

    runtime = open_runtime(project, env)
    skill = project / SKILL_PATH
    existing = skill.read_text(encoding="utf-8") if skill.exists() else None

    async def call(text: str, presentation: str) -> dict[str, Any]:
        ctx = Context(runtime, GUIDE_PRINCIPAL, MCP_STDIO, presentation=presentation)
        envelope = await dispatch(parse(text), ctx)
        try:  # what the MCP server sends: an answer it cannot encode would fail the agent, so the example fails
            wire: dict[str, Any] = orjson.loads(orjson.dumps(envelope))
        except TypeError as exc:
            return {"status": "failed", "results": [{"ok": False, "verb": text.split("(", 1)[0], "error": {
                "code": "not_encodable", "message": f"the answer cannot be sent over MCP: {exc}"}}]}
        return wire

    try:
        return await generate_guide(call, existing)
    finally:
        await runtime.aclose()


def setup_agents(project: Path, env: Mapping[str, str], *, name: str = "khive", dry_run: bool = False,
                 with_env_file: bool = False, now: dt.datetime | None = None) -> Setup:
    import anyio

    moment = now or dt.datetime.now(dt.UTC)
    launch = launch_for(project, env)
    planned: list[tuple[Path, str, int | None]] = []
    for client in WRITTEN:  # validate every file before writing any
        path = project / client.where
        data = merged_config(path, name, mcp_servers_entry(launch, client), launch)
        planned.append((path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", None))
    if with_env_file:
        planned.append((env_file(project), env_file_text(env_file(project), launch, env), 0o600))
    guide = anyio.run(build_guide, project, env)
    planned.append((project / SKILL_PATH, guide.text, None))
    written = []
    for path, text, mode in planned:
        if dry_run:
            same = path.exists() and path.read_text(encoding="utf-8") == text
            written.append(Written(path, "unchanged" if same else "would update" if path.exists() else "would create"))
        else:
            written.append(write_file(path, text, now=moment, mode=mode))
    known = {**read_env_file(env_file(project)), **{k: v for k, v in env.items() if not is_placeholder(v)}}
    missing = [variable for variable in launch.variables if not known.get(variable)]
    return Setup(written, snippets(name, launch), launch, missing, guide)


def handler(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.syntax import Syntax

    from khive.cli.agent_clients import PRINTED
    from khive.project.locate import locate_project

    project = locate_project(args.project, os.environ, Path.cwd())
    setup = setup_agents(project, os.environ, name=args.name, dry_run=args.dry_run, with_env_file=args.env_file)
    console = Console()

    def say(text: str = "") -> None:  # piped output is plain and never cut to a width (snippets get copied)
        if console.is_terminal:
            console.print(text, markup=False, highlight=False)
        else:
            print(text)

    if console.is_terminal:
        console.rule(f"khive setup-agents: {project}")
    else:
        say(f"khive setup-agents: {project}")
    for item in setup.written:
        backup = f"  (previous kept as {item.backup.name})" if item.backup else ""
        say(f"  {item.status:<13} {item.path.relative_to(project)}{backup}")
    _print_environment(say, setup, project)
    for title, text in setup.snippets.items():
        say()
        say(title)
        if console.is_terminal:
            console.print(Syntax(text, "toml" if "toml" in title else "json" if text.startswith("{") else "bash",
                                 theme="ansi_dark", word_wrap=True))
        else:
            say(text)
    say()
    say("What each client expands:")
    for client in (*WRITTEN, *PRINTED):
        say(f"  {client.title}: {client.expands}")
    ran = [check for check in setup.guide.checked if check.ok]
    say()
    say(f"The agent guide is {SKILL_PATH}: {len(ran)} examples, each run on this project.")
    for check in setup.guide.checked:
        if not check.ok:
            say(f"  left out: {check.example.key}: {check.error}")
    return 0


def _print_environment(say: Any, setup: Setup, project: Path) -> None:
    from khive.cli.agent_clients import CLAUDE_CODE, CURSOR

    say()
    if not setup.launch.variables:
        say("khive.yaml refers to no environment variables: the clients need none.")
        return
    say(f"The server needs {', '.join(setup.launch.variables)} (khive.yaml's env: references). "
        f"{CLAUDE_CODE.title} {CLAUDE_CODE.expands}; {CURSOR.title} {CURSOR.expands}: the files hold "
        "references, not values.")
    if setup.missing:
        say(f"Not set in this shell nor in {ENV_FILE}: {', '.join(setup.missing)}. Export them where the client "
            f"starts, or put them in {project / ENV_FILE} (VAR=value lines; git-ignored).")
    say(f"Clients that cannot expand variables read them from {project / ENV_FILE}: rerun with --env-file to "
        "copy this shell's values there (0600; keep it out of git).")
