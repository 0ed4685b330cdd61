"""Fixtures for the daemon tests: a short private KHIVE_HOME, a project, and real ``khive`` processes.

Every test gets its own daemon home (and so its own socket); whatever daemon a test started is
stopped at teardown, first politely and then by its pid, so no process outlives the test.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import Daemon, daemon_env, stop

from khive.scaffold import init_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    init_project(root, "tester")
    return root


@pytest.fixture
def daemon() -> Iterator[Daemon]:
    home = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))  # short: a socket path has a 107-byte limit
    made = Daemon(home, daemon_env(home))
    try:
        yield made
    finally:
        stop(made)
        shutil.rmtree(home, ignore_errors=True)
