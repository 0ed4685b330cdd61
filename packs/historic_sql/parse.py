"""Batch parse: every template of a run through ``analyze`` in one process pool, with a cross-run cache.

Pool. The templates still to parse are sorted by id and cut into chunks (about eight per worker, at
most 1,000 templates each); each chunk is one task, so a worker pays one IPC round trip per chunk, never
per query, and results come back as one JSON document per template. Workers come from the
``forkserver`` start method (``spawn`` where there is none; the preload list is set to this pack's
analyzer, so sqlglot is imported once), receive the catalog once through the pool initializer and
freeze the GC generations they start with. ``max_workers`` is the configured concurrency or
``os.cpu_count()``. Below ``pool_threshold`` templates (default 500) the batch is parsed in-process:
starting workers costs more than it saves. Pool and in-process runs give identical results
(``analyze`` is a pure function of the SQL, the dialect, the catalog and the search path).

Cache (``.khive/historic-sql-cache.sqlite``, derived state: delete it any time). One document per
connection (table ``parsed_docs``) under a *context* key: the catalog fingerprint (tables and their
columns from the latest scan), the search path, the analyzer version and the sqlglot version. It holds,
per template id, the parse result and the hash of the SQL text it came from; table sets, column uses
and join edges are stored once and referenced by index, because a run repeats a few thousand of them
hundreds of thousands of times (loading 50,000 results is then one ``orjson.loads`` and tuple lookups,
where a row per template cost a JSON parse and a tuple per column use each). A template is served from
the cache when its id, SQL hash and the context all match, so a rerun on unchanged input parses
nothing, and a template whose text changed under the same id is parsed again. A scan that changes any
table or column changes the context: the next run parses everything once more (resolution depends on
the catalog) and replaces the document. A run that parsed anything rewrites the whole document (results
of templates absent from the run stay in it). Parse failures are cached too: they are deterministic.

Measured (bench/historic_sql.py, 50,000 TPC-derived templates, 2 cores): the first run, pool and all,
takes about 0.8x a bare single-process ``parse_one`` loop; an unchanged rerun serves all 50,000 from the
cache in about 0.3 s of loading and 0.2 s of hashing the texts to check them (ADR 0024).
"""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import math
import multiprocessing
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, TypeVar

import orjson

from khive.sqlite_util import immediate, open_wal
from packs.historic_sql.analyze import analyze
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.models import AggregatedTemplate
from packs.historic_sql.parsed import ColumnUse, JoinEdge, ParsedTemplate, paused_gc

ANALYZER_VERSION = "2"  # bump whenever analyze.py changes what it extracts
POOL_THRESHOLD = 500
CHUNKS_PER_WORKER = 8
MAX_CHUNK = 1000
T = TypeVar("T")
CACHE_FILE = "historic-sql-cache.sqlite"
SQLGLOT_VERSION = importlib.metadata.version("sqlglot")

Item = tuple[str, str, str]  # (template id, SQL, dialect)


@dataclass(frozen=True)
class BatchResult:
    parsed: dict[str, ParsedTemplate]
    warnings: tuple[str, ...]  # parse_failed:<templateId>, sorted
    stats: dict[str, int] = field(default_factory=dict)


