"""Query lanes over the index (FTS5 BM25 with field weights, a vector scan) and their fusion.

Fusion is reciprocal rank fusion (k=60). Raw RRF scores are tiny and bunched (~0.016), so the
reported score is normalised against the best achievable fused score for the lanes that ran; the
raw evidence (each lane's rank and raw score) stays on the hit.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from khive.index import leanrows
from khive.index.documents import DEFAULT_WEIGHTS, FIELDS
from khive.index.embed import Embedder
from khive.index.newrows import scope_token
from khive.index.vectorscan import VectorRows
from khive.limits import distinct_words

RRF_K = 60
SNIPPET_TOKENS = 16
MARK_OPEN, MARK_CLOSE = "**", "**"
_META_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class VectorTable:
    """Every stored vector, with each row's document rowid and kind (rebuilt on change); the rows are
    grouped by kind."""

    vectors: VectorRows
    rowids: list[int]
    kind_rows: dict[str, np.ndarray[Any, Any]]  # kind -> row positions
    rowid_array: np.ndarray[Any, Any]  # ``rowids`` as int64: equal scores rank in rowid order


@dataclass
class Hit:
    id: str
    kind: str
    title: str
    connection: str | None
    score: float  # 0..1, normalised fused score
    snippet: str
    metadata: dict[str, Any]
    path: str
    lanes: dict[str, dict[str, float]] = field(default_factory=dict)  # lane -> {rank, raw}
    matched_field: str | None = None


def fts_query(text: str) -> str:
    """An FTS5 OR-query of the distinct words of ``text`` (each quoted, so no FTS syntax leaks in)."""
    words = distinct_words(text)  # the same words limits.query_terms counts
    return " OR ".join(f'"{word}"' for word in words)


def _filters(kinds: Sequence[str] | None, connection: str | None, where: Mapping[str, Any] | None
             ) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if kinds:
        clauses.append(f"d.kind IN ({', '.join('?' * len(kinds))})")
        params.extend(kinds)
    if connection is not None:
        clauses.append("d.connection = ?")
        params.append(connection)
    for key, value in (where or {}).items():
        if not _META_KEY_RE.match(key):
            raise ValueError(f"metadata filter key {key!r} must be a plain name")
        clauses.append(f"json_extract({leanrows.METADATA}, '$.{key}') IS ?")
        params.append(orjson.dumps(value).decode() if isinstance(value, (dict, list)) else value)
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


def fts_search(db: sqlite3.Connection, query: str, *, kinds: Sequence[str] | None = None,
               connection: str | None = None, limit: int = 20, weights: Mapping[str, float] | None = None,
               where: Mapping[str, Any] | None = None) -> list[tuple[int, float]]:
    """(rowid, bm25 score (higher is better)) best first; ``snippets()`` makes the snippets of the hits kept."""
    match = fts_query(query)
    if not match:
        return []
    merged = {**DEFAULT_WEIGHTS, **(weights or {})}
    weight_args = ", ".join(str(float(merged[name])) for name in FIELDS) + ", 0.0"  # the scope column never scores
    # Kind and connection are tokens of the unweighted `scope` column: intersecting with them inside FTS5
    # (scope first) scores only those documents, where a join to `docs` would score every match first.
    scopes = []
    if kinds:
        scopes.append(f"scope : ({' OR '.join(scope_token('kx', kind) for kind in kinds)})")
    if connection is not None:
        scopes.append(f"scope : {scope_token('cx', connection)}")
    if scopes:
        match = " AND ".join([*scopes, f"({match})"])
    extra, params = _filters(None, None, where)
    if extra:
        sql = (f"SELECT d.rowid, bm25(docs_fts, {weight_args}) AS rank "
               f"FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid "
               f"WHERE docs_fts MATCH ?{extra} ORDER BY rank LIMIT ?")
    else:
        sql = f"SELECT rowid, bm25(docs_fts, {weight_args}) AS rank FROM docs_fts WHERE docs_fts MATCH ? " \
              "ORDER BY rank LIMIT ?"
    rows = db.execute(sql, (match, *params, limit)).fetchall()
    return [(int(r[0]), -float(r[1])) for r in rows]


def snippets(db: sqlite3.Connection, query: str, rowids: Sequence[int]) -> dict[int, str]:
    """rowid -> FTS snippet for ``query``, for these rows only.

    Not part of the ranking query: there snippet() runs for every matching row before the sort and
    LIMIT (it tokenizes each whole document), which made it ~90% of a search over long pages.
    """
    match = fts_query(query)
    if not match or not rowids:
        return {}
    sql = (f"SELECT rowid, snippet(docs_fts, -1, '{MARK_OPEN}', '{MARK_CLOSE}', '…', {SNIPPET_TOKENS}) "
           f"FROM docs_fts WHERE docs_fts MATCH ? AND rowid IN ({', '.join('?' * len(rowids))})")
    return {int(r[0]): str(r[1]) for r in db.execute(sql, (match, *rowids))}


def snippets_by_id(db: sqlite3.Connection, query: str, ids: Sequence[str]) -> dict[str, str]:
    """doc id -> FTS snippet for ``query``, for these documents only."""
    match = fts_query(query)
    if not match or not ids:
        return {}
    sql = (f"SELECT d.id, snippet(docs_fts, -1, '{MARK_OPEN}', '{MARK_CLOSE}', '…', {SNIPPET_TOKENS}) "
           f"FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid "
           f"WHERE docs_fts MATCH ? AND d.id IN ({', '.join('?' * len(ids))})")
    return {str(r[0]): str(r[1]) for r in db.execute(sql, (match, *ids))}


def vector_search(db: sqlite3.Connection, vectors: VectorTable, embedder: Embedder,
                  query: str, *, kinds: Sequence[str] | None = None, connection: str | None = None,
                  where: Mapping[str, Any] | None = None, limit: int = 20, floor: float = 0.0
                  ) -> list[tuple[int, float]]:
    """(rowid, cosine >= floor) best first; a plain scan of the in-memory matrix (exact, fast to ~1e5 rows)."""
    rowids = vectors.rowids
    if not rowids:
        return []
    query_vector = embedder.embed([query])[0]
    if not query_vector.any():
        return []
    floor = max(floor, 1e-9)  # below the floor a vector rank never counts
    if kinds:  # only the asked kinds' rows are scored
        present = [kind for kind in kinds if kind in vectors.kind_rows]
        rows = np.concatenate([vectors.kind_rows[k] for k in present]) if present else np.zeros(0, dtype=np.int64)
        scored = vectors.vectors.scores_at(rows, query_vector, floor)
        kept = scored >= floor
        candidates, values = rows[kept], scored[kept]
        ranked = np.argsort(-values, kind="stable")  # ties: asked kind, then rowid
    else:
        scores = vectors.vectors.scores(query_vector, floor)
        candidates = np.flatnonzero(scores >= floor)
        values = scores[candidates]
        ranked = np.lexsort((vectors.rowid_array[candidates], -values))  # ties: rowid
    order, order_values = candidates[ranked], values[ranked]
    extra, params = _filters(kinds, connection, where)
    picked: list[tuple[int, float]] = []
    batch = max(limit * 4, 64)
    for start in range(0, len(order), batch):
        chunk = [(rowids[i], value) for i, value in zip(order[start : start + batch].tolist(),
                                                         order_values[start : start + batch].tolist(), strict=True)
                 if value > 0]
        if not chunk:
            break
        if extra:
            allowed = {int(r[0]) for r in db.execute(
                f"SELECT d.rowid FROM docs d WHERE d.rowid IN ({', '.join('?' * len(chunk))}){extra}",
                (*[rowid for rowid, _ in chunk], *params))}
            chunk = [item for item in chunk if item[0] in allowed]
        picked.extend(chunk)
        if len(picked) >= limit:
            break
    return picked[:limit]


def fuse(db: sqlite3.Connection, lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
         *, limit: int, min_similarity: float = 0.0, query: str = "") -> list[Hit]:
    """The fused hits; a hit the lexical lane found gets its FTS snippet for ``query``, any other its lead."""
    lanes_run = 1 + (1 if semantic else 0)
    found = {rowid for rowid, _ in lexical}
    # A vector rank counts only above the embedder's floor, for every hit: a dense model gives every page a
    # positive cosine, and letting weak ones vote lifts pages that merely share a stop word (bench/embedders.py).
    semantic = [(rowid, cosine) for rowid, cosine in semantic if cosine >= min_similarity]
    fused: dict[int, float] = {}
    evidence: dict[int, dict[str, dict[str, float]]] = {}
    for rank, (rowid, score) in enumerate(lexical, start=1):
        fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
        evidence.setdefault(rowid, {})["fts"] = {"rank": rank, "raw": round(score, 4)}
    for rank, (rowid, cosine) in enumerate(semantic, start=1):
        fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
        evidence.setdefault(rowid, {})["vector"] = {"rank": rank, "raw": round(cosine, 4)}
    best = lanes_run / (RRF_K + 1)
    ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]
    if not ranked:
        return []
    rows = {int(r[0]): r for r in db.execute(
        f"SELECT d.rowid, d.id, d.kind, d.title, d.connection, {leanrows.METADATA}, {leanrows.PATH}, "
        f"substr(f.summary, 1, 400), "
        f"substr(f.body, 1, 400) "
        f"FROM docs d JOIN docs_fts f ON f.rowid = d.rowid WHERE d.rowid IN ({', '.join('?' * len(ranked))})",
        [rowid for rowid, _ in ranked])}
    lexical_snippets = snippets(db, query, [rowid for rowid, _ in ranked if rowid in found])
    hits = []
    for rowid, score in ranked:
        row = rows.get(rowid)
        if row is None:
            continue
        snippet = lexical_snippets.get(rowid) or _lead(row[7] or row[8] or "")
        hits.append(Hit(id=row[1], kind=row[2], title=row[3], connection=row[4], score=round(score / best, 4),
                        snippet=snippet, metadata=orjson.loads(row[5]), path=row[6], lanes=evidence[rowid]))
    return hits


def _lead(text: str, length: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"
