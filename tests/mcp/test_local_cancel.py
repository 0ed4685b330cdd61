"""A call its client cancels, dispatched in the MCP server's own process (no daemon): its DuckDB or SQLite
statement stops, the audit says ``caller_left``, and the connection answers the next call (ADR 0058, eighth
session). Without it the statement ran to the connection's timeout and was audited ``statement_timeout``."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from sqlite_project import duckdb_project, sqlite_project

from khive.audit.store import AuditQuery
from khive.bootstrap import open_runtime
from khive.mcp_server import TOOL_NAME, build_server
from khive.runtime import Runtime

pytestmark = [pytest.mark.anyio]

ENDLESS = {  # statements that run until something stops them
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "duckdb": "SELECT count(*) FROM range(1000000000000) AS t(x) WHERE x % 7 = 3",
}


def make_project(root: Path, driver: str) -> Path:
    if driver == "sqlite":
        sqlite_project(root, "wh", "CREATE TABLE t (x INTEGER);")
    else:
        duckdb_project(root, "wh", "CREATE TABLE t (x INTEGER);")
    config = root / "khive.yaml"
    # long enough that a statement stopped by the timeout instead fails the test
    path = f"path: wh.{driver}\n"
    config.write_text(config.read_text().replace(path, f"{path}    statement_timeout_s: 60\n"))
    return root


async def outcome(runtime: Runtime, request_id: str) -> str | None:
    events = await runtime.audit.query(AuditQuery(request_id=request_id))
    return events[0].outcome if events else None


@pytest.mark.parametrize("driver", ["sqlite", "duckdb"])
async def test_a_locally_dispatched_call_its_client_cancels_stops_its_statement(tmp_path: Path, driver: str) -> None:
    runtime = open_runtime(make_project(tmp_path / "project", driver), {})
    try:
        with anyio.fail_after(50):
            async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as c:
                async with anyio.create_task_group() as calls:
                    calls.start_soon(c.call_tool, TOOL_NAME, {
                        "ops": f'sql.execute(connection="wh", sql="{ENDLESS[driver]}")', "request_id": "left"})
                    while await outcome(runtime, "left") != "running":
                        await anyio.sleep(0.05)
                    await anyio.sleep(0.3)  # the statement is under way
                    calls.cancel_scope.cancel()  # the agent gives up on the call
                while await outcome(runtime, "left") in (None, "running"):
                    await anyio.sleep(0.05)
                after = await c.call_tool(TOOL_NAME, {"ops": 'sql.execute(connection="wh", sql="SELECT 42")'})
        assert await outcome(runtime, "left") == "caller_left"
        assert after.structured_content is not None
        assert after.structured_content["results"][0]["result"]["rows"] == [[42]]
    finally:
        await runtime.aclose()
