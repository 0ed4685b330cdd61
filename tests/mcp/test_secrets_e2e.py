"""Issue 15's acceptance test on the throwaway cluster: other roles' secrets never reach the project, an MCP
answer or the audit (ADR 0035).

Another role leaves fake credentials in ``pg_stat_statements`` (installed in ``public``, as a plain
``CREATE EXTENSION`` does) and in its ``application_name``; the scan role can read every role's
statements (``pg_read_all_stats``, what the README once asked for). The project is scanned, bootstrapped and
ingested (history through its own role, ``historicSql.url``), then an agent searches, looks values up and runs
SQL over MCP, one statement failing with an error that echoes a literal.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import psycopg
import pytest
from mcp import Client
from psycopg.conninfo import make_conninfo

from khive.audit.store import AuditQuery
from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.mcp_server import TOOL_NAME, build_server
from khive.scaffold import init_project

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

API_KEY = "sk-live-FAKE" + "e2eQ9v8u7t6s5r4q3p2o1nM"
PASSWORD = "FAKE-pw-" + "e2e-7Hq2x9Lm"
DBA_PASSWORD = "FAKE-dba-" + "e2e-3Jk8p1Zr"
GITHUB = "ghp_FAKE" + "e2eabcdefghijklmnopqrstuvwx01"
DSN_PASSWORD = "FAKE-dsn-" + "e2e-5Tg6"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJldGwiLCJmYWtlIjp0cnVlfQ"
       ".FAKEe2eSflKxwRJSMeKKF2QT4fwpMeJf36POk6y")
SECRETS = (API_KEY, PASSWORD, DBA_PASSWORD, GITHUB, DSN_PASSWORD, JWT)


@pytest.fixture
def warehouse(pg_database: str) -> Iterator[dict[str, str]]:
    """A database whose statement statistics hold another role's secrets; DSNs of the scan and history roles."""
    suffix = uuid.uuid4().hex[:8]
    reader, history, etl = f"reader_{suffix}", f"history_{suffix}", f"etl_{suffix}"
    with psycopg.connect(pg_database, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")  # into public
        admin.execute("CREATE TABLE public.orders (id integer PRIMARY KEY, status text, amount numeric(10, 2));"
                      "INSERT INTO public.orders SELECT i, CASE WHEN i % 3 = 0 THEN 'open' ELSE 'paid' END, i * 1.5 "
                      "FROM generate_series(1, 60) AS i")
        for role in (reader, history, etl):
            admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT pg_read_all_stats TO {reader}, {history}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}, {etl}")
        admin.execute("SELECT pg_stat_statements_reset()")
        with psycopg.connect(make_conninfo(pg_database, user=etl), autocommit=True) as loader:
            for statement in (f"SET application_name = 'etl api_key={API_KEY}'",
                              f"ALTER ROLE {etl} PASSWORD '{PASSWORD}'",
                              f"SET myapp.source_dsn = 'postgresql://loader:{DSN_PASSWORD}@warehouse.internal/prod'",
                              f"/* scheduled by ci, token={GITHUB} */ SELECT count(*) FROM orders",
                              f"SET myapp.jwt = '{JWT}'"):
                loader.execute(statement)
        admin.execute(f"ALTER ROLE {etl} PASSWORD '{DBA_PASSWORD}'")
        # a session of that role stays open during the scan, its key in its application_name
        with psycopg.connect(make_conninfo(pg_database, user=etl, application_name=f"etl api_key={API_KEY}")):
            yield {"WH_URL": make_conninfo(pg_database, user=reader),
                   "WH_HISTORY_URL": make_conninfo(pg_database, user=history)}
        for role in (reader, history, etl):
            admin.execute(f"REASSIGN OWNED BY {role} TO postgres; DROP OWNED BY {role}; DROP ROLE {role}")


def project_with(root: Path) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", """connections:
  wh:
    driver: postgres
    url: env:WH_URL
    sample_values: {max_values: 1000}   # every statement text the view holds, not only the 20 most frequent
    historicSql: {enabled: true, url: env:WH_HISTORY_URL, minExecutions: 1}
"""))
    return root


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


async def test_no_secret_reaches_the_project_an_mcp_answer_or_the_audit(tmp_path: Path,
                                                                        warehouse: dict[str, str]) -> None:
    project = project_with(tmp_path / "proj")
    runtime = open_runtime(project, warehouse)
    try:
        for text in ('scan.run(connection="wh")', 'sl.bootstrap(connection="wh")',
                     'historic_sql.ingest(connection="wh")'):
            envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI))
            assert envelope["status"] == "success", envelope
            assert leaks(json.dumps(envelope)) == [], text
        requests = ['discover.search(query="statements query calls application", limit=20)',
                    'sl.dictionary_search(query="FAKE")', 'sl.dictionary_search(query="api_key")',
                    'scan.tables(connection="wh")', 'scan.entity(connection="wh", table="orders")',
                    'sql.execute(connection="wh", sql="SELECT status, count(*) AS n FROM orders GROUP BY status")',
                    f'sql.execute(connection="wh", sql="SELECT CAST(\'etl api_key={API_KEY}\' AS integer)")',
                    f'sql.execute(connection="wh", sql="SELECT * FROM orders WHERE status = \'{JWT}\'::integer")']
        answers = []
        async with Client(build_server(runtime),
                          client_info=types.Implementation(name="e2e-agent", version="0")) as client:
            for text in requests:
                result = await client.call_tool(TOOL_NAME, {"ops": text, "presentation": "verbose"})
                answers.append(result.structured_content or {})
        events = await runtime.audit.query(AuditQuery(limit=1000))
    finally:
        await runtime.aclose()

    ran = {text: answer["results"][0] for text, answer in zip(requests, answers, strict=True)}
    assert ran[requests[5]]["ok"], ran[requests[5]]
    failed = ran[requests[6]]
    assert not failed["ok"] and "invalid input syntax for type integer" in failed["error"]["message"]
    assert "[redacted: sk-api-key]" in failed["error"]["message"]  # the echo is there, the key is not
    tables = [row["name"] for row in ran[requests[3]]["result"]["tables"]]
    assert tables == ["orders"]  # no pg_stat_statements view
    assert [leaks(json.dumps(answer)) for answer in answers] == [[]] * len(answers)
    audited = [event.to_dict() for event in events]
    assert len(audited) >= len(requests) + 3
    assert leaks(json.dumps(audited)) == []
    files = [path for path in project.rglob("*") if path.is_file()]
    assert [str(p.relative_to(project)) for p in files
            if any(secret.encode() in p.read_bytes() for secret in SECRETS)] == []
