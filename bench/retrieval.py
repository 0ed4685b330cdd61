"""Retrieval quality of ``discover.search`` on real questions: defog's 210 questions over 7 databases.

    .venv/bin/python bench/retrieval.py              # prints ONE JSON line
    .venv/bin/python bench/retrieval.py --dbs academic,yelp --limit 40   # a smaller run

The 7 PostgreSQL dumps of ``../shared/data/retrieval-dev/defog/defog_data`` are loaded into one throwaway
PostgreSQL cluster (``tests/pgcluster.py``), one schema per database, with every column description as a
``COMMENT ON COLUMN``. A khive project scans it (``scan.run``, samples on), and for each question
``discover.search(query=question, kinds=["table","column"], connection="defog", limit=50)`` ranks across
all 83 tables (a column ref counts for its table at its first position). Gold tables come from the gold
SQL (the first statement; ``{a, b}`` alternatives expanded) via sqlglot, minus CTE names.

Baseline, same run and same questions: plain SQLite FTS5 BM25 (``porter unicode61``) over one row per
table (table name, column names) and, second, with the column descriptions too; OR-query of the
question's words. Reported: recall@5, recall@10, all-gold@3 (every gold table in the top 3),
all-gold@10, for ours and both baselines, and the ratios of ours to the description baseline.
Nothing here is tuned on the questions; the ranking uses only general signals.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import sqlglot
from psycopg.conninfo import make_conninfo
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "retrieval-dev" / "defog"
sys.path.insert(0, str(ROOT / "tests"))
import pgcluster  # noqa: E402  (a test helper, importable once tests/ is on the path)

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.project.layout import init_project  # noqa: E402

DATABASES = ("academic", "advising", "atis", "geography", "restaurants", "scholar", "yelp")
_BRACES = re.compile(r"\{([^{}]*)\}")
_WORD = re.compile(r"\w+")


def gold_tables(sql: str, db: str) -> set[str]:
    first = sql.split(";")[0]
    first = _BRACES.sub(lambda m: m.group(1).strip() or "1", first)
    tree = sqlglot.parse_one(first, read="postgres")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {f"{db}.{t.name.lower()}" for t in tree.find_all(exp.Table) if t.name.lower() not in ctes}


def questions(dbs: tuple[str, ...]) -> list[dict[str, Any]]:
    with (DATA / "questions_gen_postgres.csv").open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["db_name"] in dbs]
    return [{"question": row["question"], "db": row["db_name"], "gold": gold_tables(row["query"], row["db_name"])}
            for row in rows]


def metadata(db: str) -> dict[str, list[dict[str, str]]]:
    data: dict[str, list[dict[str, str]]] = json.loads((DATA / "defog_data" / db / f"{db}.json").read_text())[
        "table_metadata"]
    return data


def load(dsn: str, dbs: tuple[str, ...]) -> None:
    """Each dump into ``public``, then renamed to the database's own schema; descriptions as comments."""
    import psycopg

    psql = str(pgcluster.find_bindir() / "psql")  # the dumps use COPY ... FROM stdin: psql reads them
    for db in dbs:
        subprocess.run([psql, dsn, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(DATA / "defog_data" / db / f"{db}.sql")],
                       check=True, capture_output=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'ALTER SCHEMA public RENAME TO "{db}"')
            conn.execute("CREATE SCHEMA public")
            for table, columns in metadata(db).items():
                for column in columns:
                    if column.get("column_description"):
                        conn.execute(f'COMMENT ON COLUMN "{db}"."{table}"."{column["column_name"]}" IS '
                                     + "'" + column["column_description"].replace("'", "''") + "'")


