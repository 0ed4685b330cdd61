"""Shared fixtures. ``postgres_dsn``: one throwaway PostgreSQL cluster per session (see pgcluster.py);
``pg_database``: a fresh database in it for each test. Without PostgreSQL these tests skip, unless
KHIVE_REQUIRE_POSTGRES=1 (CI), where they fail instead. ``mysql_server``: one throwaway MariaDB per
session (mysqlserver.py), skipped without one unless KHIVE_REQUIRE_MYSQL=1."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import daemons
import mysqlserver
import pgcluster
import pytest
from psycopg.conninfo import make_conninfo

from khive.results import RESULT_CHECK_ENV, ResultCheck, set_result_check

# The Snowflake connector probes cloud metadata endpoints for its telemetry unless told not to: tests talk
# to 127.0.0.1 only (khive's open_runtime sets this too, for projects with a Snowflake connection).
os.environ.setdefault("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP SDK, the daemon and the dispatcher all do)."""
    return "asyncio"


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


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[mysqlserver.Server]:
    with ExitStack() as stack:
        try:
            if importlib.util.find_spec("pymysql") is None:
                raise mysqlserver.ServerUnavailable("PyMySQL is not installed (pip install 'khive[mysql]')")
            server = stack.enter_context(mysqlserver.running_server())
        except mysqlserver.ServerUnavailable as exc:
            reason = str(exc)
        else:
            yield server
            return
    if os.environ.get("KHIVE_REQUIRE_MYSQL") == "1":
        pytest.fail(f"KHIVE_REQUIRE_MYSQL=1 but no MariaDB server: {reason}", pytrace=False)
    pytest.skip(f"no MariaDB server: {reason}")


@pytest.fixture(scope="session", autouse=True)
def _strict_results() -> Iterator[None]:
    """Every result of every verb is checked against its declared model (ADR 0039): in this process, and in
    the CLI, daemon and MCP processes the tests start (they read KHIVE_RESULT_CHECK)."""
    set_result_check(ResultCheck.STRICT)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(RESULT_CHECK_ENV, ResultCheck.STRICT.value)
        yield
    set_result_check(ResultCheck.KEYS)


DAEMON_VARIABLES = ("KHIVE_HOME", "KHIVE_SOCKET", "KHIVE_NO_DAEMON", "KHIVE_DAEMON_STRICT", "KHIVE_DAEMON_IDLE")


@pytest.fixture(scope="session", autouse=True)
def _daemon_isolation() -> Iterator[None]:
    """No test reaches the real ~/.khive or leaves a daemon behind: the session runs with its own
    KHIVE_HOME/KHIVE_SOCKET and KHIVE_NO_DAEMON=1; tests/daemon/ opts back in for its subprocesses.
    A daemon that was started here anyway is killed at the end (it would idle out in 60 s too)."""
    home = Path(tempfile.mkdtemp(prefix="khive-test-", dir="/tmp"))  # short: socket paths have a 107-byte limit
    with pytest.MonkeyPatch.context() as patch:
        for name in DAEMON_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("KHIVE_HOME", str(home))
        patch.setenv("KHIVE_SOCKET", str(home / "khived.sock"))
        patch.setenv("KHIVE_NO_DAEMON", "1")
        patch.setenv("KHIVE_DAEMON_IDLE", "60")
        try:
            yield
        finally:
            daemons.kill_daemon(home)
            shutil.rmtree(home, ignore_errors=True)
