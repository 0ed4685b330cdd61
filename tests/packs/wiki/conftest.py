from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from khive.bootstrap import open_runtime
from khive.runtime import Runtime
from khive.scaffold import init_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_project(tmp_path / "proj", "ann")
    return tmp_path / "proj"


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(project, {"KHIVE_PACKS": "core,wiki"})
    yield runtime
    await runtime.aclose()
