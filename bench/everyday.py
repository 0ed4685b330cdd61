"""Everyday questions on a real PostgreSQL project: ``discover.search`` as a new user meets it, beside BM25.

    .venv/bin/python bench/everyday.py            # prints ONE JSON line
    .venv/bin/python bench/everyday.py --misses   # and each question's first tables on stderr

Starts ``../shared/tools/realworld-pg`` (northwind, sakila and chinook, least-privilege roles, query history),
makes a project with the three databases as a user would (their history read through ``historicSql.url``) and
asks each question of ``bench/everyday-questions.yaml`` as an agent does: ``discover.search(query=q,
limit=10)``, every kind. A ref counts for its table (``connection.table``) at its first position. Asked twice:
after ``scan.run`` alone, and after ``sl.bootstrap`` and ``historic_sql.ingest`` too (SL sources, usage and
pattern pages then compete with the tables). Reported: hit@1/3/5 (a gold table among the first k) and
all-gold@3/@10 (every gold table among them).

Baseline, same run and questions: SQLite FTS5 BM25 (``porter unicode61``) over one row per table (connection,
table name and column names from ``information_schema``), OR-query of the question's words.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import psycopg
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from realworld import DATABASES, history_config, realworld_cluster  # type: ignore[import-not-found]  # noqa: E402

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.scaffold import init_project  # noqa: E402

QUESTIONS = ROOT / "bench" / "everyday-questions.yaml"
_WORD = re.compile(r"[A-Za-z0-9]+")


def table_order(refs: list[dict[str, Any]]) -> list[str]:
    order: list[str] = []
    for ref in refs:
        table = ref.get("tableRef")
        if table and ref.get("connectionId"):
            name = f"{ref['connectionId']}.{table['name']}".lower()
            if name not in order:
                order.append(name)
    return order


def score(ranked: list[list[str]], gold: list[list[str]]) -> dict[str, float]:
    def hit(k: int) -> float:
        return sum(bool(set(g) & set(r[:k])) for r, g in zip(ranked, gold, strict=True)) / len(gold)

    def all_gold(k: int) -> float:
        return sum(set(g) <= set(r[:k]) for r, g in zip(ranked, gold, strict=True)) / len(gold)

    return {"hit@1": round(hit(1), 3), "hit@3": round(hit(3), 3), "hit@5": round(hit(5), 3),
            "all_gold@3": round(all_gold(3), 3), "all_gold@10": round(all_gold(10), 3)}


class Baseline:
    """FTS5 BM25 over one row per table: its connection, name and column names."""

    def __init__(self, env: dict[str, str]):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        for name in DATABASES:
            with psycopg.connect(env[f"{name.upper()}_URL"]) as conn:
                rows = conn.execute(
                    "SELECT c.table_name, string_agg(c.column_name, ' ') FROM information_schema.columns AS c "
                    "WHERE c.table_schema = 'public' GROUP BY c.table_name").fetchall()
            self.db.executemany("INSERT INTO t VALUES (?, ?)", [
                (f"{name}.{table}", f"{name} {table} {columns}".replace("_", " ")) for table, columns in rows])

    def rank(self, question: str) -> list[str]:
        words = list(dict.fromkeys(word.lower() for word in _WORD.findall(question)))
        match = " OR ".join(f'"{word}"' for word in words)
        return [row[0] for row in self.db.execute(
            "SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (match,))]


async def _ask(ctx: Context, questions: list[str]) -> list[list[str]]:
    ranked = []
    for question in questions:
        envelope = await dispatch(parse(f"discover.search(query={json.dumps(question)}, limit=10)"), ctx)
        result = envelope["results"][0]
        assert result["ok"], result
        ranked.append(table_order(result["result"]["refs"]))
    return ranked


async def _run_op(ctx: Context, text: str) -> None:
    envelope = await dispatch(parse(text), ctx)
    assert envelope["results"][0]["ok"], envelope["results"][0]


def measure(env: dict[str, str], home: Path, questions: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """The rankings after the scans, then after bootstrap and ingest, on a new project at ``home``."""
    root = home / "proj"
    init_project(root, "bench")
    (root / "khive.yaml").write_text(history_config(), encoding="utf-8")

    async def run() -> tuple[list[list[str]], list[list[str]]]:
        runtime = open_runtime(root, {**env, "KHIVE_HOME": str(home / "khive-home")})
        ctx = Context(runtime, "operator:bench", CLI, presentation="verbose")
        try:
            for name in DATABASES:
                await _run_op(ctx, f'scan.run(connection="{name}")')
            scanned = await _ask(ctx, questions)
            for name in DATABASES:
                await _run_op(ctx, f'sl.bootstrap(connection="{name}")')
                await _run_op(ctx, f'historic_sql.ingest(connection="{name}")')
            return scanned, await _ask(ctx, questions)
        finally:
            await runtime.aclose()

    return anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--misses", action="store_true", help="each question's first tables on stderr")
    args = parser.parse_args()
    cases = YAML(typ="safe").load(QUESTIONS.read_text(encoding="utf-8"))
    questions, gold = [case["q"] for case in cases], [list(case["gold"]) for case in cases]
    with realworld_cluster("khive-everyday-") as (env, _), tempfile.TemporaryDirectory() as tmp:
        scanned, ingested = measure(env, Path(tmp), questions)
        baseline = Baseline(env)
        bm25 = [baseline.rank(question) for question in questions]
    if args.misses:
        for question, wanted, ranking in zip(questions, gold, ingested, strict=True):
            mark = "ok  " if set(wanted) <= set(ranking[:10]) else "MISS"
            print(mark, question, "|", " ".join(ranking[:5]), "| missing from the first 3:",
                  " ".join(g for g in wanted if g not in ranking[:3]), file=sys.stderr)
    print(json.dumps({"questions": len(questions), "after_scan": score(scanned, gold),
                      "after_bootstrap_and_ingest": score(ingested, gold), "bm25": score(bm25, gold)}))


if __name__ == "__main__":
    main()
