"""Agents' SQL on a real PostgreSQL (ADR 0032): not on a privileged role, not on server state, not through a
user overload of a built-in; the operator's CLI keeps its reach. Driven over MCP and the khive CLI."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from mcp_call import request_over_mcp
from psycopg import sql
from psycopg.conninfo import make_conninfo

from khive.cli import main
from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres]

HOSTNAME = Path("/etc/hostname")
SETUP = """
CREATE EXTENSION pg_stat_statements;
CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO products VALUES (1, 'anvil'), (2, 'rope');
-- attribute notation: p.evil_attr is evil_attr(p), a call the gate never sees
CREATE FUNCTION public.evil_attr(products) RETURNS text LANGUAGE sql AS $$ SELECT pg_read_file('/etc/hostname') $$;
-- an overload of a built-in: md5(1) resolves here whatever the search path
CREATE FUNCTION public.md5(integer) RETURNS text LANGUAGE sql AS $$ SELECT 'pwned-md5' $$;
-- a same-signature shadow, reached only when a search path puts public before pg_catalog
CREATE FUNCTION public.upper(text) RETURNS text LANGUAGE sql AS $$ SELECT 'pwned-upper' $$;
"""


@dataclass(frozen=True)
class Warehouse:
    admin: str  # a superuser's connection string
    agent: str  # a role with SELECT on public only
    file_reader: str  # not a superuser, but a member of pg_read_server_files


@pytest.fixture
def warehouse(pg_database: str) -> Iterator[Warehouse]:
    suffix = uuid.uuid4().hex[:6]
    agent, reader = f"agent_{suffix}", f"reader_{suffix}"
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(SETUP)
        for role in (agent, reader):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT pg_read_server_files TO {}").format(sql.Identifier(reader)))
        # the role's own search path puts public first: pinning must undo that for agents' sessions
        conn.execute(sql.SQL("ALTER ROLE {} SET search_path = public, pg_catalog").format(sql.Identifier(agent)))
    yield Warehouse(pg_database, make_conninfo(pg_database, user=agent), make_conninfo(pg_database, user=reader))
    with psycopg.connect(pg_database, autocommit=True) as conn:
        for role in (agent, reader):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def project(root: Path, *, allow_privileged: bool = False) -> Path:
    init_project(root, "ann")
    extra = "    allowPrivilegedRole: true\n" if allow_privileged else ""
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}\n", f"connections:\n  wh:\n    driver: postgres\n    url: env:WH_URL\n{extra}"))
    return root


def over_mcp(root: Path, url: str, query: str) -> dict[str, Any]:
    return request_over_mcp(root, _execute(query), {"WH_URL": url})


def over_cli(root: Path, url: str, query: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("WH_URL", url)
    out = io.StringIO()
    with redirect_stdout(out):
        main(["--project", str(root), "request", _execute(query), "--presentation", "verbose"])
    (result,) = orjson.loads(out.getvalue())["results"]
    return dict(result)


def _execute(query: str) -> str:
    return f"sql.execute(connection=\"wh\", sql={orjson.dumps(query).decode()})"


def rows(result: dict[str, Any]) -> list[list[Any]]:
    assert result["ok"], result
    return list(result["result"]["rows"])


def hostname_in(result: dict[str, Any]) -> bool:
    text = HOSTNAME.read_text().strip() if HOSTNAME.is_file() else ""
    return bool(text) and text in orjson.dumps(result).decode()


# --- privileged roles ---------------------------------------------------------------------------

def test_agent_sql_refuses_a_superuser_role(tmp_path: Path, warehouse: Warehouse) -> None:
    root = project(tmp_path / "p")
    result = over_mcp(root, warehouse.admin, "SELECT p.evil_attr FROM products p")
    assert not result["ok"] and result["error"]["code"] == "privileged_role"
    assert result["error"]["details"]["privileges"][0] == "superuser"
    assert "allowPrivilegedRole" in result["error"]["message"]
    assert not hostname_in(result)
    assert over_mcp(root, warehouse.admin, "SELECT 1")["error"]["code"] == "privileged_role"


def test_agent_sql_refuses_a_role_that_reads_server_files(tmp_path: Path, warehouse: Warehouse) -> None:
    result = over_mcp(project(tmp_path / "p"), warehouse.file_reader, "SELECT count(*) FROM products")
    assert result["error"]["code"] == "privileged_role"
    assert result["error"]["details"]["privileges"] == ["pg_read_server_files"]


def test_allow_privileged_role_lets_agent_sql_run(tmp_path: Path, warehouse: Warehouse) -> None:
    root = project(tmp_path / "p", allow_privileged=True)
    assert rows(over_mcp(root, warehouse.admin, "SELECT count(*) FROM products")) == [[2]]


def test_the_operator_cli_runs_on_a_superuser_role(tmp_path: Path, warehouse: Warehouse,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert rows(over_cli(project(tmp_path / "p"), warehouse.admin, "SELECT count(*) FROM products",
                         monkeypatch)) == [[2]]


def test_a_plain_role_cannot_read_files_through_attribute_notation(tmp_path: Path, warehouse: Warehouse) -> None:
    result = over_mcp(project(tmp_path / "p"), warehouse.agent, "SELECT p.evil_attr FROM products p")
    assert not result["ok"] and result["error"]["code"] == "query_failed"
    assert "permission denied" in result["error"]["message"]
    assert not hostname_in(result)


# --- server state ---------------------------------------------------------------------------------

def test_pg_stat_statements_in_public_is_refused_over_mcp(tmp_path: Path, warehouse: Warehouse,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "p")
    for query in ("SELECT query FROM public.pg_stat_statements", "SELECT query FROM pg_stat_activity"):
        refused = over_mcp(root, warehouse.agent, query)
        assert refused["error"]["code"] == "sql_refused", refused
        assert refused["error"]["details"]["gateCode"] == "server_state"
    assert over_cli(root, warehouse.agent, "SELECT count(*) FROM public.pg_stat_statements", monkeypatch)["ok"]


# --- overloads and the search path ------------------------------------------------------------------

def test_a_user_overload_of_a_built_in_is_never_picked_for_an_agent(tmp_path: Path, warehouse: Warehouse) -> None:
    root = project(tmp_path / "p")
    refused = over_mcp(root, warehouse.agent, "SELECT md5(1)")
    assert refused["error"]["code"] == "sql_refused" and "public.md5" in refused["error"]["message"]
    assert "pwned" not in orjson.dumps(refused).decode()
    assert rows(over_mcp(root, warehouse.agent, "SELECT pg_catalog.md5('1')")) == [
        ["c4ca4238a0b923820dcc509a6f75849b"]]


def test_the_search_path_is_pinned_with_pg_catalog_first(tmp_path: Path, warehouse: Warehouse,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent role's own search_path is "public, pg_catalog"; the session khive opens puts pg_catalog first,
    # so upper(text) is the built-in even where the gate is not asked (the operator's CLI).
    result = over_cli(project(tmp_path / "p"), warehouse.agent, "SELECT upper('a')", monkeypatch)
    assert rows(result) == [["A"]]
