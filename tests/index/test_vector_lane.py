"""The vector lane over stored vectors: sparse ones scored without a dense matrix give what the dense product gives."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from khive.index.documents import Document, FileSource
from khive.index.embed import Embedder, HashingEmbedder
from khive.index.engine import RetrievalIndex

WORDS = ("apple", "pear", "plum", "fig", "kiwi", "lime", "date", "quince", "grape", "melon", "order", "status")
QUERIES = ("apple pear", "plum", "order status date", "kiwi lime grape melon", "quince fig apple", "nothing here")


class DenseEmbedder:
    """The hashing vectors with every cell non-zero, so each is stored whole (the dense side of the store)."""

    def __init__(self, dimensions: int) -> None:
        self._hashing = HashingEmbedder(dimensions)
        self.dimensions = dimensions
        self.name = f"dense-{dimensions}"
        self.min_similarity = 0.3

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = self._hashing.embed(texts) + np.float32(0.05)
        out: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        return out


def word_docs(path: str, text: str) -> Sequence[Document]:
    """``id kind words...`` per line; the vector lane sees the words alone."""
    docs = []
    for line in text.splitlines():
        doc_id, kind, *words = line.split()
        docs.append(Document(id=doc_id, kind=kind, title=doc_id, fields={"body": " ".join(words)},
                             embed_text=" ".join(words)))
    return docs


def write_corpus(root: Path, rng: random.Random) -> dict[str, str]:
    """Three files of documents of three kinds with random words; doc id -> its text."""
    (root / "many").mkdir()
    texts: dict[str, str] = {}
    for file in range(3):
        lines = []
        for n in range(40):
            doc_id, words = f"doc:f{file}n{n}", " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
            texts[doc_id] = words
            lines.append(f"{doc_id} {('alpha', 'beta', 'gamma')[(file + n) % 3]} {words}")
        (root / "many" / f"f{file}.txt").write_text("\n".join(lines))
    return texts


@pytest.mark.parametrize("embedder", [HashingEmbedder(64), DenseEmbedder(64)], ids=["sparse", "dense"])
def test_the_vector_lane_finds_every_document_at_or_above_the_floor_with_its_cosine(
        tmp_path: Path, embedder: Embedder) -> None:
    """Whatever the query, the lane holds exactly the documents whose cosine (computed here, densely) reaches
    the embedder's floor, each with that cosine: ruling rows out before multiplying never drops one."""
    texts = write_corpus(tmp_path, random.Random(18))
    index = RetrievalIndex(tmp_path, [FileSource("many", ("many",), (".txt",), word_docs)], embedder=embedder,
                           watch=False)
    try:
        ids = list(texts)
        matrix = embedder.embed([texts[doc] for doc in ids])
        reached_some = 0
        for query in QUERIES:
            cosines = matrix @ embedder.embed([query])[0]
            expected = {doc: round(float(c), 4) for doc, c in zip(ids, cosines, strict=True)
                        if c >= embedder.min_similarity}
            hits = index.search(query, limit=len(ids))
            found = {hit.id: hit.lanes["vector"]["raw"] for hit in hits if "vector" in hit.lanes}
            assert found == expected, query
            reached_some += bool(expected)
        assert reached_some >= 3  # the corpus gives the lane something to find
    finally:
        index.close()


def test_a_kind_filtered_lane_holds_that_kinds_documents_that_reach_the_floor(tmp_path: Path) -> None:
    """The lane's rows are laid out kind by kind from the index's kind order: a kind filter keeps its own kind's
    matching document, not a neighbour's or one of another kind."""
    (tmp_path / "many").mkdir()
    (tmp_path / "many" / "f.txt").write_text("doc:a alpha apple pear\ndoc:b alpha\ndoc:c beta apple pear\n")
    index = RetrievalIndex(tmp_path, [FileSource("many", ("many",), (".txt",), word_docs)],
                           embedder=HashingEmbedder(64), watch=False)
    try:
        hits = index.search("apple pear", kinds=["alpha"], limit=10)
        assert [hit.id for hit in hits if "vector" in hit.lanes] == ["doc:a"]
        assert {hit.id for hit in index.search("apple pear", limit=10) if "vector" in hit.lanes} == {"doc:a", "doc:c"}
    finally:
        index.close()