class Baseline:
    """FTS5 BM25 over one row per table: name and column names (and, optionally, descriptions)."""

    def __init__(self, dbs: tuple[str, ...], descriptions: bool):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        for db in dbs:
            for table, columns in metadata(db).items():
                parts = [table.replace("_", " "), *(c["column_name"].replace("_", " ") for c in columns)]
                if descriptions:
                    parts += [c.get("column_description") or "" for c in columns]
                self.db.execute("INSERT INTO t VALUES (?, ?)", (f"{db}.{table}", " ".join(parts)))

    def rank(self, question: str) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        match = " OR ".join(f'"{w}"' for w in words)
        return [r[0] for r in self.db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 50", (match,))]


def table_order(refs: list[dict[str, Any]]) -> list[str]:
    order: list[str] = []
    for ref in refs:
        table = ref.get("tableRef") or {}
        name = f"{table.get('db')}.{table.get('name')}"
        if name not in order:
            order.append(name)
    return order


def score(ranked: list[list[str]], cases: list[dict[str, Any]]) -> dict[str, float]:
    def recall(k: int) -> float:
        pairs = zip(ranked, cases, strict=True)
        return sum(len(c["gold"] & set(r[:k])) / len(c["gold"]) for r, c in pairs) / len(cases)

    def all_gold(k: int) -> float:
        return sum(c["gold"] <= set(r[:k]) for r, c in zip(ranked, cases, strict=True)) / len(cases)

    return {"recall@5": round(recall(5), 3), "recall@10": round(recall(10), 3),
            "all_gold@3": round(all_gold(3), 3), "all_gold@10": round(all_gold(10), 3)}


@contextmanager
def warehouse(dbs: tuple[str, ...]) -> Iterator[str]:
    with ExitStack() as stack:
        cluster = stack.enter_context(pgcluster.running_cluster())
        admin = cluster.dsn()
        name = pgcluster.create_database(admin, prefix="khive_defog")
        stack.callback(pgcluster.drop_database, admin, name)
        dsn = make_conninfo(admin, dbname=name)
        load(dsn, dbs)
        yield dsn


def evaluate(dsn: str, dbs: tuple[str, ...], limit: int | None = None) -> dict[str, Any]:
    """Scan the loaded warehouse in a fresh project, rank every question, return the figures."""
    cases = questions(dbs)[:limit] if limit else questions(dbs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        init_project(root, "bench")
        config = root / "khive.yaml"
        config.write_text(config.read_text().replace(
            "connections: {}", "connections:\n  defog:\n    driver: postgres\n    url: env:DEFOG_URL\n"))

        async def run() -> tuple[list[list[str]], float, float]:
            runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan,discover", "DEFOG_URL": dsn})
            ctx = Context(runtime, "operator:bench", CLI, presentation="verbose")
            try:
                started = time.perf_counter()
                envelope = await dispatch(parse('scan.run(connection="defog")'), ctx)
                assert envelope["results"][0]["ok"], envelope
                scan_s = time.perf_counter() - started
                ranked, spent = [], []
                for case in cases:
                    text = ('discover.search(query=' + json.dumps(case["question"])
                            + ', kinds=["table", "column"], connection="defog", limit=50)')
                    started = time.perf_counter()
                    envelope = await dispatch(parse(text), ctx)
                    spent.append(time.perf_counter() - started)
                    result = envelope["results"][0]
                    assert result["ok"], result
                    ranked.append(table_order(result["result"]["refs"]))
                spent.sort()
                return ranked, scan_s, spent[len(spent) // 2]
            finally:
                await runtime.aclose()

        ranked, scan_s, p50 = anyio.run(run)
    plain, described = Baseline(dbs, descriptions=False), Baseline(dbs, descriptions=True)
    ours = score(ranked, cases)
    base_plain = score([plain.rank(c["question"]) for c in cases], cases)
    base_desc = score([described.rank(c["question"]) for c in cases], cases)
    return {"questions": len(cases), "databases": len(dbs), "ours": ours, "baseline_fts": base_plain,
            "baseline_fts_descriptions": base_desc,
            "ratio_vs_descriptions": {k: round(ours[k] / base_desc[k], 3) if base_desc[k] else None for k in ours},
            "search_p50_ms": round(p50 * 1000, 2), "scan_s": round(scan_s, 2),
            "misses": [{"q": c["question"], "gold": sorted(c["gold"]), "top": r[:5]}
                       for r, c in zip(ranked, cases, strict=True) if not c["gold"] <= set(r[:3])]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dbs", default=",".join(DATABASES))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--misses", action="store_true", help="also list the questions missed at 3")
    args = parser.parse_args()
    dbs = tuple(args.dbs.split(","))
    with warehouse(dbs) as dsn:
        figures = evaluate(dsn, dbs, args.limit)
    if not args.misses:
        figures.pop("misses")
    print(json.dumps({"bench": "retrieval", **figures}))


if __name__ == "__main__":
    main()
