"""Fixtures for the value tests: one project per module over a PostgreSQL, a DuckDB and a SQLite type
matrix (scanned once), and realworld-pg for the data-backed check."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pgcluster
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from value_matrix import LEDGER_SOURCE, Matrix, duck_matrix, pg_matrix_sql, sqlite_matrix
from value_transports import Site, run_ops

from khive.scaffold import init_project

# ../shared beside the checkout (a git worktree may sit one level deeper)
REALWORLD_PG = next((found for folder in Path(__file__).resolve().parents[2].parents
                     if (found := folder / "shared" / "tools" / "realworld-pg").exists()),
                    Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "realworld-pg")
CONNECTIONS = """connections:
  pg: {driver: postgres, url: env:VALUES_PG_URL, allowPrivilegedRole: true}  # the throwaway cluster's superuser
  duck: {driver: duckdb, path: matrix.duckdb}
  lite: {driver: sqlite, path: matrix.sqlite}
"""


@pytest.fixture(scope="module")
def matrix(postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    database = pgcluster.create_database(postgres_dsn)
    dsn = make_conninfo(postgres_dsn, dbname=database)
    home = Path(tempfile.mkdtemp(prefix="kv-", dir="/tmp"))  # short: a socket path has a 107-byte limit
    site = Site(tmp_path_factory.mktemp("values") / "project", home, {"VALUES_PG_URL": dsn})
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(pg_matrix_sql().encode())  # a fixed script, no parameters
        init_project(site.project, "tester")
        config = site.project / "khive.yaml"
        config.write_text(config.read_text().replace("connections: {}\n", CONNECTIONS))
        duck_matrix(site.project / "matrix.duckdb")
        sqlite_matrix(site.project / "matrix.sqlite")
        (site.project / "semantic-layer" / "pg").mkdir(parents=True)
        (site.project / "semantic-layer" / "pg" / "ledger.yaml").write_text(LEDGER_SOURCE)
        scans = run_ops(site.project, dict(site.extra_env), '[scan.run(connection="pg"), scan.run(connection="duck"), '
                                                           'scan.run(connection="lite")]')
        assert all(result["ok"] for result in scans), scans
        yield Matrix(site, dsn, site.project / "matrix.duckdb", site.project / "matrix.sqlite")
    finally:
        site.stop_daemon()
        shutil.rmtree(home, ignore_errors=True)
        pgcluster.drop_database(postgres_dsn, database)


@pytest.fixture(scope="session")
def realworld_pg() -> Iterator[dict[str, str]]:
    """A loaded realworld-pg warehouse with --types: env.json's variables and its DIR (tools README)."""
    if not REALWORLD_PG.exists():
        pytest.skip("../shared/tools/realworld-pg not found")
    root = Path(tempfile.mkdtemp(prefix="rwpg-"))  # the empty folder itself is DIR
    up = subprocess.run(["bash", str(REALWORLD_PG), "up", str(root), "--types"], capture_output=True, text=True,
                        check=False)
    try:
        if up.returncode != 0:
            pytest.fail(f"realworld-pg up failed:\n{up.stderr}")
        yield {**json.loads((root / "env.json").read_text()), "dir": str(root)}
    finally:
        subprocess.run(["bash", str(REALWORLD_PG), "down", str(root)], capture_output=True, check=False)
