"""Fixtures of the historic_sql tests: the project of ``hsql_project`` and its runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hsql_project import make_project

from khive.bootstrap import open_runtime
from khive.runtime import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {})
    yield runtime
    await runtime.aclose()
