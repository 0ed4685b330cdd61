"""``khive demo DIR``, run as a person runs it: a subprocess, twice (re-running is idempotent)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from khive.cli.demo.run import CONFIG, write_config
from khive.errors import ConfigError

KHIVE = str(Path(sys.executable).parent / "khive")


def khive(*args: str, env: dict[str, str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "COLUMNS": "160", **env}
    full.pop("KHIVE_PROJECT", None)
    return subprocess.run([KHIVE, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def daemon_env(home: Path) -> dict[str, str]:
    return {"KHIVE_HOME": str(home), "KHIVE_SOCKET": str(home / "khived.sock"), "KHIVE_NO_DAEMON": "0"}


@pytest.fixture
def daemon_home() -> Iterator[Path]:
    """A private, short KHIVE_HOME (Unix socket paths are limited to 107 bytes); the daemon is stopped after."""
    with tempfile.TemporaryDirectory(prefix="kd-", dir="/tmp") as home:
        yield Path(home)
        khive("daemon", "stop", env=daemon_env(Path(home)), cwd=Path(home), timeout=60)


def test_demo_builds_everything_in_the_directory_and_reruns_idempotently(tmp_path: Path, daemon_home: Path) -> None:
    target = tmp_path / "demo"
    env = daemon_env(daemon_home)
    first = khive("demo", str(target), env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    out = first.stdout
    for phase in ("project", "warehouse", "query log", "scan", "semantic layer", "query history", "wiki pages",
                  "daemon", "requests"):
        assert phase in out
    for title in ("single op", "parallel batch", "chain with $prev", "budgeted lookup",
                  "operator verb over the wire", "syntax error"):
        assert title in out
    assert out.count("status: success") == 4  # single, batch, chain, lookup: every op answered
    assert "✓ scan.entity support.tickets" in out  # the chain fed the search result into the second op
    assert "✗ scan.run permission_denied" in out  # an operator verb over MCP
    assert "parse_error" in out and "did you mean" in out
    # Everything generated lives in the target directory.
    assert (target / "data" / "shop.duckdb").is_file() and (target / "data" / "query-log.jsonl").is_file()
    assert len(list((target / "semantic-layer" / "shop").glob("*.yaml"))) >= 15
    assert (target / "wiki" / "global" / "sales" / "refunds-are-separate.md").is_file()
    assert list((target / "raw-sources" / "shop" / "live-database").iterdir())
    if khive("daemon", "--help", env=env, cwd=target).returncode == 0:  # the daemon is an installed command
        status = khive("daemon", "status", env=env, cwd=target)
        assert status.returncode == 0, out[-2000:] + status.stderr  # the demo left a warm daemon for the agent
    else:
        assert "daemon not installed" in out

    sources = {p.name: p.read_bytes() for p in (target / "semantic-layer" / "shop").glob("*.yaml")}
    again = khive("demo", str(target), "--no-daemon", env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "(unchanged)" in again.stdout  # the warehouse is not rebuilt
    assert "4 pages (0 changed)" in again.stdout
    assert {p.name: p.read_bytes() for p in (target / "semantic-layer" / "shop").glob("*.yaml")} == sources
    assert len(list((target / "raw-sources" / "shop" / "live-database").iterdir())) == 1  # unchanged: no new run


def test_demo_refuses_a_project_it_did_not_create(tmp_path: Path) -> None:
    (tmp_path / "khive.yaml").write_text("version: 1\nconnections:\n  prod: {driver: sqlite, path: x.db}\n",
                                         encoding="utf-8")
    with pytest.raises(ConfigError, match="did not create"):
        write_config(tmp_path)
    assert "prod" in (tmp_path / "khive.yaml").read_text(encoding="utf-8")


def test_demo_config_is_rewritten_only_when_it_differs(tmp_path: Path) -> None:
    assert write_config(tmp_path)
    assert not write_config(tmp_path)
    assert (tmp_path / "khive.yaml").read_text(encoding="utf-8") == CONFIG


def test_demo_may_take_over_an_untouched_khive_init(tmp_path: Path) -> None:
    from khive.scaffold import init_project

    init_project(tmp_path, "tester")
    assert write_config(tmp_path)
    (tmp_path / "khive.yaml").write_text("version: 1\nconnections: {}\nauth: {default: deny}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did not create"):  # edited by a person: refused
        write_config(tmp_path)
