"""The vector tables a search loads for the kinds it asks (ADR 0049, sixth session): a search of some kinds answers
as it would over the whole table, reads no other kind's rows, and sees what the index takes in after the load."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_vector_lane import QUERIES, DenseEmbedder, word_docs, write_corpus

from khive.index.documents import FileSource
from khive.index.embed import Embedder, HashingEmbedder
from khive.index.engine import RetrievalIndex
from khive.index.vectortables import VectorTables

KIND_SETS = (["alpha"], ["beta", "alpha"], ["gamma", "nothing"], ["nothing"])


def open_index(root: Path, embedder: Embedder) -> RetrievalIndex:
    return RetrievalIndex(root, [FileSource("many", ("many",), (".txt",), word_docs)], embedder=embedder, watch=False)


def answers(index: RetrievalIndex) -> list[list[tuple[str, dict[str, dict[str, float]]]]]:
    """Every query's hits for every set of kinds: ids in order with each lane's rank and raw score."""
    return [[(hit.id, hit.lanes) for hit in index.search(query, kinds=kinds, limit=30)]
            for kinds in KIND_SETS for query in QUERIES]


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[Path]:
    write_corpus(tmp_path, random.Random(49))
    yield tmp_path


@pytest.mark.parametrize("embedder", [HashingEmbedder(64), DenseEmbedder(64)], ids=["sparse", "dense"])
def test_a_search_of_some_kinds_answers_alike_from_their_table_and_from_the_whole_one(
        corpus: Path, embedder: Embedder) -> None:
    index = open_index(corpus, embedder)
    try:
        from_kinds = answers(index)  # each set of kinds loads a table of its own
        index.search("apple", limit=1)  # every kind: the whole table, which then serves every search
        from_whole = answers(index)
    finally:
        index.close()
    assert from_kinds == from_whole
    assert sum("vector" in lanes for found in from_kinds for _, lanes in found) >= 10  # the lane found things


def test_a_table_for_some_kinds_holds_their_documents_rows_only(corpus: Path) -> None:
    index = open_index(corpus, HashingEmbedder(64))
    try:
        index.refresh()
        table = VectorTables().for_kinds(index.db, ["gamma", "alpha"], 64)
        expected = [int(r[0]) for r in index.db.execute(
            "SELECT rowid FROM docs WHERE kind IN ('alpha', 'gamma') ORDER BY kind, rowid")]
        whole = VectorTables().for_kinds(index.db, None, 64)
    finally:
        index.close()
    assert table.rowids == expected
    assert sorted(table.kind_rows) == ["alpha", "gamma"]
    assert len(whole.rowids) == 120 and sorted(whole.kind_rows) == ["alpha", "beta", "gamma"]


def test_a_search_of_some_kinds_sees_documents_indexed_after_its_table_was_loaded(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    (tmp_path / "many" / "f.txt").write_text("doc:a alpha apple pear\ndoc:b beta apple pear\n")
    index = open_index(tmp_path, HashingEmbedder(64))
    try:
        before = [hit.id for hit in index.search("apple pear", kinds=["alpha"], limit=10) if "vector" in hit.lanes]
        (tmp_path / "many" / "g.txt").write_text("doc:c alpha pear apple\n")
        after = [hit.id for hit in index.search("apple pear", kinds=["alpha"], limit=10) if "vector" in hit.lanes]
    finally:
        index.close()
    assert before == ["doc:a"]
    assert sorted(after) == ["doc:a", "doc:c"]
