"""Files stay inside the project (ADR 0032): a symlink already in the project (a cloned repo, a teammate's
shortcut) never lets a verb read or write outside it. Symlinks that stay inside keep working."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from project_surface import error_code, files_under, over_cli, over_mcp, shop_project

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse

PAGE = "---\nsummary: {summary}\n---\n{body}\n"
SECRET = "zanzibar-7731 the secret plans"


def link(path: Path, target: Path) -> None:
    """Make ``path`` (a folder ``khive init`` may have made) a symlink to ``target``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return shop_project(tmp_path / "proj")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(PAGE.format(summary="secret", body=SECRET))
    return folder


# --- wiki ---------------------------------------------------------------------------------------

def test_wiki_read_refuses_a_page_that_links_out(project: Path, outside: Path) -> None:
    (project / "wiki/global/leak.md").symlink_to(outside / "secret.md")
    result = over_mcp(project, 'wiki.read(key="leak")')
    assert error_code(result) == "path_outside_project"
    assert SECRET not in str(result) and str(outside) not in result["error"]["message"]
    assert result["error"]["details"]["symlink"] == "wiki/global/leak.md"


def test_wiki_read_refuses_a_folder_that_links_out(project: Path, outside: Path) -> None:
    (project / "wiki/global/team").symlink_to(outside)
    result = over_mcp(project, 'wiki.read(key="team/secret")')
    assert error_code(result) == "path_outside_project"
    assert result["error"]["details"]["symlink"] == "wiki/global/team"


def test_wiki_write_creates_nothing_outside(project: Path, outside: Path) -> None:
    (project / "wiki/global/team").symlink_to(outside)
    (project / "wiki/global/leak.md").symlink_to(outside / "secret.md")
    before = files_under(outside)
    through_folder = over_mcp(project, 'wiki.write(key="team/planted", summary="x", body="planted")')
    over_page = over_mcp(project, 'wiki.write(key="leak", summary="x", body="overwritten")')
    assert error_code(through_folder) == error_code(over_page) == "path_outside_project"
    assert files_under(outside) == before
    assert SECRET in (outside / "secret.md").read_text()


def test_wiki_list_and_search_leave_out_a_wiki_folder_that_links_out(project: Path, outside: Path) -> None:
    (outside / "global").mkdir()
    (outside / "global" / "plans.md").write_text(PAGE.format(summary="plans", body=SECRET))
    link(project / "wiki", outside)
    found = over_mcp(project, 'wiki.search(query="zanzibar")')
    listed = over_mcp(project, "wiki.list()")
    assert found["ok"] and found["result"]["hits"] == []
    assert listed["ok"] and listed["result"]["pages"] == []
    assert error_code(over_mcp(project, 'wiki.read(key="plans")')) == "path_outside_project"


def test_a_symlink_that_stays_inside_is_followed(project: Path) -> None:
    real = project / "wiki/global/orders.md"
    real.write_text(PAGE.format(summary="how we count orders", body="count distinct order ids"))
    (project / "wiki/global/order-count.md").symlink_to("orders.md")  # relative, inside the project
    read = over_mcp(project, 'wiki.read(key="order-count")')
    assert read["ok"] and read["result"]["body"].strip() == "count distinct order ids"
    written = over_mcp(project, 'wiki.write(key="order-count", summary="how we count orders", body="v2")')
    assert written["ok"], written
    assert (project / "wiki/global/order-count.md").is_symlink()  # written through, not replaced
    assert real.read_text().rstrip().endswith("v2")


def test_a_symlink_into_khive_state_is_refused(project: Path) -> None:
    (project / "wiki/global/state.md").symlink_to(project / ".khive" / "audit.sqlite")
    assert error_code(over_mcp(project, 'wiki.read(key="state")')) == "path_outside_project"


# --- semantic layer -----------------------------------------------------------------------------

SOURCE = 'name: orders\ntable: main.orders\ncolumns:\n  - {name: id}\n'


def test_sl_write_and_read_refuse_a_connection_folder_that_links_out(project: Path, outside: Path) -> None:
    sources = outside / "sources"
    sources.mkdir()
    (sources / "customers.yaml").write_text("name: customers\ntable: main.customers\n# " + SECRET + "\n")
    link(project / "semantic-layer/shop", sources)
    written = over_mcp(project, f'sl.write(connection="shop", yaml={SOURCE!r})'.replace("'", '"'))
    assert error_code(written) == "path_outside_project"
    assert files_under(sources) == ["customers.yaml"]
    read = over_mcp(project, 'sl.read(name="customers", connection="shop")')
    assert not read["ok"] and SECRET not in str(read)


