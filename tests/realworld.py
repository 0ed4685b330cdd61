"""A realworld-pg cluster for data tests (``../shared/tools/realworld-pg``: northwind, sakila and chinook in
PostgreSQL with least-privilege roles), up for a module and removed afterwards."""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside a checkout; a worktree under wt/ has it one level further up.
TOOL = next((tool for tool in (base / "shared" / "tools" / "realworld-pg" for base in (ROOT.parent, ROOT.parent.parent))
             if tool.is_file()), ROOT.parent / "shared" / "tools" / "realworld-pg")
DATABASES = ("northwind", "sakila", "chinook")


@contextmanager
def realworld_cluster(prefix: str, *flags: str) -> Iterator[tuple[dict[str, str], Path]]:
    """``env.sh``'s variables and the cluster's DIR (secrets.txt with ``--with-secrets``) of a running cluster
    started with ``flags``; skips the test when the tool is not here."""
    if not TOOL.is_file():
        pytest.skip(f"{TOOL} is not here")
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    up = subprocess.run(["bash", str(TOOL), "up", str(directory), *flags], capture_output=True, text=True, timeout=300)
    try:
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        text = (directory / "env.sh").read_text(encoding="utf-8")
        yield {name: shlex.split(value)[0] for name, value in re.findall(r"^export (\w+)=(.*)$", text, re.M)}, directory
    finally:
        subprocess.run(["bash", str(TOOL), "down", str(directory)], capture_output=True, timeout=120)


def history_config() -> str:
    """``khive.yaml`` with the three databases, each with its history read through ``historicSql.url``."""
    lines = ["version: 1", "connections:"]
    for name in DATABASES:
        upper = name.upper()
        lines += [f"  {name}:", "    driver: postgres", f"    url: env:{upper}_URL",
                  f"    historicSql: {{enabled: true, url: env:{upper}_HISTORY_URL, minExecutions: 1}}"]
    return "\n".join(lines) + "\n"
