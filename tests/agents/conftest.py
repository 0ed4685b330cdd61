"""Two differently shaped projects, built once per session the way a person builds them (the CLI):

``demo_project``     ``khive demo`` (DuckDB shop: 5 schemas, 19 tables, a query log, wiki pages)
``library_project``  a SQLite lending library (``library_project.py``) with its own query log, a scan,
                     a semantic layer, an ingest and one wiki page: other names everywhere
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import khive, ok
from library_project import build_library


@pytest.fixture(scope="session")
def library_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("library") / "library"
    build_library(root)
    ok(khive("scan", "library", cwd=root))
    ok(khive("request", 'sl.bootstrap(connection="library")', cwd=root))
    ok(khive("ingest", "library", cwd=root))
    ok(khive("request", 'wiki.write(key="lending/late-fees", kind="warning", summary="Late fees are charged on '
                        'return, not while a loan is open", body="Sum late_fee over returned loans only.")',
             cwd=root))
    return root


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "demo"
    ok(khive("demo", str(root), "--no-daemon", cwd=root.parent))
    return root
