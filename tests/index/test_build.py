"""The index build at speed (ADR 0048): compact vectors, a bulk first build, and what must not change."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from khive.index.documents import Document, FileSource
from khive.index.embed import HashingEmbedder, fnv1a_64, tokens
from khive.index.engine import RetrievalIndex

DIMS = 64


def line_docs(path: str, text: str) -> Sequence[Document]:
    """``id words...`` per line: the words are the body the vector lane reads."""
    docs = []
    for line in text.splitlines():
        doc_id, *words = line.split()
        docs.append(Document(id=doc_id, kind="note", title=doc_id, fields={"body": " ".join(words)}))
    return docs


class DenseEmbedder:
    """Every cell non-zero, as a neural model's vectors are: stored whole."""

    name = "dense-test"
    dimensions = DIMS
    min_similarity = 0.0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        hashed = HashingEmbedder(DIMS).embed(texts)
        out = (hashed + np.float32(0.01)).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: npt.NDArray[np.float32] = (out / norms).astype(np.float32)
        return normalised


# short texts (a few cells), a text with nearly every cell set, and one with no token at all
LINES = ["doc:short apple pear", "doc:one plum", "doc:empty ...",
         "doc:long " + " ".join(f"word{n}" for n in range(400)), "doc:mixed apple word7 word9 fig"]


def build(tmp_path: Path, embedder: HashingEmbedder | DenseEmbedder) -> RetrievalIndex:
    (tmp_path / "notes").mkdir(parents=True, exist_ok=True)
    (tmp_path / "notes" / "a.txt").write_text("\n".join(LINES))
    index = RetrievalIndex(tmp_path, [FileSource("notes", ("notes",), (".txt",), line_docs)], embedder=embedder,
                           watch=False)
    index.refresh()
    return index


def vector_scores(index: RetrievalIndex, query: str) -> dict[str, float]:
    return {hit.id: hit.lanes["vector"]["raw"] for hit in index.search(query, limit=50) if "vector" in hit.lanes}


def expected_scores(embedder: HashingEmbedder | DenseEmbedder, query: str) -> dict[str, float]:
    """The cosine of the query with each document's text, from the embedder itself (nothing stored)."""
    texts = {line.split()[0]: line for line in LINES}  # what the lane reads: the title (the id), then the body
    rows = embedder.embed(list(texts.values()))
    query_vector = embedder.embed([query])[0]
    return {doc: round(float(row @ query_vector), 4) for doc, row in zip(texts, rows, strict=True)
            if float(row @ query_vector) >= max(embedder.min_similarity, 1e-9)}


def stored_bytes(index: RetrievalIndex) -> int:
    return int(index.db.execute("SELECT sum(length(vector)) FROM vectors").fetchone()[0])


def test_the_vector_lane_scores_what_the_embedder_computes_sparse_or_dense(tmp_path: Path) -> None:
    for embedder in (HashingEmbedder(DIMS), DenseEmbedder()):
        index = build(tmp_path / embedder.name, embedder)
        try:
            for query in ("apple pear", "word7 word9 word11", "plum fig apple"):
                assert vector_scores(index, query) == expected_scores(embedder, query), (embedder.name, query)
        finally:
            index.close()


def test_vectors_of_few_cells_are_stored_in_a_fraction_of_a_whole_row(tmp_path: Path) -> None:
    sparse = build(tmp_path / "sparse", HashingEmbedder(DIMS))
    dense = build(tmp_path / "dense", DenseEmbedder())
    try:
        whole_rows = len(LINES) * DIMS * 4
        assert stored_bytes(dense) == whole_rows
        # the 400-word text fills nearly every cell and is stored whole; the four others take a few cells each
        assert stored_bytes(sparse) < DIMS * 4 + 4 * 6 * 8
    finally:
        sparse.close()
        dense.close()


def test_an_index_holding_whole_rows_is_read_as_before(tmp_path: Path) -> None:
    """Vectors written whole (as every index before ADR 0048 holds them) score the same when read back."""
    embedder = HashingEmbedder(DIMS)
    index = build(tmp_path, embedder)
    try:
        before = vector_scores(index, "apple pear word7")
        rows = index.db.execute("SELECT doc_rowid, d.title FROM vectors JOIN docs d ON d.rowid = doc_rowid").fetchall()
        texts = {line.split()[0]: line for line in LINES}
        for rowid, title in rows:
            index.db.execute("UPDATE vectors SET vector = ? WHERE doc_rowid = ?",
                             (embedder.embed([texts[title]])[0].tobytes(), rowid))
        assert stored_bytes(index) == len(LINES) * DIMS * 4
        index.close()
        index = RetrievalIndex(tmp_path, [FileSource("notes", ("notes",), (".txt",), line_docs)],
                               embedder=embedder, watch=False)
        assert not index.refresh().changed
        assert vector_scores(index, "apple pear word7") == before
    finally:
        index.close()


