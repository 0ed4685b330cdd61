"""Agents' queries through khive are not "what analysts run" (ADR 0032): a real pg_stat_statements holds an
analyst's queries and an agent's sql.execute and sl.query; the ingest counts the analyst only."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
import psycopg
import pytest
from mcp import Client
from psycopg import sql
from psycopg.conninfo import make_conninfo

from khive.bootstrap import open_runtime
from khive.cli import main
from khive.mcp_server import TOOL_NAME, build_server
from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres]

SETUP = """
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, total numeric(10, 2));
INSERT INTO orders SELECT i, (ARRAY['paid', 'refunded', 'open'])[i % 3 + 1], i * 1.5 FROM generate_series(1, 60) AS i;
"""
ANALYST_QUERY = "SELECT status, count(*) FROM orders WHERE total > {n} GROUP BY status"
AGENT_QUERY = "SELECT count(*) FROM orders WHERE status = 'paid'"


@pytest.fixture
def roles(pg_database: str) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    names = {"analyst": f"analyst_{suffix}", "agent": f"agent_{suffix}"}
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(SETUP)
        for role in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
        conn.execute("SELECT pg_stat_statements_reset()")
    yield {name: make_conninfo(pg_database, user=role) for name, role in names.items()} | {
        "admin": pg_database, "agent_role": names["agent"]}
    with psycopg.connect(pg_database, autocommit=True) as conn:
        for role in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def project(root: Path) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", (
        "connections:\n  wh:\n    driver: postgres\n    url: env:WH_URL\n    sample_values: {enabled: false}\n"
        "    historicSql: {enabled: true, minExecutions: 1, url: env:WH_HISTORY_URL}\n")))
    return root


def operator(root: Path, text: str) -> dict[str, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        main(["--project", str(root), "request", text, "--presentation", "verbose"])
    (result,) = orjson.loads(out.getvalue())["results"]
    assert result["ok"], result
    return dict(result["result"])


def agent(root: Path, env: dict[str, str], texts: list[str]) -> None:
    async def run() -> None:
        runtime = open_runtime(root, env)
        try:
            async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as c:
                for text in texts:
                    answer = await c.call_tool(TOOL_NAME, {"ops": text})
                    assert answer.structured_content is not None
                    assert answer.structured_content["status"] == "success", answer.structured_content
        finally:
            await runtime.aclose()

    anyio.run(run)


def test_agents_queries_do_not_count_as_usage(tmp_path: Path, roles: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"WH_URL": roles["agent"], "WH_HISTORY_URL": roles["admin"]}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    root = project(tmp_path / "p")
    operator(root, 'scan.run(connection="wh")')
    operator(root, 'sl.bootstrap(connection="wh")')
    with psycopg.connect(roles["analyst"], autocommit=True) as conn:
        for n in range(3):
            conn.execute(ANALYST_QUERY.format(n=n))
    execute = f'sql.execute(connection="wh", sql={orjson.dumps(AGENT_QUERY).decode()})'
    query = 'sl.query(connection="wh", measures=["orders.orders_count"], dimensions=["orders.status"])'
    agent(root, env, [execute, execute, execute, query, query])
    operator(root, 'historic_sql.ingest(connection="wh")')
    usage = operator(root, 'historic_sql.usage(connection="wh", table="public.orders")')
    assert usage["totals"] == {"executions": 3, "templates": 1, "distinctUsers": 1, "lastSeen": None}
    assert roles["agent_role"] not in orjson.dumps(usage).decode()
    with psycopg.connect(roles["admin"], autocommit=True) as conn:  # the agent's statements are there, marked
        marked = conn.execute("SELECT sum(calls) FROM pg_stat_statements WHERE query LIKE '/* khive:query */%%' "
                              "AND userid = (SELECT oid FROM pg_roles WHERE rolname = %s)", [roles["agent_role"]]
                              ).fetchone()
    assert marked is not None and marked[0] == 5


def test_the_probe_warns_when_agents_and_history_share_a_role(tmp_path: Path, roles: dict[str, str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "p")
    monkeypatch.setenv("WH_URL", roles["admin"])
    monkeypatch.setenv("WH_HISTORY_URL", roles["admin"])
    apart = {f["code"] for f in operator(root, 'historic_sql.probe(connection="wh")')["findings"]}
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(", url: env:WH_HISTORY_URL", ""))
    shared = operator(root, 'historic_sql.probe(connection="wh")')["findings"]
    assert "shared_role" not in apart
    (warning,) = [f for f in shared if f["code"] == "shared_role"]
    assert warning["severity"] == "warning" and "historicSql.url" in warning["fix"]
