"""``khive setup-agents``: client configs merged (never clobbered, backed up), the guide, and an entry that works."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from khive.agent_guide import GUIDE, SKILL_PATH
from khive.bootstrap import open_runtime
from khive.project.layout import init_project

KHIVE = str(Path(sys.executable).parent / "khive")


def setup_agents(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("KHIVE_PROJECT", None)
    return subprocess.run([KHIVE, "--project", str(project), "setup-agents", *args], capture_output=True, text=True,
                          env=env, timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init_project(root, "tester")
    return root


def test_fresh_project_gets_both_configs_the_guide_and_snippets(project: Path) -> None:
    result = setup_agents(project)
    assert result.returncode == 0, result.stderr
    claude = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    cursor = json.loads((project / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    for config in (claude, cursor):
        entry = config["mcpServers"]["khive"]
        assert Path(entry["command"]).is_file()
        assert entry["args"] == ["--project", str(project), "mcp"]
    assert claude["mcpServers"]["khive"]["type"] == "stdio"
    assert (project / SKILL_PATH).read_text(encoding="utf-8") == GUIDE
    assert "[mcp_servers.khive]" in result.stdout  # Codex
    assert '"servers"' in result.stdout  # VS Code
    assert result.stdout.count("created") == 3


def test_existing_configs_are_merged_and_backed_up(project: Path) -> None:
    other = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}, "inputs": [{"id": "token"}]}
    original = json.dumps(other)
    (project / ".mcp.json").write_text(original, encoding="utf-8")
    assert setup_agents(project).returncode == 0
    merged = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    assert merged["mcpServers"]["github"] == other["mcpServers"]["github"] and merged["inputs"] == other["inputs"]
    assert "khive" in merged["mcpServers"]
    backups = list(project.glob(".mcp.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == original

    again = setup_agents(project)  # nothing changes: no rewrite, no new backup
    assert again.returncode == 0 and again.stdout.count("unchanged") == 3
    assert list(project.glob(".mcp.json.bak-*")) == backups


def test_invalid_json_is_named_and_left_alone(project: Path) -> None:
    broken = '{\n  "mcpServers": {\n    "x": {"command": "y",}\n  }\n}\n'
    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text(broken, encoding="utf-8")
    result = setup_agents(project)
    assert result.returncode == 2
    assert re.search(r"\.cursor/mcp\.json:3: not valid JSON", result.stderr), result.stderr
    assert (project / ".cursor" / "mcp.json").read_text(encoding="utf-8") == broken
    assert not (project / ".mcp.json").exists()  # every file is checked before any is written


def test_dry_run_writes_nothing(project: Path) -> None:
    result = setup_agents(project, "--dry-run")
    assert result.returncode == 0 and "would create" in result.stdout
    assert not (project / ".mcp.json").exists() and not (project / SKILL_PATH).exists()


def test_guide_names_only_real_verbs(project: Path) -> None:
    async def catalogue() -> set[str]:
        runtime = open_runtime(project, {})
        try:
            return set(runtime.registry.verbs)
        finally:
            await runtime.aclose()

    verbs = anyio.run(catalogue)
    named = set(re.findall(r"\b([a-z_]+\.[a-z_]+)\(", GUIDE))
    assert named and named - {"any.verb"} <= verbs, named - verbs


@pytest.mark.slow
def test_the_written_entry_starts_a_working_server(project: Path, tmp_path: Path) -> None:
    assert setup_agents(project).returncode == 0
    entry = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["khive"]
    keep = ("KHIVE_HOME", "KHIVE_SOCKET", "KHIVE_NO_DAEMON", "PATH", "HOME")  # the test session's daemon isolation
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=tmp_path,
                                   env={name: os.environ[name] for name in keep if name in os.environ})

    async def talk() -> tuple[str, dict[str, object]]:
        with (tmp_path / "stderr.log").open("w") as errlog, anyio.fail_after(60):
            async with Client(stdio_client(params, errlog=errlog),
                              client_info=types.Implementation(name="claude-code", version="0")) as client:
                tools = await client.list_tools()
                result = await client.call_tool("request", {"ops": "ping(echo=1)"})
                return tools.tools[0].description or "", dict(result.structured_content or {})

    description, envelope = anyio.run(talk)
    assert SKILL_PATH in description
    assert envelope["status"] == "success"
