"""Shared fixtures. ``postgres_dsn``: one throwaway PostgreSQL cluster per session (see pgcluster.py);
``pg_database``: a fresh database in it for each test. Without PostgreSQL these tests skip, unless
KHIVE_REQUIRE_POSTGRES=1 (CI), where they fail instead."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack

import pgcluster
import pytest
from psycopg.conninfo import make_conninfo


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    with ExitStack() as stack:
        try:
            cluster = stack.enter_context(pgcluster.running_cluster())
        except pgcluster.ClusterUnavailable as exc:
            reason = str(exc)
        else:
            yield cluster.dsn()
            return
    if os.environ.get("KHIVE_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"KHIVE_REQUIRE_POSTGRES=1 but no PostgreSQL cluster: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL cluster: {reason}")


@pytest.fixture
def pg_database(postgres_dsn: str) -> Iterator[str]:
    name = pgcluster.create_database(postgres_dsn)
    yield make_conninfo(postgres_dsn, dbname=name)
    pgcluster.drop_database(postgres_dsn, name)
