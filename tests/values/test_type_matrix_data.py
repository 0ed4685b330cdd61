"""realworld-pg's ``public.type_matrix`` through ``sql.execute``: every value as ``$D/type-matrix.json`` (psql's
text of each value) says, converted only where the value rule says (docs/values.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from value_matrix import answer
from value_transports import run_ops

from khive.scaffold import init_project

pytestmark = [pytest.mark.data]
KIND = {"numeric": "text", "bigint": "int", "double precision": "float", "bytea": "bytea", "interval": "interval",
        "numeric[]": "array:text", "jsonb": "json", "timestamptz": "stamp", "date": "stamp", "timetz": "time"}


def test_type_matrix_reaches_the_agent_as_psql_prints_it(realworld_pg: dict[str, str], tmp_path: Path) -> None:
    matrix = json.loads((Path(realworld_pg["dir"]) / "type-matrix.json").read_text())
    project = tmp_path / "rw"
    init_project(project, "tester")
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}\n", "connections:\n  northwind: {driver: postgres, url: env:NORTHWIND_URL}\n"))
    env = {"NORTHWIND_URL": realworld_pg["NORTHWIND_URL"]}
    executed, categories = run_ops(project, env, '[sql.execute(connection="northwind", '
                                                 'sql="SELECT * FROM type_matrix ORDER BY id", limit=1000), '
                                                 'sql.execute(connection="northwind", '
                                                 'sql="SELECT * FROM categories ORDER BY category_id LIMIT 2")]')
    assert executed["ok"] and categories["ok"], (executed, categories)
    result = executed["result"]
    names = [column["name"] for column in result["columns"]]
    rows = [dict(zip(names, row, strict=True)) for row in result["rows"]]

    spans = [row["span"] for row in matrix["rows"] if row["span"] is not None]
    with psycopg.connect(realworld_pg["NORTHWIND_URL"], options="-c intervalstyle=iso_8601") as conn:
        iso = {text: conn.execute("SELECT %s::interval::text", [text]).fetchone()[0]  # type: ignore[index]
               for text in spans}
    assert [row["id"] for row in rows] == [row["id"] for row in matrix["rows"]]
    for got, printed in zip(rows, matrix["rows"], strict=True):
        for column, type_name in matrix["columns"].items():
            kind = KIND.get(type_name, "text")
            text = printed[column]
            want: Any = iso.get(text) if kind == "interval" and text is not None else answer(kind, text)
            assert got[column] == want and type(got[column]) is type(want), \
                f"row {printed['id']} ({printed['label']}), {column} ({type_name}): {got[column]!r} != {want!r}"

    pictures = categories["result"]  # the issue's own reproduction: bytea in an ordinary table
    with psycopg.connect(realworld_pg["NORTHWIND_URL"]) as conn:
        printed_pictures = conn.execute("SELECT format('%s', picture) FROM categories ORDER BY category_id LIMIT 2")
        assert [row[-1] for row in pictures["rows"]] == [answer("bytea", text) for (text,) in printed_pictures]
