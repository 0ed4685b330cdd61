"""``khive site build`` for a PostgreSQL project on the throwaway cluster: a page per table, source and wiki
page, every link resolving, and secrets: samples appear only as the redaction left them, and the audit view
shows request arguments only as the audit stored them. A composite key named but not declared gives the review
list one relationship, with the YAML that accepts it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from sitecheck import broken_links, expected_subjects, operator_results, pages, subjects

from khive.bootstrap import open_runtime
from khive.cli import main
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.identity import operator_principal
from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

API_KEY = "sk-live-FAKE" + "siteQ9v8u7t6s5r4q3p2o1nM"
GITHUB = "ghp_FAKE" + "siteabcdefghijklmnopqrstuvwx01"
SECRETS = (API_KEY, GITHUB)
SETUP = """
CREATE SCHEMA crm;
CREATE TABLE crm.customers (id integer PRIMARY KEY, region text NOT NULL, integration_note text);
COMMENT ON TABLE crm.customers IS 'one row per paying customer';
COMMENT ON COLUMN crm.customers.integration_note IS 'free text the integrations team leaves';
CREATE TABLE crm.orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES crm.customers (id),
                         status text NOT NULL, amount numeric(10, 2));
CREATE TABLE crm.order_notes (id integer PRIMARY KEY, order_id integer NOT NULL, body text);
CREATE TABLE crm.order_lines (order_id integer NOT NULL REFERENCES crm.orders (id), line_no integer NOT NULL,
                              sku text NOT NULL, PRIMARY KEY (order_id, line_no));
CREATE TABLE crm.line_adjustments (id integer PRIMARY KEY, order_id integer NOT NULL, line_no integer NOT NULL,
                                   delta numeric(10, 2));
"""


@pytest.fixture
def warehouse(pg_database: str) -> Iterator[str]:
    reader = f"reader_{uuid.uuid4().hex[:8]}"
    notes = [f"api_key={API_KEY}", f"token={GITHUB}", "called back, all fine"]
    with psycopg.connect(pg_database, autocommit=True) as admin:
        admin.execute(SETUP)
        admin.execute("INSERT INTO crm.customers SELECT i, (ARRAY['north','south','east'])[1 + i %% 3], "
                      "(%s::text[])[1 + i %% 3] FROM generate_series(1, 90) AS i", (notes,))
        admin.execute("INSERT INTO crm.orders SELECT i, 1 + i % 90, (ARRAY['paid','open'])[1 + i % 2], i * 2.5 "
                      "FROM generate_series(1, 400) AS i")
        admin.execute("INSERT INTO crm.order_notes SELECT i, 1 + i % 400, 'note ' || i FROM generate_series(1, 200) i")
        admin.execute("INSERT INTO crm.order_lines SELECT o, l, 'sku-' || l FROM generate_series(1, 400) o, "
                      "generate_series(1, 3) l")
        admin.execute("INSERT INTO crm.line_adjustments SELECT i, 1 + i % 400, 1 + i % 3, -1.5 "
                      "FROM generate_series(1, 150) AS i")
        admin.execute(f"CREATE ROLE {reader} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA crm TO {reader}; GRANT SELECT ON ALL TABLES IN SCHEMA crm TO {reader}")
        yield make_conninfo(pg_database, user=reader)
        admin.execute(f"DROP OWNED BY {reader}; DROP ROLE {reader}")


def project_on(root: Path) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", """connections:
  wh:
    driver: postgres
    url: env:WH_URL
    description: the CRM warehouse
"""))
    return root


async def prepare(project: Path, env: dict[str, str]) -> None:
    """Scan, bootstrap, a wiki page; then an agent's request whose arguments hold a key (the audit redacts it)."""
    runtime = open_runtime(project, env)
    page = {"key": "crm/customer-notes", "title": "Customer notes", "kind": "warning",
            "summary": "integration_note can hold credentials: never select it.",
            "body": "Read `crm.customers` without **integration_note**; see [orders](crm.orders).\n"}
    try:
        for text in ('scan.run(connection="wh")', 'sl.bootstrap(connection="wh")',
                     orjson.dumps([{"verb": "wiki.write", "args": page}]).decode(),
                     f'discover.search(query="api_key={API_KEY} customers")'):
            envelope = await dispatch(parse(text), Context(runtime, operator_principal(), CLI))
            assert envelope["status"] == "success", envelope
    finally:
        await runtime.aclose()


def test_a_postgres_project_gets_a_page_for_everything_and_no_secret(
        tmp_path: Path, warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_on(tmp_path / "crm")
    monkeypatch.setenv("WH_URL", warehouse)
    anyio.run(prepare, project, {"WH_URL": warehouse})
    assert main(["--project", str(project), "site", "build"]) == 0
    site = project / ".khive" / "site"

    expected = expected_subjects(project)
    assert {"table:wh:crm.customers", "table:wh:crm.orders", "wiki:global:crm/customer-notes"} <= expected
    assert any(subject.startswith("source:wh:") for subject in expected)
    assert expected <= subjects(site).keys()
    assert broken_links(site) == []

    files = [path for path in site.rglob("*") if path.is_file()]
    assert [str(p.relative_to(site)) for p in files if any(s.encode() in p.read_bytes() for s in SECRETS)] == []
    customers = "".join(pages(site)[subjects(site)["table:wh:crm.customers"]].text)
    assert "api_key=[redacted" in customers  # the sample is shown, as the redaction left it
    (entity,) = anyio.run(operator_results, project, 'scan.entity(connection="wh", table="crm.line_adjustments")')
    pending = [rel for rel in entity["inferredRelationships"]["out"] if rel["tier"] == "review"]
    assert [(rel["toTable"], rel["fromColumns"]) for rel in pending] == [("order_lines", ["order_id", "line_no"])]
    review = "".join(pages(site)["review.html"].text)
    assert "Relationships awaiting review (1)" in review
    assert f"{pending[0]['confidence']:.3f}" in review
    assert "semantic-layer/wh/line_adjustments.yaml" in review and "to: order_lines" in review  # how to accept
    audit = "".join(pages(site)["audit.html"].text)
    assert "discover.search" in audit and "[redacted" in audit  # the argument, as the audit stored it
