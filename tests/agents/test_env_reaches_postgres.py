"""The written configs reach the database: ``khive mcp`` started exactly as ``.mcp.json`` says, with the MCP
SDK's minimal environment plus only what the file provides, answers ``sql.execute`` and ``sl.query`` on a
real PostgreSQL connection. A client that cannot expand variables gets them from ``.khive/env``; the
history reader can have its own role (``historicSql.url``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pgcluster
import psycopg
import pytest
from agent_helpers import failures, khive, launch_params, mcp_entry, ok, run_requests
from psycopg import sql
from psycopg.conninfo import make_conninfo

from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CONFIG = """\
version: 1
connections:
  depot:
    driver: postgres
    url: env:FLEET_URL
    description: "the depot's vehicles"
"""
QUERIES = ['sql.execute(connection="depot", sql="SELECT kind, count(*) AS n FROM fleet.vehicles GROUP BY kind '
           'ORDER BY kind")',
           'sl.query(connection="depot", measures=["vehicles.vehicles_count"], dimensions=["vehicles.kind"], '
           'order_by=["vehicles.kind"])']


@pytest.fixture
def depot(tmp_path: Path, pg_database: str) -> Path:
    """A PostgreSQL table, then a project scanned and bootstrapped from it, as a person sets one up."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA fleet")
        conn.execute("CREATE TABLE fleet.vehicles (id int PRIMARY KEY, kind text NOT NULL, depot text NOT NULL)")
        conn.execute("INSERT INTO fleet.vehicles SELECT i, (ARRAY['bus', 'tram', 'van'])[1 + i % 3], 'north' "
                     "FROM generate_series(1, 30) AS i")
    project = tmp_path / "depot"
    init_project(project, "ops")
    (project / "khive.yaml").write_text(CONFIG, encoding="utf-8")
    shell = {"FLEET_URL": pg_database}
    ok(khive("scan", "depot", cwd=project, env=shell))
    ok(khive("request", 'sl.bootstrap(connection="depot")', cwd=project, env=shell))
    ok(khive("setup-agents", cwd=project, env=shell))
    return project


@pytest.fixture
def agent_url(postgres_dsn: str, pg_database: str, depot: Path) -> Iterator[str]:
    """The role agents' SQL runs as: SELECT on the depot's schema, nothing more (README: Security model)."""
    with pgcluster.select_only_role(pg_database, "fleet", prefix="khive_agent") as url:
        yield url


def answers(envelopes: list[dict[str, object]]) -> list[list[object]]:
    return [envelope["results"][0]["result"]["rows"] for envelope in envelopes]  # type: ignore[index]


def test_khive_mcp_started_as_mcp_json_says_reaches_postgres(depot: Path, agent_url: str, tmp_path: Path) -> None:
    entry = mcp_entry(depot)
    assert entry["env"]["FLEET_URL"] == "${FLEET_URL}"  # a reference: the secret stays out of the file
    # Claude Code expands ${FLEET_URL} from its own environment; the server gets the SDK's minimal one plus env.
    params = launch_params(entry, {"FLEET_URL": agent_url}, cwd=tmp_path)
    _, envelopes = run_requests(params, QUERIES, tmp_path / "server.log")
    for envelope in envelopes:
        assert envelope["status"] == "success", failures(envelope)
    assert answers(envelopes) == [[["bus", 10], ["tram", 10], ["van", 10]]] * 2


def test_a_client_that_cannot_expand_gets_the_variables_from_the_env_file(
        depot: Path, agent_url: str, tmp_path: Path) -> None:
    entry = mcp_entry(depot)
    unexpanded = launch_params(entry, {}, cwd=tmp_path)  # the client passes "${FLEET_URL}" as it is
    _, (refused,) = run_requests(unexpanded, QUERIES[:1], tmp_path / "refused.log")
    error = refused["results"][0]["error"]
    assert error["code"] == "config_error" and "'${FLEET_URL}' unexpanded" in error["message"]
    assert ".khive/env" in error["details"]["fix"]

    ok(khive("setup-agents", "--env-file", cwd=depot, env={"FLEET_URL": agent_url}))
    _, envelopes = run_requests(unexpanded, QUERIES, tmp_path / "server.log")
    assert [envelope["status"] for envelope in envelopes] == ["success", "success"], [failures(e) for e in envelopes]
    assert answers(envelopes) == [[["bus", 10], ["tram", 10], ["van", 10]]] * 2


@pytest.fixture
def reader_role(postgres_dsn: str, pg_database: str) -> Iterator[str]:
    """A login role without pg_read_all_stats (what an agent's SQL should run as), and pg_stat_statements."""
    role = f"khive_reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_database, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        except psycopg.Error as exc:
            pytest.skip(f"pg_stat_statements is not available here: {exc}")
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    yield make_conninfo(pg_database, user=role)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_history_is_read_with_its_own_role(tmp_path: Path, pg_database: str, reader_role: str) -> None:
    project = tmp_path / "two-roles"
    init_project(project, "ops")
    config = CONFIG.replace("url: env:FLEET_URL\n", "url: env:FLEET_URL\n    historicSql: {enabled: true}\n")
    (project / "khive.yaml").write_text(config, encoding="utf-8")
    probe = 'historic_sql.probe(connection="depot")'

    def codes(env: dict[str, str]) -> dict[str, object]:
        result = khive("request", probe, cwd=project, env=env)
        first: dict[str, object] = json.loads(result.stdout)["results"][0]
        return first

    as_reader = codes({"FLEET_URL": reader_role})["result"]
    assert "insufficient_privilege" in {f["code"] for f in as_reader["findings"]}  # type: ignore[index]

    (project / "khive.yaml").write_text(config.replace("{enabled: true}", "{enabled: true, url: env:HISTORY_URL}"),
                                        encoding="utf-8")
    missing = codes({"FLEET_URL": reader_role})
    assert missing["error"]["code"] == "config_error"  # type: ignore[index]
    assert "connections.depot.historicSql.url refers to environment variable HISTORY_URL" in \
        missing["error"]["message"]  # type: ignore[index]
    as_history = codes({"FLEET_URL": reader_role, "HISTORY_URL": pg_database})["result"]
    found = {f["code"] for f in as_history["findings"]}  # type: ignore[index]
    assert "insufficient_privilege" not in found and "connection_failed" not in found, as_history
