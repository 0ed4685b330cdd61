"""Fixtures of the discover pack: a real project (a scanned SQLite shop, SL sources, wiki pages)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from discover_project import PACKS, Call, configure

from khive.bootstrap import open_runtime
from khive.runtime import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return configure(tmp_path / "proj")


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {"KHIVE_PACKS": PACKS})
    yield runtime
    await runtime.aclose()


@pytest.fixture
async def scanned(call: Call) -> Call:
    """``call`` on a project whose shop and billing databases were scanned and the shop bootstrapped."""
    for connection in ("shop", "billing"):
        report = await call(f'scan.run(connection="{connection}")')
        assert "error" not in report, report
    report = await call('sl.bootstrap(connection="shop")')
    assert report["errors"] == [], report
    return call
