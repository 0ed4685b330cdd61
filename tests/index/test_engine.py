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
from khive.index.search import Hit


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


def many_docs(path: str, text: str) -> Sequence[Document]:
    """A file of several documents (as a scan shard is): ``id kind [->target]`` per line."""
    docs = []
    for line in text.splitlines():
        doc_id, kind, *rest = line.split()
        edges = [Edge("mentions", rest[0][2:])] if rest else []
        docs.append(Document(id=doc_id, kind=kind, title=doc_id, fields={"name": doc_id.replace(":", " ")},
                             edges=edges))
    return docs


def many_index(project: Path, rules: Sequence[EdgeRule]) -> RetrievalIndex:
    return RetrievalIndex(project, [FileSource("many", ("many",), (".txt",), many_docs)],
                          embedder=HashingEmbedder(64), edge_rules=rules, watch=False)


def test_a_file_of_many_documents_is_checked_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    # t:b points at c:x, a later document of the same file: a target not indexed yet is not checked,
    # one indexed earlier in the file is (t:a -> t:b with a rule allowing only columns as targets)
    (tmp_path / "many" / "one.txt").write_text("t:b table ->c:x\nc:x column\nt:a table ->t:b\n")
    rules = (EdgeRule("mentions", frozenset({"table"}), frozenset({"column"})),)
    idx = many_index(tmp_path, rules)
    try:
        report = idx.refresh()
        assert "from t:a to t:b (table) is not allowed" in report.errors["many/one.txt"]
        assert idx.count() == 0  # a bad file leaves none of its documents
        (tmp_path / "many" / "one.txt").write_text("t:b table ->c:x\nc:x column\nt:a table ->c:x\n")
        assert idx.refresh().errors == {}
        assert idx.edges("t:b") == [{"id": "c:x", "relation": "mentions"}]
        assert idx.edges("c:x", direction="in") == [{"id": "t:a", "relation": "mentions"},
                                                    {"id": "t:b", "relation": "mentions"}]
        assert idx.search("x", limit=5)[0].id == "c:x"
    finally:
        idx.close()


def test_a_document_id_in_two_files_is_the_newest_files(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    rules = (EdgeRule("mentions", frozenset({"table"}), frozenset({"table", "column"})),)
    (tmp_path / "many" / "a.txt").write_text("t:a table\nc:shared column\n")
    idx = many_index(tmp_path, rules)
    try:
        idx.refresh()
        (tmp_path / "many" / "b.txt").write_text("t:b table ->c:shared\nc:shared table\nc:shared column\n")
        assert idx.refresh().errors == {}
        shared = idx.get("c:shared")
        assert shared is not None and shared["path"] == "many/b.txt" and shared["kind"] == "column"
        assert idx.count() == 3
        assert {hit.id for hit in idx.search("shared", limit=5)} == {"c:shared"}
    finally:
        idx.close()


def test_hashing_embedder_rows_do_not_depend_on_the_batch() -> None:
    embedder = HashingEmbedder(32)
    texts = ["orders by region", "", "qty qty qty", "customer_id customer id", "a"]
    together = embedder.embed(texts)
    assert together.shape == (5, 32) and together.dtype == np.float32
    for row, text in enumerate(texts):
        assert np.array_equal(together[row], embedder.embed([text])[0])
    assert embedder.embed([]).shape == (0, 32)


def kind_docs(path: str, text: str) -> Sequence[Document]:
    """``id kind words...`` per line: the words are the body the vector lane reads."""
    docs = []
    for line in text.splitlines():
        doc_id, kind, *words = line.split()
        docs.append(Document(id=doc_id, kind=kind, title=doc_id, fields={"body": " ".join(words)}))
    return docs


def test_the_vector_lane_scores_a_kind_as_it_scores_all(tmp_path: Path) -> None:
    """Kinds interleaved within and across files: a kind-filtered vector lane gives each document the score
    the unfiltered lane gives it, and only documents of the asked kinds."""
    (tmp_path / "many").mkdir()
    kinds = ("alpha", "beta", "gamma")
    words = ("apple", "pear", "plum", "fig", "kiwi", "lime", "date")
    for file in range(3):
        lines = [f"doc:f{file}n{n} {kinds[(file + n) % 3]} apple {words[n]} {words[(n + file) % 7]}"
                 for n in range(7)]
        (tmp_path / "many" / f"f{file}.txt").write_text("\n".join(lines))
    index = RetrievalIndex(tmp_path, [FileSource("many", ("many",), (".txt",), kind_docs)],
                           embedder=HashingEmbedder(64), watch=False)
    try:
        def vector_scores(hits: Sequence[Hit]) -> dict[str, float]:
            return {hit.id: hit.lanes["vector"]["raw"] for hit in hits if "vector" in hit.lanes}

        everything = index.search("apple pear", limit=50)
        kind_of = {hit.id: hit.kind for hit in everything}
        all_scores = vector_scores(everything)
        assert {kind_of[doc] for doc in all_scores} == set(kinds)  # every kind has documents the lane scores
        for kind in kinds:
            hits = index.search("apple pear", kinds=[kind], limit=50)
            assert hits and {hit.kind for hit in hits} == {kind}
            assert vector_scores(hits) == {doc: score for doc, score in all_scores.items() if kind_of[doc] == kind}
        both = index.search("apple pear", kinds=["gamma", "alpha"], limit=50)
        assert vector_scores(both) == {doc: score for doc, score in all_scores.items() if kind_of[doc] != "beta"}
    finally:
        index.close()


def test_equal_vector_scores_rank_in_index_order_across_kinds(tmp_path: Path) -> None:
    """Documents of alternating kinds with the same text tie in the vector lane: they rank in the order the
    index took them (file order), whatever their kinds."""
    (tmp_path / "many").mkdir()
    lines = [f"doc:n{n} {('beta', 'alpha', 'gamma')[n % 3]} pear plum" for n in range(9)]
    (tmp_path / "many" / "f.txt").write_text("\n".join(lines))
    index = RetrievalIndex(tmp_path, [FileSource("many", ("many",), (".txt",), kind_docs)],
                           embedder=HashingEmbedder(64), watch=False)
    try:
        hits = index.search("pear plum", limit=20)
        by_rank = sorted((hit.lanes["vector"]["rank"], hit.id) for hit in hits if "vector" in hit.lanes)
        assert [doc for _rank, doc in by_rank] == [f"doc:n{n}" for n in range(9)]
    finally:
        index.close()
