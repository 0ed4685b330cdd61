"""``khive setup-agents`` writes and prints client configs that carry the environment the server needs,
in each client's own syntax, and re-running merges into what the user has instead of resetting it."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from agent_helpers import khive, mcp_entry, ok

from khive.agent_guide import SKILL_PATH
from khive.scaffold import init_project

WAREHOUSE = """\
connections:
  warehouse:
    driver: postgres
    url: env:WAREHOUSE_URL
    historicSql: {enabled: true, url: env:WAREHOUSE_HISTORY_URL}
server:
  tokens:
    - {token: env:KHIVE_HTTP_TOKEN, principal: "agent:ci"}
"""
NEEDED = ["WAREHOUSE_HISTORY_URL", "WAREHOUSE_URL"]  # not the HTTP token: `khive mcp` never reads it


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init_project(root, "tester")
    (root / "khive.yaml").write_text(WAREHOUSE, encoding="utf-8")
    return root


def setup(project: Path, *args: str, **env: str) -> str:
    """setup-agents with WAREHOUSE_URL set in the shell (to a server that is not there: nothing connects)."""
    return ok(khive("setup-agents", *args, cwd=project, env={"WAREHOUSE_URL": "host=/nonexistent dbname=x",
                                                               **env})).stdout


def test_each_client_gets_the_variables_in_its_own_syntax(project: Path) -> None:
    out = setup(project, KHIVE_HOME="/srv/khive-home")
    claude = mcp_entry(project)
    assert claude["type"] == "stdio" and claude["args"] == ["--project", str(project), "mcp"]
    assert {k: v for k, v in claude["env"].items() if k in NEEDED} == {name: f"${{{name}}}" for name in NEEDED}
    assert claude["env"]["KHIVE_HOME"] == "/srv/khive-home"  # a setting, written as its value
    assert "KHIVE_HTTP_TOKEN" not in claude["env"]
    cursor = mcp_entry(project, ".cursor/mcp.json")
    assert {k: v for k, v in cursor["env"].items() if k in NEEDED} == {name: f"${{env:{name}}}" for name in NEEDED}
    assert 'env_vars = ["WAREHOUSE_HISTORY_URL", "WAREHOUSE_URL"]' in out  # Codex
    assert '"WAREHOUSE_URL": "{env:WAREHOUSE_URL}"' in out and '"environment"' in out  # opencode
    assert '"WAREHOUSE_URL": "${env:WAREHOUSE_URL}"' in out and '"servers"' in out  # VS Code
    assert "-e WAREHOUSE_URL='${WAREHOUSE_URL}'" in out  # claude mcp add, user-wide
    # The values never land in a file; Claude Desktop gets no reference it could not expand.
    for path in (project / ".mcp.json", project / ".cursor" / "mcp.json"):
        assert "nonexistent" not in path.read_text(encoding="utf-8")
    desktop = out[out.index("Claude Desktop, Windsurf"):out.index("VS Code (")]
    assert "WAREHOUSE_URL" not in desktop and "/srv/khive-home" in desktop
    assert "Not set in this shell nor in .khive/env: WAREHOUSE_HISTORY_URL" in out
    assert "--env-file" in out and ".khive/env" in out


def test_rerunning_keeps_what_the_user_added_and_updates_what_khive_owns(project: Path) -> None:
    mine = {"mcpServers": {
        "khive": {"command": "/old/khive", "args": ["mcp"], "timeout": 30, "disabled": False,
                  "env": {"PGSSLROOTCERT": "/etc/ssl/root.crt", "WAREHOUSE_URL": "host=db user=me",
                          "OLD_URL": "${OLD_URL}"}},
        "github": {"command": "gh-mcp"}}}
    (project / ".mcp.json").write_text(json.dumps(mine), encoding="utf-8")
    setup(project)
    entry = mcp_entry(project)
    assert entry["command"] != "/old/khive" and entry["args"] == ["--project", str(project), "mcp"]
    assert entry["timeout"] == 30 and entry["disabled"] is False  # keys the user added survive
    assert entry["env"]["PGSSLROOTCERT"] == "/etc/ssl/root.crt"
    assert entry["env"]["WAREHOUSE_URL"] == "host=db user=me"  # a value the user chose stays
    assert entry["env"]["WAREHOUSE_HISTORY_URL"] == "${WAREHOUSE_HISTORY_URL}"  # what was missing is added
    assert "OLD_URL" not in entry["env"]  # a reference for a variable khive.yaml no longer needs goes
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["github"] == {"command": "gh-mcp"}

    again = setup(project)
    assert again.count("unchanged") >= 2 and mcp_entry(project) == entry  # a rerun changes nothing


def test_env_file_copies_this_shells_values_privately(project: Path) -> None:
    (project / ".khive" / "env").write_text("# mine\nOTHER=1\nWAREHOUSE_URL=stale\n", encoding="utf-8")
    setup(project, "--env-file", WAREHOUSE_HISTORY_URL="host=/x user=history")
    env_file = project / ".khive" / "env"
    lines = env_file.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["# mine", "OTHER=1"]
    assert 'WAREHOUSE_URL="host=/nonexistent dbname=x"' in lines
    assert 'WAREHOUSE_HISTORY_URL="host=/x user=history"' in lines
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert ".khive/" in (project / ".gitignore").read_text(encoding="utf-8")  # khive init keeps it out of git


def test_dry_run_writes_nothing_and_invalid_json_is_left_alone(project: Path) -> None:
    assert "would create" in setup(project, "--dry-run")
    assert not (project / ".mcp.json").exists() and not (project / SKILL_PATH).exists()
    broken = '{\n  "mcpServers": {\n    "x": {"command": "y",}\n  }\n}\n'
    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text(broken, encoding="utf-8")
    result = khive("setup-agents", cwd=project)
    assert result.returncode == 2 and ".cursor/mcp.json:3: not valid JSON" in result.stderr
    assert (project / ".cursor" / "mcp.json").read_text(encoding="utf-8") == broken
    assert not (project / ".mcp.json").exists()  # every file is checked before any is written


def test_the_readme_shows_the_configs_setup_agents_writes_and_prints(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Connect your agent"):]
    jsonc = section[section.index("```jsonc\n") + 9:]
    jsonc = jsonc[:jsonc.index("```")]
    shown = [json.loads(block) for block in re.split(r"^//.*\n", jsonc, flags=re.M) if block.strip()]
    toml = section[section.index("```toml\n") + 8:]
    codex = [line for line in toml[:toml.index("```")].splitlines() if not line.startswith("#")]

    project = tmp_path / "analytics"
    init_project(project, "ann")
    (project / "khive.yaml").write_text("connections:\n  warehouse: {driver: postgres, url: env:DATABASE_URL}\n",
                                        encoding="utf-8")
    result = khive("setup-agents", cwd=project, env={"KHIVE_HOME": "", "KHIVE_SOCKET": ""})
    assert result.returncode == 0, result.stderr
    entry = mcp_entry(project)

    def as_here(config: dict[str, object]) -> dict[str, object]:
        text = json.dumps(config).replace("/home/ann/khive/.venv/bin/khive", entry["command"])
        loaded: dict[str, object] = json.loads(text.replace("/home/ann/analytics", str(project)))
        return loaded

    claude, cursor, vscode, opencode, desktop = (as_here(config) for config in shown)
    assert claude == json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    assert cursor == json.loads((project / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    printed = result.stdout
    snippets = [json.loads(block) for block in re.findall(r"^\{\n.*?^\}$", printed, flags=re.M | re.S)]
    for config in (vscode, opencode, desktop):
        assert config in snippets, config
    here = "\n".join(codex).replace("/home/ann/khive/.venv/bin/khive", entry["command"]).replace(
        "/home/ann/analytics", str(project))
    assert here in printed
