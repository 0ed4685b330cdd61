"""One demo warehouse per test session: building it takes about a second."""

from __future__ import annotations

from pathlib import Path

import pytest

from khive.cli.demo.warehouse import WarehouseBuild, build_warehouse


@pytest.fixture(scope="session")
def shop(tmp_path_factory: pytest.TempPathFactory) -> WarehouseBuild:
    return build_warehouse(tmp_path_factory.mktemp("shop") / "shop.duckdb")


@pytest.fixture
def shop_path(shop: WarehouseBuild) -> Path:
    return shop.path
