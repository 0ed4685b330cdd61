"""What a result may hold (ADR 0053): long text cut, rows only while their JSON fits ``max_bytes``, and on
PostgreSQL a statement whose rows outgrow that is cancelled instead of read whole into the shared daemon."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pgcluster
import psycopg
import pytest
from mcp_call import request_over_mcp

from khive.scaffold import init_project
from khive.values import CUT, DEFAULT_SHOWN, MAX_NESTING


def _project(root: Path, driver: str, where: str) -> Path:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}\n", f"connections:\n  wh:\n    driver: {driver}\n    {where}\n"))
    return root


def _execute(root: Path, env: dict[str, str], query: str, **args: Any) -> dict[str, Any]:
    """``sql.execute`` over MCP, as an agent sends it; the op's result (or error) entry."""
    extra = "".join(f", {key}={orjson.dumps(value).decode()}" for key, value in args.items())
    ops = f"sql.execute(connection=\"wh\", sql={orjson.dumps(query).decode()}{extra})"

    return request_over_mcp(root, ops, env)


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return dict(result["result"])


# --- any driver: DuckDB, embedded --------------------------------------------------------------------------

@pytest.fixture
def duck(tmp_path: Path) -> Path:
    root = _project(tmp_path / "p", "duckdb", "path: wh.duckdb")
    duckdb.connect(str(root / "wh.duckdb")).close()  # an empty warehouse: the statements make their own rows
    return root


def test_a_long_text_value_is_cut_and_the_note_gives_its_length(duck: Path) -> None:
    length = DEFAULT_SHOWN.text_chars * 3
    answer = _ok(_execute(duck, {}, f"SELECT repeat('é', {length}) AS body, 'short' AS tag"))
    (body, tag), = answer["rows"]
    assert body == "é" * DEFAULT_SHOWN.text_chars + CUT and tag == "short"
    assert not answer["truncated"]  # every row is there; only a value was cut
    (note,) = answer["notes"]
    assert "'body'" in note and f"{length}" in note and "left(" in note


def test_rows_past_max_bytes_are_left_out_and_the_result_says_so(duck: Path) -> None:
    answer = _ok(_execute(duck, {}, "SELECT i, repeat('x', 1000) AS pad FROM range(200) t(i)", limit=200,
                          max_bytes=20_000))
    shown = len(answer["rows"])
    assert 0 < shown < 200 and answer["truncated"] and answer["rowCount"] == shown
    assert [row[0] for row in answer["rows"]] == list(range(shown))  # the first rows, in order
    assert len(orjson.dumps(answer["rows"])) <= 20_000
    assert any(f"the first {shown}" in note and "max_bytes" in note for note in answer["notes"])
    everything = _ok(_execute(duck, {}, "SELECT i, repeat('x', 1000) AS pad FROM range(200) t(i)", limit=200))
    assert everything["rowCount"] == 200 and not everything["truncated"]  # the default cap holds them all


def test_cut_notes_count_only_the_rows_shown(duck: Path) -> None:
    long = DEFAULT_SHOWN.text_chars + 10
    answer = _ok(_execute(duck, {}, f"SELECT repeat('y', {long}) AS body FROM range(10)",
                          max_bytes=3 * (DEFAULT_SHOWN.text_chars + 20)))
    shown = len(answer["rows"])
    assert 0 < shown < 10
    cut_note = next(note for note in answer["notes"] if "text value(s)" in note)
    assert cut_note.startswith(f"column 'body': {shown} text value(s)")


def test_duckdb_stops_reading_rows_that_outgrow_the_result(duck: Path) -> None:
    # 40 rows of 1 MB: reading stops past 2 MiB read (8 x the cap), long before the 40th row is fetched
    answer = _ok(_execute(duck, {}, "SELECT i, repeat('z', 1000000) AS body FROM range(40) t(i)", limit=40))
    assert answer["truncated"] and 1 <= answer["rowCount"] <= 9
    assert any("reading stopped" in note for note in answer["notes"])


def test_sqlite_stops_reading_rows_that_outgrow_the_result(tmp_path: Path) -> None:
    # SQLite fetched limit + 1 rows whole before looking at them: 40 rows of 1 MB were all read for a 256 KiB answer
    root = _project(tmp_path / "p", "sqlite", "path: wh.sqlite")
    with sqlite3.connect(root / "wh.sqlite") as db:
        db.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany("INSERT INTO docs VALUES (?, ?)", [(i, "z" * 1_000_000) for i in range(40)])
    answer = _ok(_execute(root, {}, "SELECT id, body FROM docs ORDER BY id", limit=40))
    assert answer["truncated"] and 1 <= answer["rowCount"] <= 9
    assert answer["rows"][0] == [0, "z" * DEFAULT_SHOWN.text_chars + CUT]
    assert any("reading stopped" in note for note in answer["notes"])
    everything = _ok(_execute(root, {}, "SELECT id, length(body) AS n FROM docs ORDER BY id", limit=40))
    assert everything["rowCount"] == 40 and not everything["truncated"]


def test_a_single_row_over_the_cap_is_named_as_such(duck: Path) -> None:
    answer = _ok(_execute(duck, {}, "SELECT list(i) AS ids FROM range(5000) t(i)", max_bytes=4096))
    assert answer["rows"] == [] and answer["truncated"]
    (note,) = answer["notes"]
    assert note.startswith("no row is shown: the first row alone is") and "max_bytes" in note


