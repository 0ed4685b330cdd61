"""discover's lexicon is kept beside the index: a new process reads it instead of building it, a changed
catalog or a damaged file makes it build again, and what it reads is what it built (ADR 0049)."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from discover_project import PACKS, Call
from fresh_runtime import op_in_fresh_runtime
from sqlite_project import duckdb_project

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from packs.discover import later, lexicon, lexicon_store

pytestmark = pytest.mark.anyio
QUERY = 'discover.search(query="which customers placed orders", limit=5)'


async def search_in_new_runtime(project: Path, text: str = QUERY) -> dict[str, Any]:
    """``text`` in a runtime of its own, as a new CLI process would run it."""
    return await op_in_fresh_runtime(project, text, {"KHIVE_PACKS": PACKS})


def refs(found: dict[str, Any]) -> list[str]:
    return [ref["id"] for ref in found["refs"]]


class Builds:
    """Counts ``lexicon.build`` calls (and can forbid them) while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, allowed: bool = True) -> None:
        self.count = 0
        original = lexicon.build

        def build(index: Any) -> lexicon.Lexicon:
            self.count += 1
            assert allowed, "the lexicon was built, not read"
            return original(index)

        monkeypatch.setattr(lexicon, "build", build)


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, lexicon.Posting):
        return all(same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def same_lexicon(a: lexicon.Lexicon, b: lexicon.Lexicon) -> bool:
    """Every field the same (a field added to ``Lexicon`` that the store does not keep fails here), but the
    per-process memo of query forms."""
    return all(same_value(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a) if f.name != "forms")


async def test_a_new_process_reads_the_kept_lexicon_instead_of_building_it(
        scanned: Call, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await search_in_new_runtime(runtime.project)  # a closed runtime's lexicon is on disk
    kept = lexicon_store.path_for(runtime.index)
    assert kept.is_file()
    read_back = lexicon_store.read(kept, lexicon_store.key_of(runtime.index), runtime.index.generation)
    assert read_back is not None and same_lexicon(read_back, lexicon.build(runtime.index))
    Builds(monkeypatch, allowed=False)
    assert refs(await search_in_new_runtime(runtime.project)) == refs(first)


async def test_a_changed_catalog_builds_the_lexicon_again(
        scanned: Call, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    await scanned(QUERY)
    db = sqlite3.connect(runtime.project / "billing.sqlite")
    db.execute("CREATE TABLE warranty_claims (id INTEGER PRIMARY KEY, claim_reason TEXT, filed_at TIMESTAMP)")
    db.commit()
    db.close()
    assert "error" not in await scanned('scan.run(connection="billing")')
    builds = Builds(monkeypatch)
    found = await search_in_new_runtime(runtime.project, 'discover.search(query="warranty claim reasons", limit=3)')
    assert builds.count == 1
    assert refs(found)[0] == "main.warranty_claims"
    await search_in_new_runtime(runtime.project)
    assert builds.count == 1  # kept again, under the new catalog's key


@pytest.mark.parametrize("damage", ["garbage", "truncated", "another key"])
async def test_a_damaged_or_stale_file_is_built_again_and_rewritten(
        scanned: Call, runtime: Runtime, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    first = await search_in_new_runtime(runtime.project)
    kept = lexicon_store.path_for(runtime.index)
    data = kept.read_bytes()
    if damage == "garbage":
        kept.write_bytes(b"not a lexicon" * 100)
    elif damage == "truncated":
        kept.write_bytes(data[: len(data) // 2])
    else:
        built = lexicon.build(runtime.index)
        lexicon_store.write(kept, "0" * 64, built)
    builds = Builds(monkeypatch)
    assert refs(await search_in_new_runtime(runtime.project)) == refs(first)
    assert builds.count == 1
    assert lexicon_store.read(kept, lexicon_store.key_of(runtime.index), 0) is not None


POOL_DDL = """
CREATE SCHEMA shop;
CREATE TABLE shop.store (store_id INTEGER PRIMARY KEY, store_name VARCHAR);
CREATE TABLE shop.store_sales (ss_store_id INTEGER REFERENCES shop.store (store_id), ss_net_paid DECIMAL,
                               unit_price DECIMAL);
CREATE TABLE shop.payment (id INTEGER PRIMARY KEY, amount DECIMAL, paid_at TIMESTAMP);
CREATE TABLE shop.payment_p2024_01 (id INTEGER, amount DECIMAL, paid_at TIMESTAMP);
COMMENT ON TABLE shop.store IS 'Physical shops of the retailer';
COMMENT ON COLUMN shop.payment.amount IS 'Amount paid in euros';
CREATE SCHEMA edu;
CREATE TABLE edu.satscores (cds VARCHAR PRIMARY KEY, NumTstTakr INTEGER, AvgScrRead INTEGER);
"""


async def test_what_is_read_back_is_what_was_built_on_a_catalog_using_every_rule(tmp_path: Path) -> None:
    """Folded partitions, borrowed names, phrases, comments and several routing units survive the file."""
    root = duckdb_project(tmp_path / "proj", "pool", POOL_DDL)
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        for text in ('scan.run(connection="pool")', 'discover.search(query="store sales")'):
            envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
            assert envelope["results"][0]["ok"], envelope
        index = runtime.index
        built = lexicon.build(index)
        target, key, generation = lexicon_store.path_for(index), lexicon_store.key_of(index), index.generation
    finally:
        await runtime.aclose()  # waits for the file the search left to write
    kept = lexicon_store.read(target, key, generation)
    assert kept is not None and same_lexicon(kept, built)
    assert list(built.folded.values()) == ["table:pool:shop.payment"]
    assert any(table.borrowed for table in built.tables.values()) and built.phrases and len(built.units) == 2
    assert any(np.any(p.where == lexicon.WHERE_COLUMN_NOTE) for p in built.postings.values())
    assert any(np.any(p.where == lexicon.WHERE_TABLE_NOTE) for p in built.postings.values())


async def test_the_answer_does_not_wait_for_the_file_and_closing_the_runtime_does(
        scanned: Call, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept lexicon is written after the search answers; closing the runtime is the point where it is there."""
    release, writing = threading.Event(), threading.Event()
    original = lexicon_store.write

    def held_write(target: Path, key: str, lex: lexicon.Lexicon) -> None:
        writing.set()
        assert release.wait(30), "the test never let the write go"
        original(target, key, lex)

    monkeypatch.setattr(lexicon_store, "write", held_write)
    fresh = open_runtime(runtime.project, {"KHIVE_PACKS": PACKS})
    kept = lexicon_store.path_for(fresh.index)
    try:
        envelope = await dispatch(parse(QUERY), Context(fresh, "operator:ann", CLI, presentation="verbose"))
        assert envelope["results"][0]["ok"], envelope
        key, generation = lexicon_store.key_of(fresh.index), fresh.index.generation
        assert writing.wait(30) and not kept.exists()  # answered while its file is still being written
    finally:
        release.set()
        await fresh.aclose()
    assert lexicon_store.read(kept, key, generation) is not None


def test_an_older_write_of_a_file_never_lands_after_a_newer_one(tmp_path: Path) -> None:
    """Three writes of one file asked for while the first runs: the second, overtaken, is dropped."""
    target, ran, first_started, release = tmp_path / "f", [], threading.Event(), threading.Event()

    def fill(name: str) -> Callable[[], None]:
        def run() -> None:
            if name == "first":
                first_started.set()
                assert release.wait(30)
            ran.append(name)
        return run

    later.write(tmp_path, target, fill("first"))
    assert first_started.wait(30)
    later.write(tmp_path, target, fill("second"))
    later.write(tmp_path, target, fill("third"))
    later.write(tmp_path, tmp_path / "other", fill("other file"))
    release.set()
    later.finish(tmp_path)
    assert sorted(ran) == ["first", "other file", "third"]