def reference_row(embedder: HashingEmbedder, text: str) -> npt.NDArray[np.float32]:
    """The hashing embedder's definition, one token at a time: signed counts per cell, then unit length."""
    row = np.zeros(embedder.dimensions, dtype=np.float32)
    for token in tokens(text):
        value = fnv1a_64(token.encode())
        row[value % embedder.dimensions] += 1.0 if (value >> 63) & 1 else -1.0
    norm = np.linalg.norm(row[None, :], axis=1, keepdims=True)[0, 0]
    return row / norm if norm > 0 else row


def test_the_hashing_embedders_cells_are_its_rows_without_the_zeros() -> None:
    """Bit for bit, including a text whose sum of squares is past float32's whole numbers (one word 5,000 times)
    and colliding tokens whose signs cancel (8 cells for many words)."""
    texts = ["orders by region", "", "...", "qty qty qty", "word " * 5000 + "other", *LINES,
             " ".join(f"w{n}" for n in range(300))]
    for dims in (8, DIMS, 256):
        embedder = HashingEmbedder(dims)
        cells = embedder.cells(texts)
        rows = embedder.embed(texts)
        for row, text in enumerate(texts):
            expected = reference_row(embedder, text)
            assert rows[row].tobytes() == expected.tobytes(), (dims, text[:20])
        assert int(cells.counts.sum()) == np.count_nonzero(rows)
        assert cells.dense().tobytes() == rows.tobytes()



def test_a_batchs_rows_are_each_texts_own_wherever_its_rows_end() -> None:
    """Empty rows first and last, texts that lower-case into more characters (some into ASCII letters) and a
    text holding a NUL give, in a batch, each text's own row bit for bit."""
    plain = ["", "Orders BY Region", "", "İstanbul ΣΑΣ straße", "a1b2 c3", ""]
    for texts in (plain, [*plain, "null\x00inside"], ["only"], ["\x00"]):
        embedder = HashingEmbedder(DIMS)
        rows = embedder.embed(texts)
        for row, text in enumerate(texts):
            assert rows[row].tobytes() == reference_row(embedder, text).tobytes(), text

KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
from khive.index.documents import Document, FileSource
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex

def parse(path, text):
    if path.endswith("c.txt"):  # the third file: the process dies in the middle of the build
        os.kill(os.getpid(), signal.SIGKILL)
    return [Document(id=line.split()[0], kind="note", title=line.split()[0], fields={"body": line})
            for line in text.splitlines()]

index = RetrievalIndex(Path(sys.argv[1]), [FileSource("notes", ("notes",), (".txt",), parse)],
                       embedder=HashingEmbedder(64), watch=False)
index.refresh()
"""


def note_files(project: Path) -> None:
    (project / "notes").mkdir(parents=True, exist_ok=True)
    for name in "abcd":
        (project / "notes" / f"{name}.txt").write_text("\n".join(f"doc:{name}{n} {name} apple note {n}"
                                                                 for n in range(50)))


LOOKUPS = {"docs_id", "docs_item", "docs_kind", "docs_up", "edges_target", "shadowed_item"}


def lookup_indexes(index: RetrievalIndex) -> set[str]:
    return {str(row[0]) for row in index.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                    "AND name NOT LIKE 'sqlite_autoindex%'")}


def test_a_build_killed_midway_leaves_no_half_index(tmp_path: Path) -> None:
    """A process killed while building from nothing (lookup indexes dropped, two files written) commits
    nothing: the next process finds an empty index with its lookup indexes and builds every file."""
    note_files(tmp_path)
    done = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(tmp_path)], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    index = RetrievalIndex(tmp_path, [FileSource("notes", ("notes",), (".txt",), line_docs)],
                           embedder=HashingEmbedder(DIMS), watch=False)
    try:
        assert index.count() == 0 and not index.item_hashes()
        assert lookup_indexes(index) == LOOKUPS
        report = index.refresh()
        assert report.full and report.reindexed == 4 and index.count() == 200
        assert lookup_indexes(index) == LOOKUPS
        assert [row["id"] for row in index.rows_at("notes/c.txt")][:2] == ["doc:c0", "doc:c1"]
    finally:
        index.close()


def test_a_build_from_nothing_then_an_edit_replaces_that_files_documents(tmp_path: Path) -> None:
    note_files(tmp_path)
    index = RetrievalIndex(tmp_path, [FileSource("notes", ("notes",), (".txt",), line_docs)],
                           embedder=HashingEmbedder(DIMS), watch=False)
    try:
        default_cache = index.db.execute("PRAGMA cache_size").fetchone()[0]
        assert index.refresh().reindexed == 4
        assert index.db.execute("PRAGMA cache_size").fetchone()[0] == default_cache  # the build's cache is given back
        (tmp_path / "notes" / "b.txt").write_text("doc:b0 b pear\ndoc:bx b plum")
        index.close()
        index = RetrievalIndex(tmp_path, [FileSource("notes", ("notes",), (".txt",), line_docs)],
                               embedder=HashingEmbedder(DIMS), watch=False)
        report = index.refresh()  # not from nothing: the file's old documents are looked up and removed
        assert report.reindexed == 1 and index.count() == 152
        assert [row["id"] for row in index.rows_at("notes/b.txt")] == ["doc:b0", "doc:bx"]
        assert [hit.id for hit in index.search("pear", limit=5, vector=False)] == ["doc:b0"]
    finally:
        index.close()
