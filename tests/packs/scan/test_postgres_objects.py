"""Real PostgreSQL objects through scan, read by a role with partial grants (ADR 0058, eighth session): an
inheritance child with columns of its own is a table of its own, an old-style partition is folded into its
parent, and a column the role may not read is marked ``no-privilege`` while the table's other columns are
sampled."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from khive.bootstrap import open_runtime
from khive.context import Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres]

OBJECTS = """
CREATE TABLE cities (id int PRIMARY KEY, name text, population bigint);
CREATE TABLE capitals (country text) INHERITS (cities);
CREATE TABLE cities_2024 () INHERITS (cities);
INSERT INTO cities VALUES (1, 'Lyon', 500000);
INSERT INTO capitals VALUES (2, 'Paris', 2100000, 'FR');
INSERT INTO cities_2024 VALUES (3, 'Kyoto', 1400000);
CREATE TABLE people (id int PRIMARY KEY, name text, salary numeric);
INSERT INTO people VALUES (1, 'ann', 1000), (2, 'bob', 2000);
CREATE TABLE hidden (id int, note text);
CREATE SCHEMA vault;
CREATE TABLE vault.keys (id int);
ANALYZE;
"""


def scanned_entities(pg_database: str, tmp_path: Path, tables: list[str]) -> dict[str, dict[str, Any]]:
    """Scan the database as a role that reads people's id and name but not its salary, nothing of hidden and
    nothing in vault; the scan.entity result of each of ``tables``."""
    role = f"scanner_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(OBJECTS)
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        for grant in ("GRANT SELECT ON cities, capitals, cities_2024 TO {}", "GRANT SELECT (id, name) ON people TO {}"):
            conn.execute(sql.SQL(grant).format(sql.Identifier(role)))
    root = tmp_path / "proj"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}",
                                                 "connections:\n  pg:\n    driver: postgres\n    url: env:PG_URL\n"))

    async def run() -> dict[str, dict[str, Any]]:
        runtime = open_runtime(root, {"PG_URL": make_conninfo(pg_database, user=role)})
        try:
            scan = await dispatch(parse('scan.run(connection="pg")'), Context(runtime, "operator:ann", "cli"))
            assert scan["status"] == "success", scan
            found = {}
            for table in tables:
                envelope = await dispatch(parse(f'scan.entity(connection="pg", table="{table}")'),
                                          Context(runtime, "agent:ann", "mcp-stdio"))
                (result,) = envelope["results"]
                found[table] = result["result"] if result["ok"] else result["error"]
            return found
        finally:
            await runtime.aclose()

    return anyio.run(run)


def skipped(entity: dict[str, Any]) -> dict[str, str | None]:
    return {column["name"]: column["samples"]["skipped"] for column in entity["columns"]}


def test_postgres_inheritance_and_column_grants_as_a_limited_role(pg_database: str, tmp_path: Path) -> None:
    found = scanned_entities(pg_database, tmp_path, ["capitals", "cities_2024", "people", "hidden", "vault.keys"])
    capitals = found["capitals"]
    assert "columns" in capitals, capitals  # not folded into cities: it has a column of its own
    assert [column["name"] for column in capitals["columns"]] == ["id", "name", "population", "country"]
    assert found["cities_2024"]["code"] == "table_not_found"  # no column of its own: folded into cities
    assert skipped(found["people"]) == {"id": None, "name": None, "salary": "no-privilege"}
    people = {column["name"]: column["samples"]["values"] for column in found["people"]["columns"]}
    assert people["name"] == ["ann", "bob"]
    assert set(skipped(found["hidden"]).values()) == {"no-privilege"}
    assert set(skipped(found["vault.keys"]).values()) == {"no-privilege"}