class ParseCache:
    """Parse results by template id across runs; see the module docstring."""

    def __init__(self, path: Path, connection: str) -> None:
        self.path = path
        self.connection = connection
        self.db = open_wal(path)
        # earlier layouts: a row per template (before FORMAT 2); log aggregates (now .khive/historic-sql-logs/)
        self.db.execute("DROP TABLE IF EXISTS parsed")
        self.db.execute("DROP TABLE IF EXISTS aggregates")
        self.db.execute("CREATE TABLE IF NOT EXISTS parsed_docs (connection TEXT PRIMARY KEY, context TEXT NOT NULL, "
                        "payload BLOB NOT NULL)")

    @classmethod
    def for_project(cls, project: Path, connection: str) -> ParseCache:
        return cls(project / ".khive" / CACHE_FILE, connection)

    def load(self, context: str) -> dict[str, Entry]:
        """template id -> (SQL hash, parse result) under ``context``; empty when there is none (or it is damaged)."""
        row = self.db.execute("SELECT payload FROM parsed_docs WHERE connection = ? AND context = ?",
                              (self.connection, context)).fetchone()
        if row is None:
            return {}
        try:
            return _decode(row[0])
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):  # orjson's errors are ValueErrors
            return {}

    def store(self, context: str, entries: Mapping[str, Entry]) -> None:
        """Replace the connection's results with ``entries`` (all of them, not only the new ones)."""
        payload = _encode(entries)
        with immediate(self.db):
            self.db.execute("INSERT OR REPLACE INTO parsed_docs VALUES (?, ?, ?)", (self.connection, context, payload))

    def close(self) -> None:
        self.db.close()


Entry = tuple[str, ParsedTemplate]  # (SQL hash, parse result)
FORMAT = 2


def _encode(entries: Mapping[str, Entry]) -> bytes:
    """One document: distinct table sets, column uses and join edges once, templates as indexes into them
    (a run repeats a thousand column uses two hundred thousand times)."""
    sets: dict[tuple[str, ...], int] = {}
    uses: dict[ColumnUse, int] = {}
    joins: dict[JoinEdge, int] = {}
    rows = []
    with paused_gc():
        for tid, (digest, p) in sorted(entries.items()):
            # setdefault(value, len(...)): a new value gets the next index, the dicts keep insertion order
            rows.append([tid, digest, sets.setdefault(p.tables, len(sets)),
                         sets.setdefault(p.unknown_tables, len(sets)),
                         [uses.setdefault(use, len(uses)) for use in p.columns],
                         [joins.setdefault(edge, len(joins)) for edge in p.joins], p.error])
        return orjson.dumps({"format": FORMAT, "tableSets": list(sets), "uses": list(uses), "joins": list(joins),
                             "templates": rows})


def _decode(payload: bytes) -> dict[str, Entry]:
    doc = orjson.loads(payload)
    if doc.get("format") != FORMAT:
        return {}
    sets, uses, joins = ([tuple(value) for value in doc[kind]] for kind in ("tableSets", "uses", "joins"))
    return {tid: (digest, ParsedTemplate(tid, sets[tables], sets[unknown], tuple(map(uses.__getitem__, columns)),
                                         tuple(map(joins.__getitem__, edges)), error))
            for tid, digest, tables, unknown, columns, edges, error in doc["templates"]}


def cache_context(catalog: Catalog, search_path: Sequence[str]) -> str:
    key = orjson.dumps([catalog.fingerprint, list(search_path), ANALYZER_VERSION, SQLGLOT_VERSION])
    return hashlib.sha256(key).hexdigest()[:24]


def sql_hash(sql: str, dialect: str) -> str:
    return hashlib.blake2b(f"{dialect}\0{sql}".encode(), digest_size=16).hexdigest()


