"""``save_to`` (khive/sink.py): sql.execute, sl.query and discover.search write their result to a file under the
project's exports/, through the dispatcher and, once, through the CLI and the warm daemon."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlite_project import sqlite_project

from khive import sink
from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse

pytestmark = pytest.mark.anyio
Call = Callable[[str], Awaitable[dict[str, Any]]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return sqlite_project(tmp_path / "proj", "shop", """
        CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL, total NUMERIC(12, 2), note TEXT);
    """, [("INSERT INTO orders VALUES (?, ?, ?, ?)",
           [(i, ("shipped", "placed", "refunded")[i % 3], i * 1.5, None if i % 2 else 'say "hi", ok')
            for i in range(1, 13)])])


@pytest.fixture
async def call(project: Path) -> AsyncIterator[Call]:
    runtime = open_runtime(project, {})

    async def call(text: str) -> dict[str, Any]:
        envelope = await dispatch(parse(text), Context(runtime, "agent:ann", CLI, presentation="verbose"))
        results = envelope["results"]
        if len(results) > 1:
            return {"results": results}
        return dict(results[0]["result"]) if results[0]["ok"] else {"error": results[0]["error"]}

    yield call
    await runtime.aclose()


def saved(project: Path, answer: dict[str, Any]) -> bytes:
    data = (project / answer["savedTo"]["path"]).read_bytes()
    assert answer["savedTo"]["bytes"] == len(data)
    assert answer["savedTo"]["sha256"] == hashlib.sha256(data).hexdigest()
    return data


async def test_sql_execute_saves_csv_and_answers_with_a_preview(call: Call, project: Path) -> None:
    answer = await call('sql.execute(connection="shop", sql="SELECT id, status, note FROM orders ORDER BY id", '
                        'save_to="q3/orders.csv")')
    assert answer["savedTo"]["path"] == "exports/q3/orders.csv" and answer["savedTo"]["format"] == "csv"
    assert (answer["savedTo"]["rows"], answer["rowCount"], answer["rowsShown"]) == (12, 12, 5)
    assert answer["rows"] == [[1, "placed", None], [2, "refunded", 'say "hi", ok'], [3, "shipped", None],
                              [4, "placed", 'say "hi", ok'], [5, "refunded", None]]
    lines = list(csv.reader(io.StringIO(saved(project, answer).decode())))
    assert lines[0] == ["id", "status", "note"] and len(lines) == 13
    assert lines[1:3] == [["1", "placed", ""], ["2", "refunded", 'say "hi", ok']]  # quoted by CSV's rules


async def test_jsonl_and_json_keep_values_by_the_value_rule(call: Call, project: Path) -> None:
    sql = "SELECT id, CAST(total AS TEXT) AS total, status FROM orders WHERE id <= 2 ORDER BY id"
    lines = await call(f'sql.execute(connection="shop", sql="{sql}", save_to="exports/two.jsonl")')
    assert lines["savedTo"]["path"] == "exports/two.jsonl"  # exports/ may be named or left out
    assert [json.loads(line) for line in saved(project, lines).decode().splitlines()] == [
        {"id": 1, "total": "1.5", "status": "placed"}, {"id": 2, "total": "3", "status": "refunded"}]
    whole = await call(f'sql.execute(connection="shop", sql="{sql}", save_to="two.json")')
    document = json.loads(saved(project, whole))
    assert document["rows"] == [[1, "1.5", "placed"], [2, "3", "refunded"]] and document["sql"] == whole["sql"]


@pytest.mark.parametrize("save_to", ["../khive.yaml", "/tmp/out.csv", "exports/", "orders.txt", "wiki/x/../../a.csv"])
async def test_save_to_outside_exports_or_without_a_format_is_refused(call: Call, project: Path,
                                                                      save_to: str) -> None:
    error = (await call(f'sql.execute(connection="shop", sql="SELECT 1", save_to={json.dumps(save_to)})'))["error"]
    assert error["code"] == "invalid_args" and error["details"]["field"] == "save_to", error
    assert ".csv" in error["details"]["fix"]
    assert not (project / "exports").exists()


async def test_two_ops_of_a_batch_cannot_write_one_file(call: Call) -> None:
    batch = await call('[sql.execute(connection="shop", sql="SELECT 1 AS a", save_to="same.csv"), '
                       'sql.execute(connection="shop", sql="SELECT 2 AS a", save_to="exports/same.csv")]')
    codes = sorted("ok" if result["ok"] else result["error"]["code"] for result in batch["results"])
    assert codes == ["ok", "write_conflict"]


async def test_a_file_over_the_cap_is_refused_and_nothing_is_written(call: Call, project: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sink, "MAX_SAVE_BYTES", 64)
    error = (await call('sql.execute(connection="shop", sql="SELECT * FROM orders", save_to="big.csv")'))["error"]
    assert error["code"] == "limit_exceeded" and "64-byte limit" in error["message"]
    assert not (project / "exports/big.csv").exists()


async def test_sl_query_and_discover_search_save_too(call: Call, project: Path) -> None:
    assert "error" not in await call('scan.run(connection="shop")')
    assert "error" not in await call('sl.bootstrap(connection="shop")')
    counted = await call('sl.query(connection="shop", measures=["orders.orders_count"], '
                         'dimensions=["orders.status"], save_to="status.csv")')
    assert "error" not in counted, counted
    rows = list(csv.reader(io.StringIO(saved(project, counted).decode())))
    assert sorted(rows[1:]) == [["placed", "4"], ["refunded", "4"], ["shipped", "4"]]
    found = await call('discover.search(query="orders status", save_to="refs.jsonl")')
    refs = [json.loads(line) for line in saved(project, found).decode().splitlines()]
    assert [ref["id"] for ref in refs] == [ref["id"] for ref in found["refs"]] and refs
    assert found["savedTo"]["rows"] == len(found["refs"])


def test_the_cli_request_saves_through_the_warm_daemon(project: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KHIVE_HOME": str(tmp_path / "khive-home"),
           "KHIVE_DAEMON_STRICT": "1", "KHIVE_DAEMON_SPAWN_WAIT": "60"}
    khive = [sys.executable, "-m", "khive.cli"]
    try:
        done = subprocess.run([*khive, "--verbose", "request",
                               'sql.execute(connection="shop", sql="SELECT status FROM orders", save_to="s.jsonl")'],
                              cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert "dispatching locally" not in done.stderr
        answer = json.loads(done.stdout)["results"][0]["result"]
        assert len(saved(project, answer).decode().splitlines()) == 12
    finally:
        subprocess.run([*khive, "daemon", "stop"], cwd=project, env=env, capture_output=True, timeout=60,
                       check=False)
