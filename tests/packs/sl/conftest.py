"""Fixtures of the sl pack: a project with a scanned SQLite shop, ops dispatched as the CLI would."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sl_shop import PACKS, Call, build_shop, configure

from khive.bootstrap import open_runtime
from khive.runtime import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    configure(root, "  shop:\n    driver: sqlite\n    path: shop.sqlite\n"
                    "  spare:\n    driver: sqlite\n    path: spare.sqlite\n")
    build_shop(root / "shop.sqlite")
    sqlite3.connect(root / "spare.sqlite").close()
    return root


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {"KHIVE_PACKS": PACKS})
    yield runtime
    await runtime.aclose()




@pytest.fixture
async def scanned(call: Call) -> Call:
    """``call`` on a project whose shop was scanned."""
    report = await call('scan.run(connection="shop")')
    assert "error" not in report, report
    return call


@pytest.fixture
async def bootstrapped(scanned: Call) -> Call:
    """``call`` on a project whose shop was scanned and bootstrapped into sources."""
    report = await scanned('sl.bootstrap(connection="shop")')
    assert report["errors"] == [] and len(report["created"]) == 5, report
    return scanned
