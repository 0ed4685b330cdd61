"""How each MCP client is told to start khive, with the environment the server needs.

Clients start ``khive mcp`` with a small environment (the MCP SDKs pass HOME, PATH, SHELL, TERM, USER,
LOGNAME; an app launched from the desktop never read a shell profile), so every entry carries the
variables ``khive.yaml`` refers to (``env:VAR``) in the client's own expansion syntax, the value
staying in the user's environment rather than in the file:

    Claude Code  .mcp.json            "${VAR}"          (also ${VAR:-default}; in command, args, env)
    Cursor       .cursor/mcp.json     "${env:VAR}"
    VS Code      .vscode/mcp.json     "${env:VAR}"
    opencode     opencode.json        "{env:VAR}"       (the key is `environment`, the command one list)
    Codex        ~/.codex/config.toml env_vars = [...]  (forwards the named variables from Codex's environment)
    Claude Desktop and other mcpServers configs: no expansion; the server reads <project>/.khive/env

``KHIVE_HOME`` and ``KHIVE_SOCKET`` (where the daemon lives) are settings, not secrets: when set, they
are written as values. Entries in a file the user already has are merged (``merge_entry``): the
command, its arguments and the settings are khive's and follow this installation; an ``env`` value the
user wrote stays; a reference khive wrote for a variable khive.yaml no longer needs is removed; any
other key of the entry (``disabled``, ``timeout``, ...) is left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

SETTINGS = ("KHIVE_HOME", "KHIVE_SOCKET")


@dataclass(frozen=True, slots=True)
class Launch:
    """What every client starts: the command, its arguments and the environment it must pass."""

    command: str
    args: tuple[str, ...]
    variables: tuple[str, ...]  # the env: references of khive.yaml, passed by reference
    settings: Mapping[str, str] = field(default_factory=dict)  # KHIVE_HOME / KHIVE_SOCKET, passed by value


@dataclass(frozen=True, slots=True)
class Client:
    title: str
    where: str  # the file (relative to the project when ``in_project``)
    in_project: bool  # setup-agents writes it; otherwise it prints the snippet
    reference: Callable[[str], str] | None  # VAR -> the client's expansion syntax; None: it cannot expand
    expands: str  # one line for people: what the client expands


def _dollar(name: str) -> str:
    return "${" + name + "}"


def _dollar_env(name: str) -> str:
    return "${env:" + name + "}"


def _brace_env(name: str) -> str:
    return "{env:" + name + "}"


CLAUDE_CODE = Client("Claude Code", ".mcp.json", True, _dollar,
                     "expands ${VAR} and ${VAR:-default} from the environment Claude Code runs in")
CURSOR = Client("Cursor", ".cursor/mcp.json", True, _dollar_env, "expands ${env:VAR} from Cursor's environment")
VSCODE = Client("VS Code", ".vscode/mcp.json", False, _dollar_env,
                "expands ${env:VAR} (and ${input:id}, which prompts once and stores the value)")
OPENCODE = Client("opencode", "opencode.json", False, _brace_env, "expands {env:VAR} anywhere in the file")
CODEX = Client("Codex", "~/.codex/config.toml", False, None,
               "no expansion; env_vars = [...] forwards the named variables from Codex's environment")
CLAUDE_DESKTOP = Client("Claude Desktop, Windsurf and other mcpServers JSON configs",
                        "claude_desktop_config.json (or the client's mcp config)", False, None,
                        "no expansion and no shell profile: the server reads the project's .khive/env")
WRITTEN = (CLAUDE_CODE, CURSOR)
PRINTED = (CODEX, CLAUDE_DESKTOP, VSCODE, OPENCODE)
_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def env_block(launch: Launch, client: Client) -> dict[str, str]:
    """The ``env`` a client passes: each variable by reference (when the client can expand), then the settings."""
    block = {name: client.reference(name) for name in launch.variables} if client.reference else {}
    block.update(launch.settings)
    return block


def mcp_servers_entry(launch: Launch, client: Client) -> dict[str, Any]:
    """The entry under ``mcpServers`` (Claude Code, Cursor, Claude Desktop and the like)."""
    entry: dict[str, Any] = {"type": "stdio"} if client is CLAUDE_CODE else {}
    entry.update({"command": launch.command, "args": list(launch.args), "env": env_block(launch, client)})
    return entry


def self_reference(name: str, value: Any) -> bool:
    """True when ``value`` is a reference to ``name`` itself in any client's syntax (what khive writes)."""
    match = _REFERENCE.fullmatch(value.strip()) if isinstance(value, str) else None
    return match is not None and name in match.groups()


def merge_entry(existing: Any, ours: Mapping[str, Any], launch: Launch) -> dict[str, Any]:
    """``existing`` (the entry in the user's file) updated with ``ours``, keeping what the user added."""
    if not isinstance(existing, Mapping):
        return dict(ours)
    merged = dict(existing)
    for key, value in ours.items():
        if key != "env":
            merged[key] = value
    env = dict(existing.get("env") or {}) if isinstance(existing.get("env"), Mapping) else {}
    for name in [name for name, value in env.items() if self_reference(name, value)]:
        if name not in launch.variables:
            del env[name]  # khive wrote it for a variable khive.yaml no longer refers to
    for name, value in (ours.get("env") or {}).items():
        if name in launch.settings or name not in env:
            env[name] = value
    merged["env"] = env
    return merged


def snippets(name: str, launch: Launch) -> dict[str, str]:
    """The configs setup-agents prints, by client title (for files outside the project)."""
    generic = {"mcpServers": {name: mcp_servers_entry(launch, CLAUDE_DESKTOP)}}
    vscode = {"servers": {name: {"type": "stdio", "command": launch.command, "args": list(launch.args),
                                 "env": env_block(launch, VSCODE)}}}
    opencode = {"$schema": "https://opencode.ai/config.json",
                "mcp": {name: {"type": "local", "command": [launch.command, *launch.args], "enabled": True,
                               "environment": env_block(launch, OPENCODE)}}}
    codex = [f"[mcp_servers.{name}]", f"command = {json.dumps(launch.command)}",
             f"args = [{', '.join(json.dumps(arg) for arg in launch.args)}]"]
    if launch.variables:
        codex.append(f"env_vars = [{', '.join(json.dumps(v) for v in launch.variables)}]")
    if launch.settings:
        codex.append("env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in launch.settings.items()) + " }")
    user_wide = ["claude", "mcp", "add", "--scope", "user", name]
    user_wide += [f"-e {k}='{_dollar(k)}'" for k in launch.variables]
    user_wide += [f"-e {k}={json.dumps(v)}" for k, v in launch.settings.items()]
    return {
        f"{CODEX.title} ({CODEX.where})": "\n".join(codex),
        f"{CLAUDE_DESKTOP.title}": json.dumps(generic, indent=2),
        f"{VSCODE.title} ({VSCODE.where})": json.dumps(vscode, indent=2),
        f"{OPENCODE.title} ({OPENCODE.where} in the project, or ~/.config/opencode/opencode.json)":
            json.dumps(opencode, indent=2),
        "Claude Code, user-wide instead of per project": " ".join([*user_wide, "--", launch.command, *launch.args]),
    }
