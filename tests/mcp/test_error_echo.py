"""Errors that would echo a hostile 100 KB argument answer with a bounded message that still names what was wrong
and the fix (ADR 0058, eighth session), asked over MCP the way an agent asks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from sqlite_project import sqlite_project

from khive.bootstrap import open_runtime
from khive.context import Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import MESSAGE_CHARS
from khive.mcp_server import TOOL_NAME, build_server

HOSTILE = "x'\"é" * 25_000  # 100,000 characters, quotes included

# (op, the error code, words the message must still hold: what it is about, and the fix)
CASES: list[tuple[dict[str, Any], str, tuple[str, ...]]] = [
    ({"verb": "scan.entity", "args": {"connection": HOSTILE, "table": "orders"}}, "connection_not_found",
     ("unknown connection", "connections in khive.yaml: shop")),
    ({"verb": "scan.entity", "args": {"connection": "shop", "table": HOSTILE}}, "table_not_found",
     ("no table", "in the latest scan")),
    ({"verb": "scan.entity", "args": {"connection": "shop", "table": "orders", "column": HOSTILE}},
     "column_not_found", ("has no column", "columns: ")),
    ({"verb": "scan.diff", "args": {"connection": "shop", "from": HOSTILE}}, "scan_missing", ("no scan", "scans: ")),
    ({"verb": "sl.read", "args": {"name": HOSTILE}}, "source_not_found", ("no source", "sl.list() shows the sources")),
    ({"verb": "sql.execute", "args": {"connection": "shop", "sql": "SELECT 1", "save_to": HOSTILE}},
     "invalid_args", ("save_to", "")),
    ({"verb": "sql.execute", "args": {"connection": "shop", "sql": "SELECT " + "nosuch_" * 15_000 + " FROM orders"}},
     "query_failed", ("connection 'shop'", "no such column")),
    ({"verb": "historic_sql.submit", "args": {"unit": HOSTILE, "output": {}}}, "invalid_args",
     ("is not a work unit id", "historic_sql.units()")),
    ({"verb": "sl.query", "args": {"connection": "shop", "measures": [HOSTILE]}}, "unknown_name",
     ("unknown measure", "")),
    ({"verb": "wiki." + "q" * 100_000, "args": {}}, "unknown_verb", ("unknown verb", "")),
    ({"verb": "ping", "args": {HOSTILE: 1}}, "invalid_args", ("unknown argument", "ping takes: ")),
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = sqlite_project(tmp_path_factory.mktemp("echo") / "project", "shop",
                          "CREATE TABLE orders (id INTEGER PRIMARY KEY, amount REAL, note TEXT);",
                          [("INSERT INTO orders VALUES (?, ?, ?)", [(1, 2.5, "a"), (2, 4.0, "b")])])

    async def prepare() -> None:
        runtime = open_runtime(root, {})
        try:
            for ops in ('scan.run(connection="shop")', 'sl.bootstrap(connection="shop")'):
                envelope = await dispatch(parse(ops), Context(runtime, "operator:tester", "cli"))
                assert envelope["status"] == "success", envelope
        finally:
            await runtime.aclose()

    anyio.run(prepare)
    return root


async def ask(project: Path, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The error of each op, each asked in a call of its own (a request carries at most 1 MiB)."""
    runtime = open_runtime(project, {})
    errors = []
    try:
        async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as client:
            for op in ops:
                answer = await client.call_tool(TOOL_NAME, {"ops": json.dumps(op)})
                assert answer.structured_content is not None
                (result,) = answer.structured_content["results"]
                errors.append(result["error"])
    finally:
        await runtime.aclose()
    return errors


@pytest.mark.anyio
async def test_errors_quote_a_hostile_argument_bounded_and_still_name_the_fix(shop: Path) -> None:
    errors = await ask(shop, [op for op, _, _ in CASES])
    for (op, code, (about, fix)), error in zip(CASES, errors, strict=True):
        assert error["code"] == code, (op["verb"], error)
        assert len(error["message"]) <= MESSAGE_CHARS, (op["verb"], len(error["message"]))
        assert len(json.dumps(error["details"])) < 10_000, (op["verb"], len(json.dumps(error["details"])))
        assert about in error["message"] and fix in error["message"], (op["verb"], error["message"][-300:])


@pytest.mark.anyio
async def test_thousands_of_unknown_arguments_are_one_short_invalid_args(shop: Path) -> None:
    (error,) = await ask(shop, [{"verb": "ping", "args": {f"arg{i}": i for i in range(5_000)}}])
    assert error["code"] == "invalid_args", error["code"]
    assert error["message"].endswith("and 4,990 more problems"), error["message"][-200:]
    assert len(error["details"]["errors"]) == 10 and error["details"]["moreErrors"] == 4_990


@pytest.mark.anyio
async def test_the_sql_gate_quotes_hostile_sql_bounded(shop: Path) -> None:
    """A 5,000-character word is named in part; 2,000 statements are counted, five of them named."""
    runtime = open_runtime(shop, {})
    try:
        async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as client:
            decisions = []
            for sql in ("x" * 5_000, "SELECT 1; " * 2_000):
                answer = await client.call_tool(TOOL_NAME, {"ops": json.dumps({"verb": "sql.validate",
                                                                                 "args": {"sql": sql}})})
                assert answer.structured_content is not None
                decisions.append(answer.structured_content["results"][0]["result"])
    finally:
        await runtime.aclose()
    word, many = decisions
    assert word["code"] == "not_read_only" and len(word["reason"]) < 500, len(word["reason"])
    assert word["reason"].endswith("may run") and len(word["statementKind"]) < 200
    assert many["code"] == "multiple_statements" and many["reason"].startswith("2000 statements found")
    assert len(many["reason"]) < 300 and len(many["statementKind"]) < 200


@pytest.mark.anyio
async def test_an_audit_query_for_a_huge_glob_is_invalid_args_not_an_internal_error(shop: Path) -> None:
    runtime = open_runtime(shop, {})
    try:
        envelope = await dispatch(parse(json.dumps({"verb": "audit.query", "args": {"verb": "w" * 100_000}})),
                                  Context(runtime, "operator:tester", "cli"))
    finally:
        await runtime.aclose()
    assert envelope["results"][0]["error"]["code"] == "invalid_args", envelope["results"][0]["error"]["code"]
