"""The retrieval index: freshness proportional to change, bad files, versions, edge rules, lanes."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, Edge, FileSource
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex


def note_docs(path: str, text: str) -> Sequence[Document]:
    if text.startswith("!"):
        raise ValueError("bad note: starts with '!'")
    name = Path(path).stem
    edges = [Edge("mentions", f"note:{word[1:]}") for word in text.split() if word.startswith("@")]
    return [Document(id=f"note:{name}", kind="note", title=name, fields={"name": name, "body": text},
                     metadata={"path": path}, edges=edges)]


RULES = (EdgeRule("mentions", frozenset({"note"}), frozenset({"note"})),)


def make_index(project: Path, *, version: str = "1", watch: bool = True, vector: bool = True,
               rules: Sequence[EdgeRule] = RULES) -> RetrievalIndex:
    source = FileSource("notes", ("notes",), (".txt",), note_docs, version=version)
    return RetrievalIndex(project, [source], embedder=HashingEmbedder(64) if vector else None, edge_rules=rules,
                          watch=watch)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "notes" / "a").mkdir(parents=True)
    for index in range(30):
        (tmp_path / "notes" / "a" / f"n{index}.txt").write_text(f"note number {index} about apples")
    return tmp_path


@pytest.fixture(params=[True, False], ids=["inotify", "stat-walk"])
def index(request: pytest.FixtureRequest, project: Path) -> Iterator[RetrievalIndex]:
    idx = make_index(project, watch=request.param)
    first = idx.refresh()
    assert first.full and first.reindexed == 30
    yield idx
    idx.close()


def ids(index: RetrievalIndex, query: str) -> list[str]:
    return [hit.id for hit in index.search(query, limit=50)]


def test_nothing_changed_costs_nothing(index: RetrievalIndex) -> None:
    report = index.refresh()
    assert report.reindexed == 0 and report.removed == 0
    assert index.generation == 1


def test_edit_create_delete_are_seen_at_proportional_cost(index: RetrievalIndex, project: Path) -> None:
    (project / "notes/a/n3.txt").write_text("note three is about bananas now")
    report = index.refresh()
    assert report.reindexed == 1
    assert ids(index, "bananas") == ["note:n3"]
    (project / "notes/a/new.txt").write_text("a brand new cherry note")
    (project / "notes/a/n4.txt").unlink()
    report = index.refresh()
    assert report.reindexed == 1 and report.removed == 1
    assert ids(index, "cherry") == ["note:new"]
    assert "note:n4" not in ids(index, "apples")


def test_touched_file_is_not_reparsed(index: RetrievalIndex, project: Path) -> None:
    path = project / "notes/a/n5.txt"
    os.utime(path, ns=(1, 1))
    report = index.refresh()
    assert report.reindexed == 0 and report.removed == 0


def test_directory_removed_and_recreated(index: RetrievalIndex, project: Path) -> None:
    import shutil

    shutil.rmtree(project / "notes/a")
    (project / "notes/a").mkdir()
    (project / "notes/a/only.txt").write_text("the only durian")
    index.refresh()
    assert index.count() == 1
    assert ids(index, "durian") == ["note:only"]


def test_bad_file_is_recorded_and_cleared(index: RetrievalIndex, project: Path) -> None:
    (project / "notes/a/bad.txt").write_text("! not a note")
    report = index.refresh()
    assert "notes/a/bad.txt" in report.errors
    assert index.item_errors() == {"notes/a/bad.txt": "bad note: starts with '!'"}
    (project / "notes/a/bad.txt").write_text("fixed elderberry")
    index.refresh()
    assert index.item_errors() == {}
    assert ids(index, "elderberry") == ["note:bad"]


def test_a_new_process_catches_up_with_changes_made_meanwhile(project: Path) -> None:
    first = make_index(project)
    first.refresh()
    first.close()
    (project / "notes/a/n1.txt").write_text("fig")
    (project / "notes/a/n2.txt").unlink()
    second = make_index(project)
    try:
        report = second.refresh()
        assert report.full and report.reindexed == 1 and report.removed == 1
        assert ids(second, "fig") == ["note:n1"]
    finally:
        second.close()


def test_source_version_bump_reindexes_everything(project: Path) -> None:
    make_index(project).close()
    first = make_index(project)
    first.refresh()
    first.close()
    bumped = make_index(project, version="2")
    try:
        assert bumped.refresh().reindexed == 30
    finally:
        bumped.close()


def test_edges_stored_and_rules_enforced(project: Path) -> None:
    (project / "notes/a/link.txt").write_text("see @n1 and @missing")
    idx = make_index(project)
    try:
        idx.refresh()
        assert idx.edges("note:link") == [{"id": "note:missing", "relation": "mentions"},
                                         {"id": "note:n1", "relation": "mentions"}]
        assert idx.edges("note:n1", direction="in") == [{"id": "note:link", "relation": "mentions"}]
        problems = idx.edge_problems(Document("x", "note", "x", {}, edges=[Edge("likes", "note:n1")]))
        assert problems and "'likes' is not declared" in problems[0]
        wrong_kind = Document("t", "table", "t", {}, edges=[Edge("mentions", "note:n1")])
        assert "a table document cannot have a 'mentions' edge" in idx.edge_problems(wrong_kind)[0]
    finally:
        idx.close()
    strict = make_index(project, version="3", rules=(EdgeRule("mentions", frozenset({"note"}),
                                                              frozenset({"wiki"})),))
    try:
        report = strict.refresh()
        assert "not allowed; targets may be: wiki" in report.errors["notes/a/link.txt"]
        assert strict.get("note:link") is None
    finally:
        strict.close()


def test_vector_lane_and_score_range(project: Path) -> None:
    with_vectors = make_index(project)
    try:
        hits = with_vectors.search("apples number", limit=5)
        assert hits and all(0 < hit.score <= 1 for hit in hits)
        assert set(hits[0].lanes) == {"fts", "vector"}
        assert hits[0].score == 1.0  # first in both lanes is the best achievable fused score
    finally:
        with_vectors.close()


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashingEmbedder(128)
    first, second = embedder.embed(["orders by region", "orders by region"])
    assert np.array_equal(first, second)
    assert abs(float(np.linalg.norm(first)) - 1.0) < 1e-6
    similar, different = embedder.embed(["orders per region", "zebra crossing"])
    assert float(first @ similar) > float(first @ different)
    assert not embedder.embed([""])[0].any()


def test_fts_query_never_leaks_syntax(index: RetrievalIndex) -> None:
    for query in ['"', "AND OR NOT", "apples*", "note:n1", "(", "NEAR(a b)"]:
        index.search(query)  # no sqlite3.OperationalError
    assert index.search("   ") == []
