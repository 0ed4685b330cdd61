"""PostgreSQL names that do not read back as themselves unquoted, through scan -> sl.bootstrap -> sl.query (ADR
0058, eighth session): a mixed-case table beside its lower-case namesake, and a schema and table whose names
hold dots, quotes and spaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from khive.bootstrap import open_runtime
from khive.context import Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

pytestmark = [pytest.mark.postgres]

OBJECTS = """
CREATE TABLE "CamelT" (id int, "Kind" text);
INSERT INTO "CamelT" VALUES (1, 'mixed'), (2, 'mixed');
CREATE TABLE camelt (id int, kind text);
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Odd ""Name"".v2" (id int, "select" text);
INSERT INTO "Odd Schema"."Odd ""Name"".v2" VALUES (1, 'odd');
"""


def test_bootstrapped_sources_read_the_tables_they_were_made_from(pg_database: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(OBJECTS)
    root = tmp_path / "proj"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}",
                                                 "connections:\n  pg:\n    driver: postgres\n    url: env:PG_URL\n"
                                                 "    allowPrivilegedRole: true\n"))
    queries = {"CamelT": ("CamelT.CamelT_count", "CamelT.Kind"),
               "odd": ("Odd_Name_v2.Odd_Name_v2_count", "Odd_Name_v2.select")}

    async def run() -> dict[str, Any]:
        runtime = open_runtime(root, {"PG_URL": pg_database})
        try:
            for ops in ('scan.run(connection="pg")', 'sl.bootstrap(connection="pg")'):
                envelope = await dispatch(parse(ops), Context(runtime, "operator:ann", "cli"))
                assert envelope["status"] == "success", envelope
            answers = {}
            for name, (measure, dimension) in queries.items():
                op = {"verb": "sl.query", "args": {"connection": "pg", "measures": [measure],
                                                   "dimensions": [dimension]}}
                envelope = await dispatch(parse(json.dumps(op)), Context(runtime, "agent:ann", "mcp-stdio"))
                (result,) = envelope["results"]
                answers[name] = result.get("result", result.get("error"))
            return answers
        finally:
            await runtime.aclose()

    answers = anyio.run(run)
    assert answers["CamelT"].get("rows") == [["mixed", 2]], answers["CamelT"]  # not camelt's (no rows)
    assert answers["odd"].get("rows") == [["odd", 1]], answers["odd"]
