"""One demo project per session for the site's tests: ``khive demo`` builds it and its site (.khive/site)."""

from __future__ import annotations

import io
import os

import anyio
import pytest
from rich.console import Console
from sitecheck import Demo

from khive.cli.demo.run import run_demo


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    root = tmp_path_factory.mktemp("site") / "demo"
    buffer = io.StringIO()
    anyio.run(lambda: run_demo(root, dict(os.environ), console=Console(file=buffer, width=200)))
    return Demo(root, buffer.getvalue())