def _depth(value: Any) -> int:
    """How deep lists and maps nest in a decoded value (a scalar is 0)."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def _innermost(value: Any) -> Any:
    while isinstance(value, list):
        value = value[0]
    return value


def test_values_nested_past_the_limit_come_back_as_their_json_text(duck: Path) -> None:
    # orjson writes nothing nested deeper than 254 levels, and the result's own depth guard stops at 128: a list
    # or JSON value this deep was an internal error (a 300-deep jsonb on realworld-pg); a shallow one stays a value
    deep, shallow = 300, MAX_NESTING - 1

    def nested_list(levels: int, leaf: int) -> str:  # built from text: the gate's parser refuses deep literals
        return (f"from_json(repeat('[', {levels}) || '{leaf}' || repeat(']', {levels}), "
                f"repeat('[', {levels}) || '\"INTEGER\"' || repeat(']', {levels}))")

    sql = (f"SELECT {nested_list(deep, 1)} AS deep_list, "
           f"(repeat('[', {deep}) || '\"[x\"' || repeat(']', {deep}))::JSON AS deep_json, "
           f"{nested_list(shallow, 2)} AS shallow_list, 3 AS tag")
    (deep_list, deep_json, shallow_list, tag), = _ok(_execute(duck, {}, sql))["rows"]
    assert tag == 3 and _depth(shallow_list) == shallow and _innermost(shallow_list) == 2
    # the first MAX_NESTING levels are arrays, the rest is the JSON text of what is below them
    assert _depth(deep_list) == MAX_NESTING
    assert _depth(orjson.loads(_innermost(deep_list))) == deep - MAX_NESTING
    assert deep_json == "[" * deep + '"[x"' + "]" * deep  # the text itself, the bracket inside a string kept


def test_max_bytes_is_checked(duck: Path) -> None:
    result = _execute(duck, {}, "SELECT 1", max_bytes=10)
    assert result["error"]["code"] == "invalid_args"
    assert "max_bytes" in result["error"]["message"]


# --- PostgreSQL: read a row at a time, cancel what outgrows the result -------------------------------------

SETUP = """
CREATE TYPE mood AS ENUM ('calm', 'loud');
CREATE TABLE docs (id int PRIMARY KEY, feeling mood NOT NULL, body text NOT NULL);
INSERT INTO docs SELECT i, 'loud', repeat(chr(97 + i % 26), 3000000) FROM generate_series(1, 12) AS i;
"""


@pytest.fixture
def warehouse(pg_database: str) -> Iterator[str]:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(SETUP)
    with pgcluster.select_only_role(pg_database) as url:
        yield url


@pytest.mark.postgres
def test_postgres_stops_reading_rows_that_outgrow_the_result(tmp_path: Path, warehouse: str) -> None:
    root = _project(tmp_path / "p", "postgres", "url: env:WH_URL")
    env = {"WH_URL": warehouse}
    # 12 rows of 3 MB: reading stops once 2 MiB (8 x the 256 KiB cap) were read; the enum's type is looked up
    # after the cancelled statement, on the same session
    answer = _ok(_execute(root, env, "SELECT id, feeling, body FROM docs ORDER BY id", limit=50))
    assert answer["truncated"]
    assert 1 <= answer["rowCount"] <= 3
    assert [column["type"] for column in answer["columns"]] == ["int4", "mood", "text"]
    first = answer["rows"][0]
    assert first[:2] == [1, "loud"] and first[2] == "b" * DEFAULT_SHOWN.text_chars + CUT
    assert any("reading stopped" in note for note in answer["notes"])
    # the session is clean for the next statement on the same pooled connection
    again = _ok(_execute(root, env, "SELECT count(*) AS n, min(feeling) AS f FROM docs"))
    assert again["rows"] == [[12, "loud"]] and not again["truncated"]


@pytest.mark.postgres
def test_postgres_keeps_the_columns_of_a_result_without_rows(tmp_path: Path, warehouse: str) -> None:
    root = _project(tmp_path / "p", "postgres", "url: env:WH_URL")
    answer = _ok(_execute(root, {"WH_URL": warehouse},
                          "SELECT id, feeling FROM docs WHERE id < 0 -- a trailing comment"))
    assert answer["rows"] == [] and not answer["truncated"]
    assert answer["columns"] == [{"name": "id", "type": "int4"}, {"name": "feeling", "type": "mood"}]


@pytest.mark.postgres
def test_postgres_limit_and_cut_together(tmp_path: Path, warehouse: str) -> None:
    root = _project(tmp_path / "p", "postgres", "url: env:WH_URL")
    answer = _ok(_execute(root, {"WH_URL": warehouse}, "SELECT id, left(body, 10) AS head FROM docs ORDER BY id",
                          limit=5))
    assert [row[0] for row in answer["rows"]] == [1, 2, 3, 4, 5] and answer["truncated"]
    assert answer["notes"] == []


@pytest.mark.postgres
def test_postgres_json_nested_past_the_limit_is_its_text(tmp_path: Path, warehouse: str) -> None:
    root = _project(tmp_path / "p", "postgres", "url: env:WH_URL")
    answer = _ok(_execute(root, {"WH_URL": warehouse},
                          "SELECT (repeat('{\"a\": [', 150) || '1' || repeat(']}', 150))::jsonb AS deep, "
                          "(repeat('[', 40) || '1' || repeat(']', 40))::jsonb AS shallow"))
    (deep, shallow), = answer["rows"]
    assert deep == '{"a": [' * 150 + "1" + "]}" * 150  # as PostgreSQL prints it
    assert _depth(shallow) == 40
