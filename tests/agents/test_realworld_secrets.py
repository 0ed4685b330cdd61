"""Issue 15's acceptance test on a real warehouse: ``realworld-pg up --with-secrets --pgss-in-public``.

Other roles left 21 fake secrets (listed in ``secrets.txt``, each containing FAKE) in ``pg_stat_statements``,
which a plain ``CREATE EXTENSION`` put in ``public`` of every database. A project with the three connections
(the agent's SQL as ``khive_agent``, history as ``khive_history`` through ``historicSql.url``) is scanned,
bootstrapped and ingested with the CLI, then an agent uses it over MCP stdio (``khive mcp`` as the written
``.mcp.json`` starts it). Afterwards ``grep -F -f secrets.txt -r PROJECT`` finds nothing (``.khive/`` with the
audit and the index included), and no MCP answer and no audit event holds a secret (ADR 0035).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import khive, launch_params, mcp_entry, ok, run_requests
from realworld import DATABASES, history_config, realworld_cluster

from khive.scaffold import init_project

pytestmark = [pytest.mark.data, pytest.mark.slow]

@pytest.fixture(scope="module")
def warehouse() -> Iterator[tuple[dict[str, str], Path]]:
    """``env.sh``'s variables and the cluster's DIR (its secrets.txt) of a realworld-pg cluster with secrets."""
    with realworld_cluster("rws-", "--with-secrets", "--pgss-in-public") as cluster:
        yield cluster


def test_no_fake_secret_reaches_the_project_an_answer_or_the_audit(
        warehouse: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    variables, directory = warehouse
    secrets = [line for line in (directory / "secrets.txt").read_text().splitlines() if line]
    kept = [item["secret"] for item in json.loads((directory / "secrets.json").read_text())
            if item["in_pg_stat_statements"]]
    assert len(secrets) == 21 and all("FAKE" in secret for secret in secrets) and kept  # the trap is set
    shell = {name: variables[name] for name in variables if name.endswith("_URL")}
    project = tmp_path / "rw"
    init_project(project, "analyst")
    (project / "khive.yaml").write_text(history_config(), encoding="utf-8")
    for name in DATABASES:
        scanned = ok(khive("scan", name, cwd=project, env=shell)).stdout
        assert "public.pg_stat_statements (extension pg_stat_statements)" in scanned, scanned
        ok(khive("request", f'sl.bootstrap(connection="{name}")', cwd=project, env=shell))
        ok(khive("ingest", name, cwd=project, env=shell))
    ok(khive("setup-agents", cwd=project, env=shell))

    api_key = next(s for s in secrets if s.startswith("sk-live-FAKE"))
    jwt = next(s for s in secrets if s.startswith("eyJ"))
    requests = ['discover.search(query="which statements ran, their calls and rows", limit=20)',
                'discover.search(query="orders shipped by country")',
                'sl.dictionary_search(query="FAKE")', 'sl.dictionary_search(query="api_key")',
                'sl.dictionary_search(query="PASSWORD")',
                'sql.execute(connection="northwind", sql="SELECT ship_country, count(*) FROM orders GROUP BY 1")',
                f'sql.execute(connection="northwind", sql="SELECT CAST(\'etl api_key={api_key}\' AS integer)")',
                f'sql.execute(connection="sakila", sql="SELECT * FROM rental WHERE rental_id = \'{jwt}\'")']
    _, answers = run_requests(launch_params(mcp_entry(project), shell, cwd=tmp_path), requests, tmp_path / "mcp.log")
    first = [answer["results"][0] for answer in answers]
    assert first[5]["ok"], first[5]
    assert not first[6]["ok"] and "invalid input syntax" in first[6]["error"]["message"]
    assert "[redacted: sk-api-key]" in first[6]["error"]["message"]
    assert not first[7]["ok"] and "[redacted: jwt]" in first[7]["error"]["message"]
    assert not any("pg_stat_statements" in json.dumps(answer) for answer in answers[:2])
    assert [[s for s in secrets if s in json.dumps(answer)] for answer in answers] == [[]] * len(answers)

    audit = ok(khive("audit", "--json", "--limit", "1000", cwd=project, env=shell)).stdout
    assert len(audit.splitlines()) >= len(requests) + 3 * len(DATABASES)
    assert [s for s in secrets if s in audit] == []
    grep = subprocess.run(["grep", "-r", "-l", "-F", "-f", str(directory / "secrets.txt"), str(project)],
                          capture_output=True, text=True, timeout=120)
    assert grep.returncode == 1 and grep.stdout == "", grep.stdout  # 1: grep found no line
