"""discover's lexicon is kept beside the index: a new process reads it instead of building it, a changed
catalog or a damaged file makes it build again, and what it reads is what it built (ADR 0049)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from discover_project import PACKS, Call

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from packs.discover import lexicon, lexicon_store

pytestmark = pytest.mark.anyio
QUERY = 'discover.search(query="which customers placed orders", limit=5)'


async def search_in_new_runtime(project: Path, text: str = QUERY) -> dict[str, Any]:
    """``text`` in a runtime of its own, as a new CLI process would run it."""
    runtime = open_runtime(project, {"KHIVE_PACKS": PACKS})
    try:
        envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    finally:
        await runtime.aclose()
    (result,) = envelope["results"]
    assert result["ok"], result
    return dict(result["result"])


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


def same_lexicon(a: lexicon.Lexicon, b: lexicon.Lexicon) -> bool:
    def postings_equal(x: dict[Any, lexicon.Posting], y: dict[Any, lexicon.Posting]) -> bool:
        return x.keys() == y.keys() and all(
            getattr(x[k], f).dtype == getattr(y[k], f).dtype and np.array_equal(getattr(x[k], f), getattr(y[k], f))
            for k in x for f in ("tables", "where", "evidence", "columns"))

    plain = ("tables", "df", "tokens", "units", "unit_keys", "folded", "adjacent", "unit_df", "table_ids",
             "column_ids", "by_initial")
    return (all(getattr(a, f) == getattr(b, f) for f in plain)
            and postings_equal(a.postings, b.postings) and postings_equal(a.phrases, b.phrases)
            and a.name_part_tables.keys() == b.name_part_tables.keys()
            and all(np.array_equal(a.name_part_tables[k], b.name_part_tables[k]) for k in a.name_part_tables)
            and np.array_equal(a.part_counts, b.part_counts) and list(a.connection_of) == list(b.connection_of))


async def test_a_new_process_reads_the_kept_lexicon_instead_of_building_it(
        scanned: Call, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await scanned(QUERY)
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
    first = await scanned(QUERY)
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
