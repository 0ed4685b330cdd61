"""End to end through a client nobody here wrote: the MCP Inspector CLI against ``khive mcp`` on the demo project.

The npm package is installed once into a cache outside the repository (``~/.cache/khive-e2e``,
or ``KHIVE_E2E_CACHE``). 0.15.0 is the newest release without a ``node >= 22`` engine requirement,
so it runs on the machine's Node 20; its CLI passes tool arguments as ``--tool-arg key=value``
(string values, which is what ``ops`` is). Without node/npm, or when the package cannot be
installed, the tests skip with the reason; ``KHIVE_REQUIRE_NPM=1`` (set by ``.ci/run``) makes that
a failure. Every subprocess runs in its own session with a timeout, and is killed as a group.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from khive.cli.demo.run import run_demo

pytestmark = pytest.mark.slow

INSPECTOR = "@modelcontextprotocol/inspector"
VERSION = "0.15.0"
KHIVE = str(Path(sys.executable).parent / "khive")
INSTALL_TIMEOUT_S = 300
CALL_TIMEOUT_S = 120
PASSED_ENV = ("KHIVE_HOME", "KHIVE_SOCKET", "KHIVE_NO_DAEMON")  # the client starts khive with a bare environment


def unavailable(reason: str) -> None:
    if os.environ.get("KHIVE_REQUIRE_NPM") == "1":
        pytest.fail(f"KHIVE_REQUIRE_NPM=1 but the MCP Inspector cannot run: {reason}", pytrace=False)
    pytest.skip(f"MCP Inspector unavailable: {reason}")


def run(command: list[str], *, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run in a new session; on timeout the whole group (npm, node, khive) is killed, so nothing hangs."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"timed out after {timeout}s: {' '.join(command)}\n{err[-2000:]}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.fixture(scope="module")
def inspector() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        unavailable("node and npm are not on PATH")
    cache = Path(os.environ.get("KHIVE_E2E_CACHE") or Path.home() / ".cache" / "khive-e2e") / f"inspector-{VERSION}"
    binary = cache / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        done = run([str(npm), "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error",
                    f"{INSPECTOR}@{VERSION}"], timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0 or not binary.is_file():
            unavailable(f"npm install {INSPECTOR}@{VERSION} failed: {done.stderr.strip()[-500:]}")
    return binary


@pytest.fixture(scope="module")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("e2e") / "demo"
    quiet = Console(file=io.StringIO(), width=120)
    anyio.run(lambda: run_demo(root, dict(os.environ), console=quiet))
    return root


def inspect(inspector: Path, project: Path, *method: str) -> subprocess.CompletedProcess[str]:
    env_args = [part for name in PASSED_ENV if name in os.environ for part in ("-e", f"{name}={os.environ[name]}")]
    return run([str(inspector), "--cli", *env_args, KHIVE, "--project", str(project), "mcp", *method],
               timeout=CALL_TIMEOUT_S, cwd=project)


def call(inspector: Path, project: Path, ops: str) -> dict[str, Any]:
    done = inspect(inspector, project, "--method", "tools/call", "--tool-name", "request", "--tool-arg", f"ops={ops}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    answer = json.loads(done.stdout)
    envelope: dict[str, Any] = answer["structuredContent"]
    assert json.loads(answer["content"][0]["text"]) == envelope
    return envelope


def test_tools_list_shows_the_one_tool(inspector: Path, demo_project: Path) -> None:
    done = inspect(inspector, demo_project, "--method", "tools/list")
    assert done.returncode == 0, done.stderr[-2000:]
    tools = json.loads(done.stdout)["tools"]
    assert [tool["name"] for tool in tools] == ["request"]
    assert "discover.search" in tools[0]["description"] and tools[0]["inputSchema"]["required"] == ["ops"]


def test_discover_search_finds_the_refund_warning(inspector: Path, demo_project: Path) -> None:
    envelope = call(inspector, demo_project, 'discover.search(query="refunds on delivered orders", limit=5)')
    assert envelope["status"] == "success"
    result = envelope["results"][0]["result"]
    found = [ref["id"] for ref in result["refs"]] + [page["id"] for page in result.get("floor", [])]
    assert "sales/refunds-are-separate" in found
    assert any(ref["kind"] == "table" and ref["id"] == "finance.refunds" for ref in result["refs"])


def test_chain_feeds_the_search_result_into_scan_entity(inspector: Path, demo_project: Path) -> None:
    envelope = call(inspector, demo_project, 'discover.search(query="support tickets", kinds=["table"], limit=1) '
                                             '| scan.entity(connection="shop", table=$prev.refs[0].id)')
    assert envelope["status"] == "success", envelope
    first, second = envelope["results"]
    assert first["result"]["refs"][0]["id"] == "support.tickets"
    assert "priority" in json.dumps(second["result"])  # a column of support.tickets


def test_parse_error_is_an_invalid_params_protocol_error(inspector: Path, demo_project: Path) -> None:
    done = inspect(inspector, demo_project, "--method", "tools/call", "--tool-name", "request",
                   "--tool-arg", "ops=sl.search(query=revenue)")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "-32602" in said and "bare word 'revenue' is not a value" in said
