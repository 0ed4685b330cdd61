"""Retrieval-index benchmark: build, wiki.search latency against bare FTS5, freshness, incremental re-index.

    .venv/bin/python bench/index.py            # prints ONE JSON line
    .venv/bin/python bench/index.py --quick    # 200 pages / 2,000 files and fewer rounds, for a smoke test

Two generated projects (``init_project`` in temp dirs, runtime opened with KHIVE_PACKS=core,wiki and the
default config: vector lane on, inotify watcher on):

1. 1,000 realistic wiki pages written as files (keys ``area/topic-N``; frontmatter with summary, tags,
   refs; bodies of 100-400 words drawn Zipf-like from a fixed word list with a seeded RNG).
   ``build_s``: the first ``index.refresh()`` (full walk, parse, FTS + vectors).
2. ~200 queries of 2-3 vocabulary words, in milliseconds (p50 / p95 over all queries, after a warm-up):
   * ``wiki_search_*``   ``dispatch(wiki.search(query=...))`` as an agent calls it (freshness check,
                         verb, audit append, presentation; the request is parsed beforehand);
   * ``index_search_*``  ``runtime.index.search(query, kinds=["wiki"], limit=40)``: the index alone,
                         the same arguments wiki.search passes (both lanes, fusion);
   * ``bare_fts_*``      the baseline: an in-memory SQLite FTS5 table (key, summary, body;
                         tokenizer 'porter unicode61', as the index uses) holding the same pages, queried
                         with ``SELECT key FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10`` and the same
                         OR-query of the words (``khive.index.search.fts_query``).
   ``ratio_vs_bare_fts`` = wiki_search_p50 / bare_fts_p50 (goal: within 3x).
3. A second project of 20,000 small pages in 200 directories, indexed once, then
   ``refresh_idle_ms``: ``index.refresh()`` with nothing changed (median of 50; goal <= 5 ms), and
   ``refresh_cold_ms``: the first refresh of a new runtime on the same, already-indexed project
   (watcher start + stat-walk + compare, nothing to re-index; median of 3 runtimes).
4. ``reindex_one_page_ms``: one page of the 1,000-page project edited in place (a sentence appended,
   untimed), then ``index.refresh()`` (median over 20 different pages; goal <= 20 ms); the same on the
   20,000-file project (``reindex_one_page_20k_ms``); and ``wiki_write_ms``: ``dispatch(wiki.write(...))``
   end to end (validation, atomic write with fsync, refresh, link check, audit) over 20 pages.
   ``index_search_after_edit_ms`` / ``_20k_ms``: the first ``index.search`` after each such edit (a change
   drops the in-memory vector matrix, so this search reloads it), against ``index_search_p50_ms`` /
   ``index_search_20k_ms`` steady.

The machine is shared: run it on a quiet box (the 2-core dev VM's numpy BLAS threads make the vector lane
several times slower under load).
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.index.engine import RetrievalIndex
from khive.index.scanstat import stat_walk
from khive.index.search import fts_query
from khive.runtime import Runtime
from khive.scaffold import init_project

SEED = 20240611
ENV = {"KHIVE_PACKS": "core,wiki"}
PRINCIPAL = "operator:bench"
GOALS = {"ratio_vs_bare_fts": 3.0, "refresh_idle_ms": 5.0, "reindex_one_page_ms": 20.0}

AREAS = ("sales", "finance", "marketing", "product", "engineering", "support", "ops", "hr", "legal", "data",
         "growth", "billing", "warehouse", "logistics", "security", "platform", "analytics", "research",
         "partners", "retention")

WORDS = """
account active address adjustment aggregate alert allocation amount analysis anomaly archive attribution
audit average backfill balance baseline batch benchmark billing bonus booking bracket branch budget buffer
bundle cache calendar campaign cancel capacity cardinality carrier cascade catalog category channel checkout
churn claim cluster cohort column commission compliance conversion cost country coupon coverage credit
currency customer cutoff dashboard dataset deadline debit default delivery demand deposit dimension discount
dispatch dispute distribution document domain duplicate duration earnings edge eligible email engagement
entity error estimate event exchange expense expiry export extract factor failure feature fee filter fiscal
forecast format freight frequency funnel gateway geography grain granularity gross growth guideline
headcount history holiday horizon identifier import incident income index inventory invoice journal join
key latency lead ledger license lifetime limit lineage listing loyalty margin market measure merchant merge
metric migration milestone model monthly net notification object offset onboarding order outlier override
owner package partition partner payment payout pending percentile period pipeline plan platform policy
portfolio price pricing priority product profile promotion provider quarter query queue quota rate
reconciliation record refund region registry renewal report request reserve retention return revenue review
risk rollup route rule sample schedule schema score seasonal segment session settlement shipment signup
sku snapshot source spend stage status stock subscription supplier supply surcharge table target tax tenant
threshold ticket tier timestamp timezone total transaction transfer trend trial usage user valuation variance
vendor version view volume warehouse weekly window workflow yield zone
the of and to in is for on that with as by this from at be are or an it not was which when each per only
must should never always before after during between across within without every first last new old
""".split()


# ---------------------------------------------------------------------------------------------- generation
def zipf_weights(n: int) -> list[float]:
    return [1.0 / (rank + 1) ** 0.9 for rank in range(n)]


def sentence(rng: random.Random, weights: list[float], low: int = 6, high: int = 16) -> str:
    words = rng.choices(WORDS, weights=weights, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def body_text(rng: random.Random, weights: list[float], length: int) -> str:
    paragraphs, words, current = [], 0, []
    while words < length:
        line = sentence(rng, weights)
        current.append(line)
        words += line.count(" ") + 1
        if len(current) >= rng.randint(3, 6):
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def page_text(summary: str, tags: list[str], refs: list[str], body: str) -> str:
    front = [f"summary: {summary}", f"tags: [{', '.join(tags)}]"]
    if refs:
        front.append(f"refs: [{', '.join(refs)}]")
    return "---\n" + "\n".join(front) + "\n---\n\n" + body + "\n"


def realistic_project(root: Path, pages: int) -> list[str]:
    """``pages`` pages under wiki/global/<area>/topic-N.md; returns their keys."""
    init_project(root, "bench")
    rng = random.Random(SEED)
    weights = zipf_weights(len(WORDS))
    keys: list[str] = []
    for n in range(pages):
        key = f"{AREAS[n % len(AREAS)]}/topic-{n}"
        summary = sentence(rng, weights, 6, 14).rstrip(".").replace(":", "")
        tags = sorted(set(rng.sample(WORDS[:200], rng.randint(1, 4))))
        refs = sorted(set(rng.sample(keys, min(len(keys), rng.randint(0, 3))))) if keys else []
        body = body_text(rng, weights, rng.randint(100, 400))
        path = root / "wiki" / "global" / f"{key}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page_text(summary, tags, refs, body), encoding="utf-8")
        keys.append(key)
    return keys


def small_project(root: Path, files: int, dirs: int) -> list[Path]:
    init_project(root, "bench")
    rng = random.Random(SEED + 1)
    paths = []
    for d in range(dirs):
        directory = root / "wiki" / "global" / f"area-{d:03d}"
        directory.mkdir(parents=True)
        for f in range(files // dirs):
            words = rng.sample(WORDS, 8)
            path = directory / f"page-{f:03d}.md"
            path.write_text(f"---\nsummary: {' '.join(words[:4])}\n---\n\n{' '.join(words)}.\n", encoding="utf-8")
            paths.append(path)
    return paths


# ----------------------------------------------------------------------------------------------- measuring
def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_value(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def time_each(fn: Callable[[Any], Any], items: list[Any]) -> list[float]:
    samples = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        samples.append(time.perf_counter() - start)
    return samples


async def atime_each(fn: Callable[[Any], Awaitable[Any]], items: list[Any]) -> list[float]:
    samples = []
    for item in items:
        start = time.perf_counter()
        await fn(item)
        samples.append(time.perf_counter() - start)
    return samples


def bare_fts(root: Path, keys: list[str]) -> sqlite3.Connection:
    from packs.wiki.page import parse_page

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (key, summary, body, tokenize = 'porter unicode61')")
    rows = []
    for key in keys:
        relative = f"wiki/global/{key}.md"
        page = parse_page(relative, (root / relative).read_text(encoding="utf-8"))
        rows.append((key, page.meta.summary, page.body))
    db.executemany("INSERT INTO t (key, summary, body) VALUES (?, ?, ?)", rows)
    db.commit()
    return db


def append_sentence(path: Path, n: int) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\nEdited for the benchmark, round {n}.\n")


async def search_figures(runtime: Runtime, root: Path, keys: list[str], queries: list[str]) -> dict[str, Any]:
    ctx = Context(runtime, PRINCIPAL, CLI)
    index = runtime.index
    requests = [parse(f'wiki.search(query="{q}")') for q in queries]  # plain words: nothing to escape
    warm = queries[:20]
    for request in requests[:20]:
        envelope = await dispatch(request, ctx)
        if envelope["status"] != "success":
            raise SystemExit(f"wiki.search failed: {envelope}")
    db = bare_fts(root, keys)
    matches = [fts_query(q) for q in queries]
    sql = "SELECT key FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
    for match in matches[:20]:
        db.execute(sql, (match,)).fetchall()
    # Interleaved, query by query, so machine load hits both sides of the ratio alike.
    wiki, bare = [], []
    for _ in range(3):
        for request, match in zip(requests, matches, strict=True):
            wiki.append((await atime_each(lambda r: dispatch(r, ctx), [request]))[0])
            bare.append(time_each(lambda m: db.execute(sql, (m,)).fetchall(), [match])[0])
    hits = [len(index.search(q, kinds=["wiki"], limit=40)) for q in warm]
    direct = time_each(lambda q: index.search(q, kinds=["wiki"], limit=40), queries)
    lexical_only = time_each(lambda q: index.search(q, kinds=["wiki"], limit=40, vector=False), queries)
    refresh = [timed(index.refresh) for _ in queries]

    bare_hits = statistics.mean(len(db.execute(sql, (m,)).fetchall()) for m in matches)
    # The same contract as wiki.search returns (key, summary, score, snippet), straight from FTS5.
    sql_contract = ("SELECT key, summary, bm25(t), snippet(t, -1, '**', '**', '…', 16) FROM t WHERE t MATCH ? "
                    "ORDER BY bm25(t) LIMIT 10")
    bare_contract = time_each(lambda match: db.execute(sql_contract, (match,)).fetchall(), matches)
    matching = statistics.mean(db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (m,)).fetchone()[0]
                               for m in matches)
    db.close()

    wiki_p50, bare_p50 = statistics.median(wiki), statistics.median(bare)
    return {
        "queries": len(queries),
        "avg_pages_matching_query": round(matching, 1),
        "avg_index_hits": round(statistics.mean(hits), 1),
        "avg_bare_hits": round(bare_hits, 1),
        "wiki_search_p50_ms": ms(wiki_p50),
        "wiki_search_p95_ms": ms(percentile(wiki, 0.95)),
        "index_search_p50_ms": ms(statistics.median(direct)),
        "index_search_p95_ms": ms(percentile(direct, 0.95)),
        "index_search_lexical_only_p50_ms": ms(statistics.median(lexical_only)),
        "refresh_idle_1k_ms": ms(statistics.median(refresh)),
        "bare_fts_p50_ms": ms(bare_p50),
        "bare_fts_p95_ms": ms(percentile(bare, 0.95)),
        "bare_fts_tokenizer": "porter unicode61",
        "ratio_vs_bare_fts": round(wiki_p50 / bare_p50, 2),
        "bare_fts_with_snippet_p50_ms": ms(statistics.median(bare_contract)),
        "ratio_vs_bare_fts_with_snippet": round(wiki_p50 / statistics.median(bare_contract), 2),
    }


def edit_rounds(index: RetrievalIndex, paths: list[Path], query: str) -> tuple[list[float], list[float]]:
    """Per edited page: the refresh that re-indexes it, then the first search after it (both timed)."""
    reindex, search_after = [], []
    for n, path in enumerate(paths):
        append_sentence(path, n)
        seconds, result = timed_value(index.refresh)
        if result.reindexed != 1 or result.full:
            raise SystemExit(f"editing {path.name} did not re-index exactly that page: {result}")
        reindex.append(seconds)
        search_after.append(timed(lambda: index.search(query, kinds=["wiki"], limit=40)))
    return reindex, search_after


async def edit_figures(runtime: Runtime, root: Path, keys: list[str], rounds: int, query: str) -> dict[str, Any]:
    index = runtime.index
    rng = random.Random(SEED + 2)
    picked = rng.sample(keys, rounds * 2)
    reindex, search_after = edit_rounds(index, [root / "wiki" / "global" / f"{key}.md" for key in picked[:rounds]],
                                        query)
    ctx = Context(runtime, PRINCIPAL, CLI)
    weights = zipf_weights(len(WORDS))
    writes = []
    for key in picked[rounds:]:
        body = body_text(rng, weights, rng.randint(100, 400)).replace("\n", " ")
        request = parse(f'wiki.write(key="{key}", summary="benchmark rewrite of {key}", body="{body}", '
                        f'tags=["bench"])')
        start = time.perf_counter()
        envelope = await dispatch(request, ctx)
        writes.append(time.perf_counter() - start)
        if envelope["status"] != "success" or not envelope["results"][0]["result"]["changed"]:
            raise SystemExit(f"wiki.write failed: {envelope}")
    if index.refresh().changed:
        raise SystemExit("wiki.write left the index stale")
    return {"reindex_one_page_ms": ms(statistics.median(reindex)),
            "reindex_one_page_max_ms": ms(max(reindex)),
            "index_search_after_edit_ms": ms(statistics.median(search_after)),
            "wiki_write_ms": ms(statistics.median(writes)),
            "wiki_write_max_ms": ms(max(writes))}


def main() -> None:
    quick = "--quick" in sys.argv
    pages, files, dirs, n_queries, rounds = (200, 2_000, 20, 60, 10) if quick else (1_000, 20_000, 200, 200, 50)
    edits = 10 if quick else 20
    out: dict[str, Any] = {"bench": "index", "pages": pages}
    with tempfile.TemporaryDirectory(prefix="khive-bench-index-") as tmp:
        # 1. build -------------------------------------------------------------------------------------
        root = Path(tmp) / "wiki1k"
        keys = realistic_project(root, pages)
        runtime = open_runtime(root, ENV)
        index = runtime.index  # opening the database is not part of the build
        build, first = timed_value(index.refresh)
        if first.reindexed != pages or first.errors:
            raise SystemExit(f"build indexed {first.reindexed} of {pages} pages; errors: {first.errors}")
        out["build_s"] = round(build, 3)
        out["embedder"] = index.embedder.name if index.embedder else None

        # 2. search ------------------------------------------------------------------------------------
        rng = random.Random(SEED + 3)
        queries = [" ".join(rng.sample(WORDS[:-40], rng.randint(2, 3))) for _ in range(n_queries)]
        out.update(anyio.run(search_figures, runtime, root, keys, queries))

        # 4a. incremental re-index on the 1k project, and wiki.write end to end -------------------------
        out.update(anyio.run(edit_figures, runtime, root, keys, edits, queries[0]))
        anyio.run(runtime.aclose)

        # 3. freshness on 20,000 files -----------------------------------------------------------------
        big = Path(tmp) / "wiki20k"
        paths = small_project(big, files, dirs)
        runtime = open_runtime(big, ENV)
        index = runtime.index
        build20k, result = timed_value(index.refresh)
        if result.reindexed != files or result.errors:
            raise SystemExit(f"20k build indexed {result.reindexed} of {files}; errors: {len(result.errors)}")
        idle = [timed(index.refresh) for _ in range(rounds)]
        query = queries[0]
        index.search(query, kinds=["wiki"], limit=40)
        steady20k = [timed(lambda: index.search(query, kinds=["wiki"], limit=40)) for _ in range(edits)]
        reindex20k, search_after20k = edit_rounds(index, [paths[n * 997 % len(paths)] for n in range(edits)], query)
        cold = []
        for _ in range(3):
            other = open_runtime(big, ENV)
            other_index = other.index  # opening the database is not part of the refresh
            seconds, result = timed_value(other_index.refresh)
            if not result.full or result.changed:
                raise SystemExit(f"cold refresh of an indexed project changed something: {result}")
            cold.append(seconds)
            anyio.run(other.aclose)
        walk = [timed(lambda: stat_walk([big / "wiki"], (".md",))) for _ in range(5)]
        anyio.run(runtime.aclose)
        out.update({
            "files": len(paths),
            "dirs": dirs,
            "build_20k_s": round(build20k, 3),
            "refresh_idle_ms": ms(statistics.median(idle)),
            "refresh_idle_p95_ms": ms(percentile(idle, 0.95)),
            "refresh_cold_ms": ms(statistics.median(cold)),
            "stat_walk_20k_ms": ms(statistics.median(walk)),
            "reindex_one_page_20k_ms": ms(statistics.median(reindex20k)),
            "index_search_20k_ms": ms(statistics.median(steady20k)),
            "index_search_after_edit_20k_ms": ms(statistics.median(search_after20k)),
        })

    out["goals"] = GOALS
    out["met"] = {name: out[name] <= goal for name, goal in GOALS.items()}
    out["quick"] = quick
    print(orjson.dumps(out).decode())


if __name__ == "__main__":
    main()
