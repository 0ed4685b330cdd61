"""On a real warehouse (``../shared/tools/realworld-pg``: northwind with least-privilege roles): the agent's
SQL runs as ``khive_agent`` through the written ``.mcp.json``, the history is read as ``khive_history``
through ``historicSql.url``, and every example of the generated guide runs with budgets that fit."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import budget_reports, failures, guide_examples, khive, launch_params, mcp_entry, ok, run_requests
from realworld import realworld_cluster

from khive.scaffold import init_project

pytestmark = [pytest.mark.data, pytest.mark.slow]

CONFIG = """\
version: 1
connections:
  northwind:
    driver: postgres
    url: env:NORTHWIND_URL
    description: "Northwind traders: orders, products, customers, suppliers"
    historicSql: {enabled: true, url: env:NORTHWIND_HISTORY_URL}
"""


@pytest.fixture(scope="module")
def warehouse() -> Iterator[dict[str, str]]:
    """The variables of ``env.sh`` of a running realworld-pg cluster (stopped and removed afterwards)."""
    with realworld_cluster("rw-") as (variables, _):
        yield variables


def test_agent_sql_as_the_agent_role_and_history_as_the_history_role(
        warehouse: dict[str, str], tmp_path: Path) -> None:
    shell = {name: warehouse[name] for name in ("NORTHWIND_URL", "NORTHWIND_HISTORY_URL")}
    project = tmp_path / "northwind"
    init_project(project, "analyst")
    (project / "khive.yaml").write_text(CONFIG, encoding="utf-8")
    ok(khive("scan", "northwind", cwd=project, env=shell))
    ok(khive("request", 'sl.bootstrap(connection="northwind")', cwd=project, env=shell))
    probe = ok(khive("request", 'historic_sql.probe(connection="northwind")', cwd=project, env=shell)).stdout
    assert "insufficient_privilege" not in probe and "connection_failed" not in probe, probe
    ingest = ok(khive("ingest", "northwind", cwd=project, env=shell))
    assert re.search(r"[1-9]\d* templates", ingest.stdout + ingest.stderr), ingest.stdout + ingest.stderr
    written = ok(khive("setup-agents", cwd=project, env=shell))
    assert "left out" not in written.stdout, written.stdout

    entry = mcp_entry(project)
    assert entry["env"]["NORTHWIND_URL"] == "${NORTHWIND_URL}"
    examples = guide_examples(project)
    checks = ['sql.execute(connection="northwind", sql="SELECT current_user AS who, count(*) AS n FROM orders")',
              'sl.query(connection="northwind", measures=["orders.orders_count"], dimensions=["orders.ship_country"],'
              ' limit=3)']
    _, envelopes = run_requests(launch_params(entry, shell, cwd=tmp_path), checks + examples, tmp_path / "server.log")
    for text, envelope in zip(checks + examples, envelopes, strict=True):
        assert envelope.get("status") == "success", (text, failures(envelope))
        if "budget_tokens=" in text:
            assert all(report["fits"] for report in budget_reports(envelope)), text
    assert envelopes[0]["results"][0]["result"]["rows"][0][0] == "khive_agent"  # the agent's role, not history's


@pytest.fixture(scope="module")
def leaky_warehouse() -> Iterator[tuple[dict[str, str], list[str]]]:
    """A realworld-pg cluster with pg_stat_statements in ``public`` and other roles' fake secrets in it."""
    with realworld_cluster("rw-", "--with-secrets", "--pgss-in-public") as (variables, directory):
        yield variables, [line for line in (directory / "secrets.txt").read_text().splitlines() if line.strip()]


def test_agents_cannot_read_other_roles_statements(leaky_warehouse: tuple[dict[str, str], list[str]],
                                                   tmp_path: Path) -> None:
    warehouse, secrets = leaky_warehouse
    assert secrets
    shell = {name: warehouse[name] for name in ("NORTHWIND_URL", "NORTHWIND_HISTORY_URL")}
    project = tmp_path / "northwind"
    init_project(project, "analyst")
    (project / "khive.yaml").write_text(CONFIG, encoding="utf-8")
    ok(khive("setup-agents", cwd=project, env=shell))
    peek = ["SELECT query FROM public.pg_stat_statements", "SELECT query FROM pg_stat_activity",
            "SELECT name, setting FROM pg_settings"]
    texts = [f'sql.execute(connection="northwind", sql="{query}")' for query in peek]
    _, envelopes = run_requests(launch_params(mcp_entry(project), shell, cwd=tmp_path), texts, tmp_path / "s.log")
    for envelope in envelopes:  # over MCP: refused by name
        error = envelope["results"][0]["error"]
        assert (error["code"], error["details"]["gateCode"]) == ("sql_refused", "server_state"), error
    # The operator's CLI may ask, but the agent's role (no pg_read_all_stats) sees no one else's text.
    answer = ok(khive("request", texts[0], cwd=project, env=shell)).stdout
    assert "insufficient privilege" in answer
    assert [secret for secret in secrets if secret in answer + str(envelopes)] == []