def test_sl_read_refuses_a_source_file_that_links_out(project: Path, outside: Path) -> None:
    (outside / "orders.yaml").write_text(SOURCE + "# " + SECRET + "\n")
    folder = project / "semantic-layer/shop"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orders.yaml").symlink_to(outside / "orders.yaml")
    read = over_mcp(project, 'sl.read(name="orders", connection="shop")')
    assert not read["ok"] and SECRET not in str(read)


# --- scan artifacts and _schema shards -----------------------------------------------------------

def test_scan_writes_nothing_outside_when_raw_sources_link_out(project: Path, outside: Path) -> None:
    link(project / "raw-sources", outside)
    result = over_cli(project, 'scan.run(connection="shop")')
    assert error_code(result) == "path_outside_project"
    assert files_under(outside) == ["secret.md"]


def test_scan_writes_no_shard_outside_when_schema_links_out(project: Path, outside: Path) -> None:
    link(project / "_schema/shop", outside)
    result = over_cli(project, 'scan.run(connection="shop")')
    assert error_code(result) == "path_outside_project"
    assert files_under(outside) == ["secret.md"]


def test_scan_verbs_refuse_a_run_that_links_out(project: Path, tmp_path: Path) -> None:
    assert over_cli(project, 'scan.run(connection="shop")')["ok"]
    live = project / "raw-sources/shop/live-database"
    moved = tmp_path / "moved-runs"
    live.rename(moved)
    live.symlink_to(moved)
    for text in ('scan.tables(connection="shop")', 'scan.entity(connection="shop", table="main.orders")',
                 'scan.status(connection="shop")'):
        assert error_code(over_mcp(project, text)) == "path_outside_project", text


# --- historic_sql -----------------------------------------------------------------------------------

def test_a_query_log_that_links_out_is_refused(project: Path, outside: Path) -> None:
    assert over_cli(project, 'scan.run(connection="shop")')["ok"]
    log = project / "logs/queries.jsonl"
    (outside / "their-queries.jsonl").write_bytes(log.read_bytes())
    log.unlink()
    log.symlink_to(outside / "their-queries.jsonl")
    assert error_code(over_mcp(project, 'historic_sql.probe(connection="shop")')) == "path_outside_project"
    assert error_code(over_cli(project, 'historic_sql.ingest(connection="shop")')) == "path_outside_project"


def test_ingest_writes_nothing_outside_when_its_runs_link_out(project: Path, outside: Path) -> None:
    assert over_cli(project, 'scan.run(connection="shop")')["ok"]
    link(project / "raw-sources/shop/historic-sql", outside)
    assert error_code(over_cli(project, 'historic_sql.ingest(connection="shop")')) == "path_outside_project"
    assert files_under(outside) == ["secret.md"]


def test_a_database_path_that_links_out_is_refused(project: Path, outside: Path) -> None:
    os.replace(project / "shop.sqlite", outside / "shop.sqlite")
    (project / "shop.sqlite").symlink_to(outside / "shop.sqlite")
    result = over_mcp(project, 'sql.execute(connection="shop", sql="SELECT count(*) FROM orders")')
    assert error_code(result) == "path_outside_project"


def _listed_pages_and_errors(listed: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    assert listed["ok"], listed
    return [page["key"] for page in listed["result"]["pages"]], listed["result"]["errors"]


def test_wiki_list_says_why_a_linked_page_is_left_out(project: Path, outside: Path) -> None:
    """A linked page is never indexed: wiki.list names it and why, in a fresh process (the full walk) and in a
    warm one whose watcher sees the links made after its first refresh."""
    (project / "wiki/global/orders.md").write_text(PAGE.format(summary="how we count orders", body="distinct ids"))
    runtime = open_runtime(project, {})

    def warm_list() -> dict[str, Any]:
        async def run() -> dict[str, Any]:
            envelope = await dispatch(parse("wiki.list()"), Context(runtime, "operator:t", CLI, presentation="verbose"))
            return dict(envelope["results"][0])
        return anyio.run(run)

    try:
        assert _listed_pages_and_errors(warm_list()) == (["orders"], {})
        (project / "wiki/global/leak.md").symlink_to(outside / "secret.md")
        (project / "wiki/global/order-count.md").symlink_to("orders.md")
        answers = [warm_list(), over_cli(project, "wiki.list()"), over_mcp(project, "wiki.list()")]
    finally:
        anyio.run(runtime.aclose)
    for listed in answers:
        pages, errors = _listed_pages_and_errors(listed)
        assert pages == ["orders"]
        assert set(errors) == {"wiki/global/leak.md", "wiki/global/order-count.md"}, errors
        assert "out of the project" in errors["wiki/global/leak.md"]
        assert "symlink: not indexed" in errors["wiki/global/order-count.md"]
        assert SECRET not in str(listed) and str(outside) not in str(listed)
    found = over_mcp(project, 'wiki.search(query="zanzibar")')
    assert found["ok"] and found["result"]["hits"] == []
