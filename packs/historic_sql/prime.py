"""Normalize a whole query log's distinct texts up front: a cross-run cache, then a process pool.

The log reader normalizes every distinct text once (``normalize.py``: a sqlglot parse, masking and
generation, about twice a bare parse). Done line by line in one process that alone would cost more
than the whole batch parse; so before the reader folds its lines, ``prime`` takes the distinct texts,
serves what ``.khive/historic-sql-cache.sqlite`` already holds (table ``normalized``, keyed by the
BLAKE2b digest of the raw text under a context of dialect, redaction patterns, normalizer and sqlglot
versions: derived state, delete it any time), and normalizes the rest in a ``forkserver`` pool
(chunks, never a round trip per text; in process below ``pool_threshold``). The results go into the
reader's ``Normalizer``, whose per-line calls then hit its in-memory cache. Pool and in-process give
the same results: normalization is a pure function of the text, the dialect and the redaction list.

Given the scan catalog, each freshly parsed template is also resolved (``resolve_tree``) from the very
tree the normalizer built: ``Primer.analyses`` (template id -> parse result) lets the
batch parse skip parsing those canonical texts a second time. A test checks that this agrees with
parsing the canonical text.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

from khive.sqlite_util import immediate, open_wal
from packs.historic_sql.analyze import resolve_tree
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.normalize import NORMALIZER_VERSION, NormalizedSql, Normalizer
from packs.historic_sql.parse import CACHE_FILE, SQLGLOT_VERSION, chunks_for, pool_context
from packs.historic_sql.parsed import ParsedTemplate

POOL_THRESHOLD = 500
# sqlglot trees are cyclic, so the collector must run; but at the default 700 allocations per young
# collection it ran every few nodes of a tree and cost a fifth of a parse
WORKER_GC_THRESHOLD = (20_000, 20, 20)


def _digest(sql: str) -> str:
    return hashlib.blake2b(sql.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _row(result: NormalizedSql) -> bytes:
    return orjson.dumps([result.template_id, result.canonical_sql, result.kind, list(result.tables),
                         result.parse_failed])


def _result(payload: bytes) -> NormalizedSql:
    template, canonical, kind, tables, failed = orjson.loads(payload)
    return NormalizedSql(template, canonical, kind, tuple(tables), failed)


class NormalCache:
    def __init__(self, path: Path, dialect: str, redaction_patterns: Sequence[str]) -> None:
        self.db = open_wal(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS normalized (context TEXT NOT NULL, raw TEXT NOT NULL, "
                        "payload BLOB NOT NULL, PRIMARY KEY (context, raw))")
        key = orjson.dumps([dialect, list(redaction_patterns), NORMALIZER_VERSION, SQLGLOT_VERSION])
        self.context = hashlib.sha256(key).hexdigest()[:24]

    @classmethod
    def for_project(cls, project: Path, dialect: str, redaction_patterns: Sequence[str]) -> NormalCache:
        return cls(project / ".khive" / CACHE_FILE, dialect, redaction_patterns)

    def load(self) -> dict[str, bytes]:
        rows = self.db.execute("SELECT raw, payload FROM normalized WHERE context = ?", (self.context,))
        return dict(rows)

    def store(self, rows: Iterable[tuple[str, bytes]]) -> None:
        with immediate(self.db):
            self.db.execute("DELETE FROM normalized WHERE context != ?", (self.context,))
            self.db.executemany("INSERT OR REPLACE INTO normalized VALUES (?, ?, ?)",
                                ((self.context, raw, payload) for raw, payload in rows))

    def close(self) -> None:
        self.db.close()


Analysis = tuple[Catalog, tuple[str, ...]]  # (scan catalog, search path)


def prime(normalizer: Normalizer, texts: Iterable[str], *, cache: NormalCache | None = None, workers: int = 1,
          pool_threshold: int = POOL_THRESHOLD, redaction_patterns: Sequence[str] = (),
          analysis: Analysis | None = None, analyses: dict[str, bytes] | None = None) -> dict[str, int]:
    """Fill ``normalizer`` with the results for ``texts`` (and ``analyses`` with parse results of the
    templates parsed here, when ``analysis`` is given); counts of cached and normalized texts."""
    distinct = {_digest(text): text for text in texts}
    normalizer.reserve(len(distinct) + 1_000)
    stored = cache.load() if cache is not None else {}
    todo: list[tuple[str, str]] = []
    for digest, text in distinct.items():
        payload = stored.get(digest)
        if payload is None:
            todo.append((digest, text))
        else:
            normalizer.remember(text, _result(payload))
    todo.sort()
    found: list[tuple[str, bytes]] = []
    pooled = workers > 1 and len(todo) >= pool_threshold
    if pooled:
        fresh, cpu = _pool(todo, normalizer.dialect, tuple(redaction_patterns), analysis, workers, found)
    else:
        _init_worker(normalizer.dialect, tuple(redaction_patterns), analysis)
        try:
            fresh, found, cpu = _chunk(todo)
        finally:
            _release()
    for (digest, text), (same, payload) in zip(todo, fresh, strict=True):
        assert digest == same
        normalizer.remember(text, _result(payload))
    if analyses is not None:
        analyses.update(found)
    if cache is not None and fresh:
        cache.store(fresh)
    return {"texts": len(distinct), "cached": len(distinct) - len(todo), "normalized": len(todo),
            "workers": min(workers, len(todo)) if pooled else 1, "cpuMs": round(cpu * 1000)}


# -- workers (and the in-process path: the same functions) -------------------------------------------------
_WORKER: Normalizer | None = None


def _init_worker(dialect: str, redaction_patterns: tuple[str, ...], analysis: Analysis | None,
                 tune_gc: bool = False) -> None:
    global _WORKER
    if tune_gc:  # a pool worker: what it imported and was given lives as long as it does
        gc.freeze()
        gc.set_threshold(*WORKER_GC_THRESHOLD)
    _WORKER = Normalizer(dialect, redaction_patterns)
    if analysis is not None:
        catalog, search_path = analysis
        _WORKER.analyzer = lambda tree: resolve_tree("", tree, catalog, search_path, dialect)


def _release() -> None:
    global _WORKER
    _WORKER = None


Rows = list[tuple[str, bytes]]


def _chunk(items: list[tuple[str, str]]) -> tuple[Rows, Rows, float]:
    """(digest, normalized row) per text, (template id, parse result JSON) per template parsed here, CPU s."""
    worker = _WORKER
    assert worker is not None, "pool worker started without its initializer"
    started = time.process_time()
    rows = [(digest, _row(worker.normalize(text))) for digest, text in items]
    parsed = [(tid, orjson.dumps(dataclasses.replace(result, template_id=tid).to_json()))
              for tid, result in worker.analyses.items() if isinstance(result, ParsedTemplate)]
    worker.analyses.clear()
    return rows, parsed, time.process_time() - started


def _pool(items: list[tuple[str, str]], dialect: str, redaction: tuple[str, ...], analysis: Analysis | None,
          workers: int, found: Rows) -> tuple[Rows, float]:
    chunks = chunks_for(items, workers)
    context = pool_context()
    out: Rows = []
    cpu = 0.0
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=context,
                             initializer=_init_worker, initargs=(dialect, redaction, analysis, True)) as pool:
        for rows, parsed, seconds in pool.map(_chunk, chunks):
            out.extend(rows)
            found.extend(parsed)
            cpu += seconds
    return out, cpu


class Primer:
    """What the log reader calls (``primer(normalizer, texts)``), bound to a project's cache; keeps the
    parse results it made on the way for the batch parse (``analyses``)."""

    def __init__(self, project: Path, dialect: str, redaction_patterns: Sequence[str], workers: int,
                 analysis: Analysis | None = None) -> None:
        self.project, self.dialect, self.workers, self.analysis = project, dialect, workers, analysis
        self.redaction = list(redaction_patterns)
        self.analyses: dict[str, bytes] = {}
        self.stats: dict[str, int] = {}

    def __call__(self, normalizer: Normalizer, texts: Iterable[str]) -> dict[str, int]:
        cache = NormalCache.for_project(self.project, self.dialect, self.redaction)
        try:
            self.stats = prime(normalizer, texts, cache=cache, workers=self.workers, analysis=self.analysis,
                               redaction_patterns=self.redaction, analyses=self.analyses)
            return self.stats
        finally:
            cache.close()
