"""Speed of ``discover.search`` on a large generated project, against a bare FTS5 query and a naive design.

    .venv/bin/python bench/discover.py            # 10,000 tables / 200,000 columns / 2,000 SL sources / 1,000 pages
    .venv/bin/python bench/discover.py --scale 0.1

The project is written as files (``_schema`` shards, SL sources, wiki pages), then opened once with
KHIVE_PACKS=core,wiki,scan,sl,discover; the first search builds the index (reported as ``index_build_s``).
Then, per query and interleaved:

* ours: ``discover.search(query=..., limit=15)`` through the dispatcher (freshness check included);
* bare FTS5: ``SELECT rowid FROM docs_fts WHERE docs_fts MATCH <OR-query> ORDER BY bm25 LIMIT 15`` on the
  same index file (the same documents, no fusion, no structure, no refs);
* naive: what a design without an index does per call: re-read and parse every artifact (shards, SL
  YAML, pages) and score each table, column, source and page by query-word overlap (fewer samples: it is slow).

The index build (the first refresh: parse every artifact, documents, FTS5, edges, vectors) is set beside a
bare FTS5 build of the same documents' texts (one INSERT per document into an empty FTS5 table with the same
fields and tokenizer, in one transaction).

Goals: ours p50 within 5x of bare FTS5; ours >= 100x faster than naive; build within 3x of the bare build.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.index.search import fts_query  # noqa: E402
from khive.scaffold import init_project  # noqa: E402

NOUNS = ("customer order product invoice payment shipment refund account user session event campaign channel "
         "region store supplier warehouse inventory category subscription plan contract ticket agent review rating "
         "flight airline booking hotel room guest doctor patient visit claim policy loan branch employee salary "
         "department project task sprint release build deploy incident alert metric device sensor reading").split()
QUALIFIERS = ("daily monthly raw clean stg fact dim hist snapshot archive current legacy v2 eu us apac").split()
ATTRS = ("id name status type amount total price quantity created_at updated_at deleted_at email phone country city "
         "code score level tier currency discount tax margin revenue cost duration start_at end_at source medium "
         "owner priority version flag notes label rank count balance limit rate").split()


def _yaml() -> YAML:
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    return yaml


def generate(root: Path, scale: float, rng: random.Random) -> dict[str, int]:
    tables_n, pages_n, sources_n = int(10_000 * scale), int(1_000 * scale), int(2_000 * scale)
    yaml = _yaml()
    names = []
    for i in range(tables_n):
        names.append(f"{rng.choice(QUALIFIERS)}_{rng.choice(NOUNS)}_{rng.choice(NOUNS)}_{i}")
    per_shard = 100
    for shard in range(0, tables_n, per_shard):
        schema = f"s{shard // per_shard:03d}"
        tables: dict[str, Any] = {}
        for name in names[shard : shard + per_shard]:
            columns = [{"name": "id", "type": "integer", "primaryKey": True}]
            for attr in rng.sample(ATTRS, 19):
                columns.append({"name": f"{rng.choice(NOUNS)}_{attr}", "type": "string",
                                "comment": f"{attr.replace('_', ' ')} of the {rng.choice(NOUNS)}"})
            tables[name] = {"kind": "table", "comment": f"{name.replace('_', ' ')} records", "columns": columns}
        path = root / "_schema" / "wh" / f"{schema}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as handle:
            yaml.dump({"connection": "wh", "schema": schema, "tables": tables}, handle)
    for i in range(sources_n):
        table = names[i % tables_n]
        source = {"name": f"src_{i}", "table": f"s{(i % tables_n) // per_shard:03d}.{table}", "grain": ["id"],
                  "columns": [{"name": "id", "type": "number"}, {"name": "status", "type": "string"}],
                  "measures": [{"name": f"{rng.choice(NOUNS)}_count", "agg": "count",
                                "description": f"Number of {rng.choice(NOUNS)} rows"}]}
        path = root / "semantic-layer" / "wh" / f"src_{i}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as handle:
            yaml.dump(source, handle)
    for i in range(pages_n):
        words = " ".join(rng.choice(NOUNS + ATTRS) for _ in range(rng.randint(80, 300)))
        path = root / "wiki" / "global" / f"topic-{i % 20}" / f"page-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nsummary: notes on {rng.choice(NOUNS)} {rng.choice(NOUNS)}\n"
                        f"tags: [{rng.choice(NOUNS)}]\n---\n\n{words}\n")
    return {"tables": tables_n, "columns": tables_n * 20, "sl_sources": sources_n, "wiki_pages": pages_n}


def naive_search(root: Path, query: str, limit: int = 15) -> list[str]:
    """Re-read every artifact and rank by query-word overlap: the design the index replaces."""
    words = {w.lower() for w in query.replace("_", " ").split()}
    yaml = YAML(typ="safe")
    scored: list[tuple[int, str]] = []

    def overlap(text: str) -> int:
        return len(words & set(text.lower().replace("_", " ").split()))

    for shard in sorted((root / "_schema").rglob("*.yaml")):
        data = yaml.load(shard.read_text())
        for name, entry in (data.get("tables") or {}).items():
            scored.append((overlap(f"{name} {entry.get('comment', '')}"), f"{data['schema']}.{name}"))
            for column in entry.get("columns") or []:
                scored.append((overlap(f"{column['name']} {column.get('comment', '')}"),
                               f"{data['schema']}.{name}.{column['name']}"))
    for path in sorted((root / "semantic-layer").rglob("*.yaml")):
        data = yaml.load(path.read_text())
        scored.append((overlap(" ".join([data["name"], *(m["name"] for m in data.get("measures", []))])), data["name"]))
    for path in sorted((root / "wiki").rglob("*.md")):
        scored.append((overlap(path.read_text()), path.stem))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [name for _, name in scored[:limit]]


def bare_fts_build(index: Path, target: Path) -> float:
    """Seconds to build a bare FTS5 table (same fields, same tokenizer) from the same documents' texts."""
    source = sqlite3.connect(index)
    rows = source.execute("SELECT name, title, summary, tags, body, extra FROM docs_fts").fetchall()
    source.close()
    db = sqlite3.connect(target)
    started = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE f USING fts5(name, title, summary, tags, body, extra, "
               "tokenize = 'porter unicode61')")
    with db:
        db.executemany("INSERT INTO f VALUES (?, ?, ?, ?, ?, ?)", rows)
    spent = time.perf_counter() - started
    db.close()
    return spent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--naive", type=int, default=3, help="naive samples (each re-reads everything)")
    args = parser.parse_args()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        init_project(root, "bench")
        started = time.perf_counter()
        sizes = generate(root, args.scale, rng)
        generate_s = time.perf_counter() - started
        queries = [f"{rng.choice(NOUNS)} {rng.choice(ATTRS).replace('_', ' ')} {rng.choice(NOUNS)}"
                   for _ in range(args.queries)]

        async def run() -> dict[str, Any]:
            runtime = open_runtime(root, {"KHIVE_PACKS": "core,wiki,scan,sl,discover"})
            ctx = Context(runtime, "operator:bench", CLI)
            try:
                started = time.perf_counter()
                runtime.index.refresh()
                build_s = time.perf_counter() - started
                bare_build_s = bare_fts_build(root / ".khive" / "index.sqlite", Path(tmp) / "bare.sqlite")
                fts = sqlite3.connect(root / ".khive" / "index.sqlite")
                ours, bare = [], []
                for query in [queries[0], *queries]:  # the first call warms caches; it is not counted
                    text = f"discover.search(query={json.dumps(query)}, limit=15)"
                    started = time.perf_counter()
                    envelope = await dispatch(parse(text), ctx)
                    spent = time.perf_counter() - started
                    assert envelope["results"][0]["ok"], envelope
                    started = time.perf_counter()
                    fts.execute("SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? ORDER BY bm25(docs_fts) LIMIT 15",
                                (fts_query(query),)).fetchall()
                    bare_spent = time.perf_counter() - started
                    ours.append(spent)
                    bare.append(bare_spent)
                fts.close()
                return {"build_s": build_s, "bare_build_s": bare_build_s, "ours": ours[1:], "bare": bare[1:],
                        "docs": runtime.index.count()}
            finally:
                await runtime.aclose()

        timings = anyio.run(run)
        naive = []
        for query in queries[: args.naive]:
            started = time.perf_counter()
            naive_search(root, query)
            naive.append(time.perf_counter() - started)
    ours_p50, bare_p50, naive_p50 = (statistics.median(timings["ours"]), statistics.median(timings["bare"]),
                                     statistics.median(naive))
    print(json.dumps({"bench": "discover", **sizes, "documents": timings["docs"], "generate_s": round(generate_s, 1),
                      "index_build_s": round(timings["build_s"], 1),
                      "bare_fts_build_s": round(timings["bare_build_s"], 1),
                      "build_ratio_vs_bare_fts": round(timings["build_s"] / timings["bare_build_s"], 2),
                      "queries": len(timings["ours"]),
                      "search_p50_ms": round(ours_p50 * 1000, 2),
                      "search_p90_ms": round(percentile(timings["ours"], 0.9) * 1000, 2),
                      "bare_fts_p50_ms": round(bare_p50 * 1000, 2), "naive_p50_ms": round(naive_p50 * 1000, 1),
                      "ratio_vs_bare_fts": round(ours_p50 / bare_p50, 2),
                      "speedup_vs_naive": round(naive_p50 / ours_p50, 1)}))


if __name__ == "__main__":
    main()
