"""The connection's statement_timeout_s is a ceiling: an agent's timeout_s lowers it, never raises it,
on PostgreSQL and DuckDB, and the answer says which limit applied."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from khive.bootstrap import open_runtime
from khive.context import Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio

# About 3e8 hashed rows: seconds of work on any machine, so a 1 s ceiling always cuts it short.
SLOW_DUCKDB = "SELECT count(*) AS n FROM range(20000) AS a, range(15000) AS b WHERE hash(a.range + b.range) % 7 = 1"
# One pg_sleep below the ceiling passes the gate; three rows of it run past the ceiling.
SLOW_POSTGRES = "SELECT pg_sleep(0.9) AS s FROM generate_series(1, 3)"


def make_project(root: Path, connection: str) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", f"connections:\n  wh: {connection}\n"))
    return root


def duck_runtime(tmp_path: Path) -> Runtime:
    root = make_project(tmp_path / "proj", "{driver: duckdb, path: wh.duckdb, statement_timeout_s: 1}")
    duckdb.connect(str(root / "wh.duckdb")).execute("CREATE TABLE t AS SELECT 1 AS x").close()
    return open_runtime(root, {"KHIVE_PACKS": "core,scan"})


def pg_runtime(tmp_path: Path, url: str) -> Runtime:
    # the throwaway cluster's role is a superuser: these tests are about timeouts, not roles
    root = make_project(tmp_path / "proj", "{driver: postgres, url: env:WH_URL, statement_timeout_s: 1, "
                                           "allowPrivilegedRole: true}")
    return open_runtime(root, {"KHIVE_PACKS": "core,scan", "WH_URL": url})


@pytest.fixture
async def duck(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = duck_runtime(tmp_path)
    yield runtime
    await runtime.aclose()


@pytest.fixture
async def pg(tmp_path: Path, pg_database: str) -> AsyncIterator[Runtime]:
    runtime = pg_runtime(tmp_path, pg_database)
    yield runtime
    await runtime.aclose()


@pytest.fixture(params=["duckdb", "postgres"])
async def wh(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Runtime]:
    """The same warehouse connection on either engine, both with statement_timeout_s: 1."""
    if request.param == "duckdb":
        runtime = duck_runtime(tmp_path)
    else:
        runtime = pg_runtime(tmp_path, request.getfixturevalue("pg_database"))
    yield runtime
    await runtime.aclose()


async def execute(runtime: Runtime, sql: str, **extra: Any) -> dict[str, Any]:
    args = "".join(f", {name}={value}" for name, value in extra.items())
    text = f'sql.execute(connection="wh", sql="{sql}"{args})'
    envelope = await dispatch(parse(text), Context(runtime, "agent:t", "mcp-stdio", presentation="verbose"))
    result: dict[str, Any] = envelope["results"][0]
    return result


async def test_a_longer_timeout_from_the_agent_is_capped(wh: Runtime) -> None:
    runtime = wh
    capped = await execute(runtime, "SELECT 1 AS one", timeout_s=10)
    assert capped["result"]["timeout"] == {"seconds": 1, "source": "connection"}
    assert any("timeout_s=10 is above connection 'wh'" in note for note in capped["result"]["notes"])
    lower = await execute(runtime, "SELECT 1 AS one", timeout_s=0.5)
    assert lower["result"]["timeout"] == {"seconds": 0.5, "source": "request"} and lower["result"]["notes"] == []
    default = await execute(runtime, "SELECT 1 AS one")
    assert default["result"]["timeout"] == {"seconds": 1, "source": "connection"} and default["result"]["notes"] == []


async def test_a_slow_statement_stops_at_the_connections_ceiling(wh: Runtime) -> None:
    runtime = wh
    sql = SLOW_DUCKDB if runtime.connection("wh").driver == "duckdb" else SLOW_POSTGRES
    failed = await execute(runtime, sql, timeout_s=60)
    error = failed["error"]
    assert error["code"] == "statement_timeout", error
    assert error["details"]["timeoutS"] == 1 and error["details"]["timeoutSource"] == "connection"
    assert "statement_timeout_s" in error["message"]
    again = await execute(runtime, "SELECT 1 AS one", timeout_s=60)  # the pooled session is still good
    assert again["ok"], again


async def test_a_request_timeout_below_the_ceiling_is_named_as_the_limit(duck: Runtime) -> None:
    failed = await execute(duck, SLOW_DUCKDB, timeout_s=0.3)
    assert failed["error"]["details"]["timeoutS"] == 0.3
    assert failed["error"]["details"]["timeoutSource"] == "request"
    assert "this request's timeout_s" in failed["error"]["message"]


async def test_the_gate_bounds_pg_sleep_by_the_ceiling_not_the_request(pg: Runtime) -> None:
    refused = await execute(pg, "SELECT pg_sleep(3)", timeout_s=10)
    assert refused["error"]["code"] == "sql_refused"
    assert "not below the 1s statement timeout" in refused["error"]["message"]