def parse_batch(templates: Sequence[AggregatedTemplate] | Sequence[Item], catalog: Catalog, *,
                search_path: Sequence[str] = (), concurrency: int | None = None,
                pool_threshold: int = POOL_THRESHOLD, cache: ParseCache | None = None,
                known: Mapping[str, ParsedTemplate] | None = None) -> BatchResult:
    """Parse every template; failures become ``parse_failed:<id>`` warnings, never exceptions.

    ``known`` holds results already made against this catalog and search path (``prime.Primer``,
    which resolved the normalizer's own trees): those templates are taken as parsed, not parsed again."""
    context = cache_context(catalog, search_path)
    parsed: dict[str, ParsedTemplate] = {}
    hashes: dict[str, str] = {}
    todo: list[Item] = []
    shared: dict[Any, Any] = {}
    with paused_gc():  # nothing cyclic is built here, and an unchanged rerun builds all of it
        items = {item[0]: item for item in (_item(t) for t in templates)}.values()
        cached = cache.load(context) if cache is not None else {}
        for item in items:
            digest = hashes[item[0]] = sql_hash(item[1], item[2])
            hit = cached.get(item[0])
            if hit is not None and hit[0] == digest:
                parsed[item[0]] = hit[1]
            else:
                todo.append(item)
    todo.sort()  # chunks (and so the pool's work) do not depend on the input order
    given: list[tuple[str, ParsedTemplate]] = []
    if known:
        given = [(item[0], known[item[0]]) for item in todo if item[0] in known]
        todo = [item for item in todo if item[0] not in known]
    workers = max(1, concurrency or os.cpu_count() or 1)
    use_pool = workers > 1 and len(todo) >= pool_threshold
    started = time.process_time()
    if use_pool:
        fresh, cpu = _run_pool(todo, catalog, search_path, workers)
    else:  # sqlglot trees are cyclic: the collector stays on while they are built
        fresh = _run_chunk(todo, catalog, search_path)
        cpu = time.process_time() - started
    with paused_gc():
        for template_id, payload in fresh:
            parsed[template_id] = ParsedTemplate.from_json(orjson.loads(payload), shared)
    parsed.update(given)
    made = [tid for tid, _ in given] + [tid for tid, _ in fresh]
    if cache is not None and made:  # results of templates not in this run stay: they may come back
        cache.store(context, {**cached, **{tid: (hashes[tid], parsed[tid]) for tid in made}})
    warnings = tuple(sorted(f"parse_failed:{tid}" for tid, result in parsed.items() if result.error is not None))
    stats = {"templates": len(items), "cached": len(items) - len(todo) - len(given), "parsed": len(todo),
             "resolvedWhileNormalizing": len(given),
             "failed": len(warnings), "workers": workers if use_pool else 1, "parseCpuMs": round(cpu * 1000)}
    return BatchResult(parsed, warnings, stats)


def _item(template: AggregatedTemplate | Item) -> Item:
    if isinstance(template, tuple):
        return template
    return (template.templateId, template.canonicalSql, template.dialect)


# -- workers -------------------------------------------------------------------------------------------
_WORKER: tuple[Catalog, tuple[str, ...]] | None = None
Row = tuple[str, bytes]  # (template id, ParsedTemplate.to_json() as JSON): what crosses the process boundary


def _init_worker(catalog: Catalog, search_path: tuple[str, ...]) -> None:
    global _WORKER
    _WORKER = (catalog, search_path)
    gc.freeze()  # the imported modules and the catalog live as long as the worker: never rescan them


def _parse_chunk(chunk: list[Item]) -> tuple[list[Row], float]:
    assert _WORKER is not None, "pool worker started without its initializer"
    started = time.process_time()
    rows = _run_chunk(chunk, *_WORKER)
    return rows, time.process_time() - started


def _run_chunk(chunk: Sequence[Item], catalog: Catalog, search_path: Sequence[str]) -> list[Row]:
    return [(tid, orjson.dumps(analyze(tid, sql, dialect, catalog, search_path).to_json()))
            for tid, sql, dialect in chunk]


def chunks_for(items: Sequence[T], workers: int) -> list[Sequence[T]]:
    """``items`` in chunks of at most MAX_CHUNK, a few per worker (one task per chunk, never per item)."""
    size = min(MAX_CHUNK, max(1, math.ceil(len(items) / (workers * CHUNKS_PER_WORKER))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def pool_context() -> BaseContext:
    """forkserver (workers start with the analyzer and normalizer already imported), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(["packs.historic_sql.analyze", "packs.historic_sql.normalize"])
    return context


def _run_pool(items: list[Item], catalog: Catalog, search_path: Sequence[str], workers: int
              ) -> tuple[list[Row], float]:
    chunks = chunks_for(items, workers)
    context = pool_context()
    out: list[Row] = []
    cpu = 0.0
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=context,
                             initializer=_init_worker, initargs=(catalog, tuple(search_path))) as pool:
        for rows, seconds in pool.map(_parse_chunk, chunks):
            out.extend(rows)
            cpu += seconds
    return out, cpu
