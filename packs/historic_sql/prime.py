"""Normalize a whole query log's distinct texts up front: a cross-run cache, then a process pool.

The log reader normalizes every distinct text once (``normalize.py``: a tokenize, the canonical text,
and for the first text of each template a sqlglot parse). Done line by line in one process that alone
would cost more than a bare parse of the log; so before the reader folds its lines, ``prime`` takes the
distinct texts, serves what ``.khive/historic-sql-cache.sqlite`` already holds (table ``normalized``,
keyed by the BLAKE2b digest of the raw text under a context of dialect, redaction patterns, normalizer
and sqlglot versions: derived state, delete it any time), and normalizes the rest in a ``forkserver``
pool, streaming: chunks go to the workers while the reader is still reading (never a round trip per
text; in process below ``pool_threshold``). The results go into the reader's ``Normalizer``, whose
per-line calls then hit its in-memory cache. Pool and in-process give the same results: normalization
is a pure function of the text, the dialect and the redaction list. Workers freeze what they start
with and collect young garbage less often (sqlglot trees are cyclic: the collector must run, but the
default thresholds made it cost a fifth of a parse).

Given the scan catalog, each freshly parsed template is also resolved (``resolve_tree``) from the very
tree the normalizer built: ``Primer.analyses`` (template id -> parse result) lets the batch parse skip
parsing those canonical texts a second time. A test checks that this agrees with parsing the
canonical text.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from multiprocessing.pool import AsyncResult, Pool
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from khive.sqlite_util import immediate, open_wal
from packs.historic_sql.analyze import resolve_tree
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.normalize import NORMALIZER_VERSION, NormalizedSql, Normalizer, text_digest
from packs.historic_sql.parse import CACHE_FILE, SQLGLOT_VERSION, pool_context
from packs.historic_sql.parsed import ParsedTemplate, paused_gc

if TYPE_CHECKING:
    from packs.historic_sql.caches import Caches

POOL_THRESHOLD = 500
STREAM_CHUNK = 250  # texts per pool task: about a quarter second of work, so the last task ends the pool soon
# A pool worker runs with the cyclic collector off and is replaced after WORKER_TASKS chunks: sqlglot
# trees are cyclic, and collecting them cost a fifth of the worker's time, while a worker's exit hands
# its memory back at no cost. Its garbage is bounded (about 120 KB per template, ~120 MB per life);
# past WORKER_COLLECT_CHARS characters of SQL in one life (huge texts) it collects anyway.
WORKER_TASKS = 4
WORKER_COLLECT_CHARS = 4_000_000


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
          analysis: Analysis | None = None, analyses: dict[str, ParsedTemplate] | None = None,
          chunk_size: int = STREAM_CHUNK) -> dict[str, int]:
    """Fill ``normalizer`` with the results for ``texts`` (and ``analyses`` with parse results of the
    templates parsed here, when ``analysis`` is given); counts of cached and normalized texts.

    ``texts`` is consumed as it yields: once ``pool_threshold`` texts need normalizing (and there is
    more than one worker) a pool starts and takes them in chunks of ``chunk_size`` while the caller's
    iterable (the log reader) goes on reading. Chunks follow the order texts are first seen in, so a
    file gives the same chunks every time; the results do not depend on them anyway."""
    stored = cache.load() if cache is not None else {}
    redaction = tuple(redaction_patterns)
    seen: set[str] = set()
    chunks: list[list[tuple[str, str]]] = []
    futures: list[AsyncResult[tuple[Rows, Rows, float]]] = []
    pending: list[tuple[str, str]] = []
    cached = 0
    fresh: Rows = []
    cpu = 0.0
    shared: dict[Any, Any] = {}  # equal column uses and joins become one object (ParsedTemplate.from_json)

    def take(chunk: list[tuple[str, str]], result: tuple[Rows, Rows, float]) -> None:
        nonlocal cpu
        rows, parsed, seconds = result
        normalizer.reserve(len(seen) + 1_000)
        for (digest, text), (same, payload) in zip(chunk, rows, strict=True):
            assert digest == same
            normalizer.remember(text, _result(payload))
        fresh.extend(rows)
        if analyses is not None:
            with paused_gc():
                for template, payload in parsed:
                    analyses[template] = ParsedTemplate.from_json(orjson.loads(payload), shared)
        cpu += seconds

    with ExitStack() as stack:
        # multiprocessing's Pool, not concurrent.futures: it replaces retired workers (WORKER_TASKS)
        # by itself; ProcessPoolExecutor(max_tasks_per_child) can hang once every task is submitted
        pool: Pool | None = None
        for text in texts:
            digest = text_digest(text)
            if digest in seen:
                continue
            seen.add(digest)
            payload = stored.get(digest)
            if payload is not None:
                normalizer.reserve(len(seen) + 1_000)
                normalizer.remember(text, _result(payload))
                cached += 1
                continue
            pending.append((digest, text))
            if pool is None and workers > 1 and len(pending) >= pool_threshold:
                pool = stack.enter_context(pool_context().Pool(
                    workers, _init_worker, (normalizer.dialect, redaction, analysis, True), WORKER_TASKS))
            if pool is not None and len(pending) >= chunk_size:
                chunks.append(pending)
                futures.append(pool.apply_async(_chunk, (pending,)))
                pending = []
        if pending:
            chunks.append(pending)
            if pool is not None:
                futures.append(pool.apply_async(_chunk, (pending,)))
        if pool is not None:  # each chunk's results are taken in while the later chunks are computed
            for chunk, future in zip(chunks, futures, strict=True):
                take(chunk, future.get())
        else:  # few texts or one worker: starting processes would cost more than it saves
            _init_worker(normalizer.dialect, redaction, analysis)
            try:
                for chunk in chunks:
                    take(chunk, _chunk(chunk))
            finally:
                _release()
    if cache is not None and fresh:
        cache.store(fresh)
    normalized = len(seen) - cached
    return {"texts": len(seen), "cached": cached, "normalized": normalized,
            "workers": min(workers, len(chunks)) if futures else 1, "chunks": len(chunks),
            "cpuMs": round(cpu * 1000)}


# -- workers (and the in-process path: the same functions) -------------------------------------------------
_WORKER: Normalizer | None = None
_CHARS = 0  # SQL characters normalized since this worker last collected


def _init_worker(dialect: str, redaction_patterns: tuple[str, ...], analysis: Analysis | None,
                 tune_gc: bool = False) -> None:
    global _WORKER
    if tune_gc:  # a pool worker: see WORKER_TASKS
        gc.freeze()
        gc.disable()
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
    global _CHARS
    _CHARS += sum(len(text) for _, text in items)
    if _CHARS > WORKER_COLLECT_CHARS and not gc.isenabled():
        gc.collect()
        _CHARS = 0
    parsed = [(tid, orjson.dumps(dataclasses.replace(result, template_id=tid).to_json()))
              for tid, result in worker.analyses.items() if isinstance(result, ParsedTemplate)]
    worker.analyses.clear()
    return rows, parsed, time.process_time() - started


class Primer:
    """What the log reader calls (``primer(normalizer, texts)``), bound to a project's cache; keeps the
    parse results it made on the way for the batch parse (``analyses``)."""

    def __init__(self, caches: Caches, dialect: str, redaction_patterns: Sequence[str], workers: int,
                 analysis: Analysis | None = None) -> None:
        self.caches, self.dialect, self.workers, self.analysis = caches, dialect, workers, analysis
        self.redaction = list(redaction_patterns)
        self.analyses: dict[str, ParsedTemplate] = {}
        self.stats: dict[str, int] = {}

    def __call__(self, normalizer: Normalizer, texts: Iterable[str]) -> dict[str, int]:
        with self.caches.normalized(self.dialect, self.redaction) as cache:
            self.stats = prime(normalizer, texts, cache=cache, workers=self.workers, analysis=self.analysis,
                               redaction_patterns=self.redaction, analyses=self.analyses)
        return self.stats
