"""Through the dispatcher: after the warehouse changes and is scanned again, a warm process's ``discover.search``
and ``discover.lookup`` answer what a process with an index built from nothing answers (ADR 0050, 0051)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlite_project import sqlite_project

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime

pytestmark = pytest.mark.anyio

PACKS = "core,wiki,scan,sl,discover"
DDL = """
CREATE TABLE "sales.orders" (id INTEGER PRIMARY KEY, "customer.name" TEXT, status TEXT, "tötal" NUMERIC);
CREATE TABLE "it's" (id INTEGER PRIMARY KEY, language TEXT);
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, segment TEXT);
"""
EDITS = [
    'ALTER TABLE customers ADD COLUMN email TEXT',
    'ALTER TABLE "sales.orders" RENAME COLUMN status TO state',
    "ALTER TABLE \"it's\" RENAME TO \"languages spoken\"",
    'DROP TABLE customers',
]
QUERIES = ["orders status", "customer name", "languages French", "state of sales orders", "segment email"]


def make_project(root: Path) -> Path:
    return sqlite_project(root, "wh", DDL, [
        ('INSERT INTO "it\'s" VALUES (?, ?)', enumerate(["English", "French", "German"])),
        ('INSERT INTO "sales.orders" VALUES (?, ?, ?, ?)',
         [(i, f"Customer {i}", ["placed", "shipped"][i % 2], i * 3) for i in range(12)]),
        ("INSERT INTO customers VALUES (?, ?, ?)", [(i, f"Customer {i}", "smb") for i in range(5)]),
    ])


async def call(runtime: Runtime, text: str) -> dict[str, Any]:
    envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    (result,) = envelope["results"]
    assert result["ok"], result
    return dict(result["result"])


async def answers(runtime: Runtime) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for query in QUERIES:
        result = await call(runtime, f'discover.search(query="{query}", kinds=["table", "column"], limit=10)')
        found[query] = [(ref["id"], ref.get("kind"), ref.get("reached")) for ref in result["refs"]]
    ids = sorted({ref[0] for refs in found.values() for ref in refs})
    for doc_id in ids:
        result = await call(runtime, f'discover.lookup(id="{doc_id}")')
        found[f"lookup {doc_id}"] = {k: v for k, v in result.items() if k not in ("elapsed_ms", "timing")}
    return found


async def test_a_rescanned_warehouse_answers_as_a_fresh_index(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    runtime = open_runtime(project, {"KHIVE_PACKS": PACKS})
    try:
        assert "error" not in await call(runtime, 'scan.run(connection="wh")')
        await answers(runtime)  # the index and the lexicon built, kept warm
        db = sqlite3.connect(project / "wh.sqlite")
        for edit in EDITS:
            db.execute(edit)
            db.commit()
            assert "error" not in await call(runtime, 'scan.run(connection="wh")')
            warm = await answers(runtime)
            fresh_root = tmp_path / "fresh"
            shutil.rmtree(fresh_root, ignore_errors=True)
            shutil.copytree(project, fresh_root, ignore=shutil.ignore_patterns("index.sqlite*", "lexicon*"))
            fresh = open_runtime(fresh_root, {"KHIVE_PACKS": PACKS})
            try:
                assert warm == await answers(fresh), edit
            finally:
                await fresh.aclose()
        db.close()
    finally:
        await runtime.aclose()
