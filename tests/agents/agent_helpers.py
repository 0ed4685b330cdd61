"""Helpers for the agent-setup tests: run the CLI, read what setup-agents wrote, and start ``khive mcp``
exactly as a client's config says, with the MCP SDK's minimal environment plus only what the config adds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from khive.agent_guide import SKILL_PATH

KHIVE = str(Path(sys.executable).parent / "khive")
_CLAUDE_CODE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_KHIVE_BLOCK = re.compile(r"^```khive\n(.*?)^```", re.S | re.M)


def khive(*args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 180
          ) -> subprocess.CompletedProcess[str]:
    """The CLI as a person runs it (this session's daemon isolation included, no KHIVE_PROJECT)."""
    full = {key: value for key, value in os.environ.items() if key != "KHIVE_PROJECT"}
    full.update(env or {})
    return subprocess.run([KHIVE, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def claude_code_expand(value: str, environment: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them in .mcp.json (an unset one stays as written)."""
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if environment.get(name):
            return environment[name]
        return default if default is not None else match.group(0)

    return _CLAUDE_CODE_VARIABLE.sub(one, value)


def mcp_entry(project: Path, file: str = ".mcp.json", name: str = "khive") -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((project / file).read_text(encoding="utf-8"))["mcpServers"][name]
    return entry


def launch_params(entry: Mapping[str, Any], environment: Mapping[str, str], cwd: Path) -> StdioServerParameters:
    """What Claude Code starts: command, args and env expanded from ``environment`` (the client's own).

    The SDK's ``stdio_client`` adds only its default variables (HOME, LOGNAME, PATH, SHELL, TERM, USER)."""
    env = {key: claude_code_expand(str(value), environment) for key, value in (entry.get("env") or {}).items()}
    return StdioServerParameters(command=claude_code_expand(entry["command"], environment),
                                 args=[claude_code_expand(arg, environment) for arg in entry["args"]],
                                 env=env, cwd=cwd)


def guide_examples(project: Path) -> list[str]:
    return [block.rstrip("\n") for block in _KHIVE_BLOCK.findall((project / SKILL_PATH).read_text(encoding="utf-8"))]


def run_requests(params: StdioServerParameters, requests: list[str], log: Path) -> tuple[str, list[dict[str, Any]]]:
    """Start the server over stdio, send each request through the ``request`` tool; (tool description, envelopes)."""
    async def talk() -> tuple[str, list[dict[str, Any]]]:
        with log.open("w") as errlog, anyio.fail_after(240):
            async with Client(stdio_client(params, errlog=errlog),
                              client_info=types.Implementation(name="claude-code", version="0")) as client:
                tools = await client.list_tools()
                envelopes = []
                for text in requests:
                    answer = await client.call_tool("request", {"ops": text})
                    envelopes.append(dict(answer.structured_content or {}))
                return tools.tools[0].description or "", envelopes

    return anyio.run(talk)


def failures(envelope: Mapping[str, Any]) -> list[str]:
    return [f"{r.get('verb')}: {r.get('error')}" for r in envelope.get("results", []) if not r.get("ok")]


def budget_reports(envelope: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r["result"]["budget"] for r in envelope.get("results", [])
            if r.get("ok") and isinstance(r.get("result"), dict) and "budget" in r["result"]]
