"""Retrieval quality of ``discover.search``: the pooled dev warehouse and defog, beside plain FTS5 BM25.

    .venv/bin/python bench/retrieval.py                  # prints ONE JSON line (both parts, every variant)
    .venv/bin/python bench/retrieval.py --tuning-only --misses   # while tuning: no held-out figures at all
    .venv/bin/python bench/retrieval.py --skip-defog     # only the pooled dev warehouse
    .venv/bin/python bench/retrieval.py --skip-defog --dump rankings.json   # every question's ranking, by part
    .venv/bin/python bench/retrieval.py --skip-defog --skip-pooled        # only the many small databases

**Pooled dev** (``bench/devwarehouse.py``): every sample schema of ../shared/data in one DuckDB file, one
schema per database (306 tables), keys declared, no rows; once without comments, once with them, and once
without comments with its identifiers abbreviated (``bench/abbreviated.py``; gold tables mapped). A khive
project scans it (``scan.run``) and each question is asked as the held-out benchmarks are asked:
``discover.search(query=question, kinds=["table","column"], limit=10)``; the tables of the ten refs, in
order (a column counts for its table at its first position), are the ranking. Questions: the ones in
``bench/retrieval-dev-questions.yaml`` (written for khive; gold tables from gold SQL that binds on the
warehouse, checked here with EXPLAIN) and defog's questions over its seven databases. 30% of the written
questions are held out by a hash of their id: ``--tuning-only`` leaves them out entirely, so tuning never
sees them; the default reports both parts.

**Small databases** (``bench/smalldbs.py``, ADR 0057): 45 small schemas invented for khive (247 tables whose
names overlap across schemas: ``customer``, ``member``, ``orders``, ``match``), pooled alone in one DuckDB file,
keys declared, no comments, no rows; 275 questions in their users' voice, none naming its database. Asked and
scored as the pooled dev warehouse is, with the same 30% held out by a hash of the id.

**Defog as before**: the 7 PostgreSQL dumps in a throwaway cluster, one schema per database, every column
description as a ``COMMENT ON COLUMN``; ``discover.search(..., connection="defog", limit=50)``, ranked
tables from the refs (``legacy``, the figure ADR 0017 was measured with) and the strict limit-10 form.

Baseline, same run and same questions: plain SQLite FTS5 BM25 (``porter unicode61``) over one row per table
(table name, column names, and the comments in the with-comments variant); OR-query of the question's words.
Reported: recall@5, recall@10, all-gold@3 (every gold table among the first 3 tables), all-gold@10.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import duckdb
import sqlglot
from psycopg.conninfo import make_conninfo
from ruamel.yaml import YAML
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
import devwarehouse  # noqa: E402  (bench/ is on the path)
import pgcluster  # type: ignore[import-not-found]  # noqa: E402  (a test helper, on the path once tests/ is)
import smalldbs  # noqa: E402  (bench/ is on the path)

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.scaffold import init_project  # noqa: E402

DATA = devwarehouse.SHARED / "retrieval-dev" / "defog"
QUESTIONS = ROOT / "bench" / "retrieval-dev-questions.yaml"
DATABASES = devwarehouse.DEFOG_DBS
HELD_OUT_SHARE = 3  # of 10
_BRACES = re.compile(r"\{([^{}]*)\}")
_WORD = re.compile(r"\w+")

Gold = list[frozenset[str]]  # alternatives: the question is answered when one of them is all there


def held_out(question_id: str) -> bool:
    return int(hashlib.sha256(question_id.encode()).hexdigest()[:8], 16) % 10 < HELD_OUT_SHARE


# ---- questions ---------------------------------------------------------------------------------------------

def defog_gold(sql: str, db: str) -> set[str]:
    first = sql.split(";")[0]
    first = _BRACES.sub(lambda m: m.group(1).strip() or "1", first)
    tree = sqlglot.parse_one(first, read="postgres")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {f"{db}.{t.name.lower()}" for t in tree.find_all(exp.Table) if t.name.lower() not in ctes}


def defog_questions(dbs: tuple[str, ...]) -> list[dict[str, Any]]:
    with (DATA / "questions_gen_postgres.csv").open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["db_name"] in dbs]
    return [{"id": f"defog-{i}", "question": row["question"], "db": row["db_name"],
             "gold": [frozenset(defog_gold(row["query"], row["db_name"]))]} for i, row in enumerate(rows)]


def written_questions(warehouse: Path) -> list[dict[str, Any]]:
    """The written questions with their gold tables; every gold SQL must bind on the warehouse."""
    data = YAML(typ="safe").load(QUESTIONS.read_text())["questions"]
    db = duckdb.connect(str(warehouse), read_only=True)
    out = []
    try:
        for item in data:
            db.execute("EXPLAIN " + item["sql"])  # raises when a table or column does not exist
            tree = sqlglot.parse_one(item["sql"], read="duckdb")
            tables = {(t.db.lower(), t.name.lower()) for t in tree.find_all(exp.Table)}
            schemas = [item["db"] if "db" in item else next(iter(tables))[0], *item.get("also", [])]
            names = {name for _, name in tables}
            gold = [frozenset(f"{schema}.{name}" for name in names) for schema in dict.fromkeys(schemas)]
            out.append({"id": item["id"], "question": item["q"], "gold": gold})
    finally:
        db.close()
    ids = [q["id"] for q in out]
    assert len(ids) == len(set(ids)), "question ids must be unique"
    return out


# ---- scoring -----------------------------------------------------------------------------------------------

def table_order(refs: list[dict[str, Any]]) -> list[str]:
    order: list[str] = []
    for ref in refs:
        table = ref.get("tableRef") or {}
        name = f"{table.get('db')}.{table.get('name')}".lower()
        if name not in order:
            order.append(name)
    return order


def score(ranked: list[list[str]], cases: list[dict[str, Any]]) -> dict[str, float]:
    if not cases:
        return {}

    def recall(k: int) -> float:
        return sum(max(len(g & set(r[:k])) / len(g) for g in c["gold"])
                   for r, c in zip(ranked, cases, strict=True)) / len(cases)

    def all_gold(k: int) -> float:
        return sum(any(g <= set(r[:k]) for g in c["gold"]) for r, c in zip(ranked, cases, strict=True)) / len(cases)

    return {"n": len(cases), "recall@5": round(recall(5), 3), "recall@10": round(recall(10), 3),
            "all_gold@3": round(all_gold(3), 3), "all_gold@10": round(all_gold(10), 3)}


class Baseline:
    """FTS5 BM25 over one row per table: its name and column names (and comments, when given)."""

    def __init__(self, tables: dict[str, list[str]]):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='porter unicode61')")
        self.db.executemany("INSERT INTO t VALUES (?, ?)",
                            [(name, " ".join(part.replace("_", " ") for part in parts))
                             for name, parts in tables.items()])

    def rank(self, question: str) -> list[str]:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(question)))
        match = " OR ".join(f'"{w}"' for w in words)
        return [r[0] for r in self.db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 50", (match,))]


def warehouse_tables(path: Path, comments: bool) -> dict[str, list[str]]:
    db = duckdb.connect(str(path), read_only=True)
    tables: dict[str, list[str]] = {}
    for schema, table, comment in db.execute("SELECT schema_name, table_name, comment FROM duckdb_tables()").fetchall():
        tables[f"{schema}.{table}".lower()] = [table, *([comment] if comments and comment else [])]
    for schema, table, column, comment in db.execute(
            "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal").fetchall():
        key = f"{schema}.{table}".lower()
        if key in tables:
            tables[key] += [column, *([comment] if comments and comment else [])]
    db.close()
    return tables


# ---- running khive -----------------------------------------------------------------------------------------

def ask_all(root: Path, env: dict[str, str], connection: str, questions: list[str], *, limit: int,
            scope: str | None) -> tuple[list[list[str]], float, float]:
    """Scan ``connection`` in the project at ``root`` and rank every question: (rankings, scan s, search p50 s)."""

    async def run() -> tuple[list[list[str]], float, float]:
        runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan,discover", **env})
        ctx = Context(runtime, "operator:bench", CLI, presentation="verbose")
        try:
            started = time.perf_counter()
            envelope = await dispatch(parse(f'scan.run(connection="{connection}")'), ctx)
            assert envelope["results"][0]["ok"], envelope
            scan_s = time.perf_counter() - started
            ranked, spent = [], []
            where = f', connection="{scope}"' if scope else ""
            for question in questions:
                text = (f'discover.search(query={json.dumps(question)}, kinds=["table", "column"]{where}, '
                        f'limit={limit})')
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

    return anyio.run(run)


def new_project(tmp: Path, connection_yaml: str) -> Path:
    root = tmp / "proj"
    init_project(root, "bench")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n" + connection_yaml))
    return root


def parts_of(cases: list[dict[str, Any]], tuning_only: bool) -> dict[str, Callable[[dict[str, Any]], bool]]:
    parts: dict[str, Callable[[dict[str, Any]], bool]] = {
        "written_tuning": lambda c: not c["id"].startswith("defog-") and not held_out(c["id"]),
        "defog": lambda c: c["id"].startswith("defog-")}
    if not tuning_only:
        parts["written_heldout"] = lambda c: not c["id"].startswith("defog-") and held_out(c["id"])
        parts["all"] = lambda c: True
    return parts


def part_of(case: dict[str, Any]) -> str:
    if case["id"].startswith("defog-"):
        return "defog"
    return "written_heldout" if held_out(case["id"]) else "written_tuning"


def pooled(tuning_only: bool, misses: bool, dump: Path | None = None,
           variants: list[str] | None = None) -> dict[str, Any]:
    builds = devwarehouse.warehouses()
    cases = written_questions(builds["plain"][0]) + defog_questions(DATABASES)
    if tuning_only:
        cases = [c for c in cases if c["id"].startswith("defog-") or not held_out(c["id"])]
    out: dict[str, Any] = {"tables": builds["plain"][1]["tables"], "questions_written": sum(
        not c["id"].startswith("defog-") for c in cases)}
    renamed = devwarehouse.abbrev_tables()
    for variant, (path, _counts) in builds.items():
        if variants and variant not in variants:
            continue
        if variant == "abbrev":  # the same questions; their gold tables under the abbreviated names
            cases = [{**c, "gold": [frozenset(renamed[t] for t in g) for g in c["gold"]]} for c in cases]
        with tempfile.TemporaryDirectory() as tmp:
            root = new_project(Path(tmp), f"  dev:\n    driver: duckdb\n    path: {path}\n")
            ranked, scan_s, p50 = ask_all(root, {}, "dev", [c["question"] for c in cases], limit=10, scope=None)
        baseline = Baseline(warehouse_tables(path, comments=variant == "comments"))
        plain = [baseline.rank(c["question"]) for c in cases]
        figures: dict[str, Any] = {"scan_s": round(scan_s, 2), "search_p50_ms": round(p50 * 1000, 2)}
        for part, keep in parts_of(cases, tuning_only).items():
            chosen = [i for i, c in enumerate(cases) if keep(c)]
            figures[part] = {"ours": score([ranked[i] for i in chosen], [cases[i] for i in chosen]),
                             "bm25": score([plain[i] for i in chosen], [cases[i] for i in chosen])}
        if misses:
            figures["misses"] = [{"id": c["id"], "q": c["question"], "gold": sorted(c["gold"][0]), "top": r[:6]}
                                 for r, c in zip(ranked, cases, strict=True)
                                 if not held_out(c["id"]) or c["id"].startswith("defog-")
                                 if not any(g <= set(r[:3]) for g in c["gold"])]
        out[variant] = figures
        if dump is not None:  # every ranking, for reading failures by category after the run
            rows = [{"id": c["id"], "part": part_of(c), "q": c["question"], "gold": [sorted(g) for g in c["gold"]],
                     "ours": r, "bm25": p[:10]} for r, p, c in zip(ranked, plain, cases, strict=True)]
            dumped = json.loads(dump.read_text()) if dump.exists() else {}
            dump.write_text(json.dumps({**dumped, variant: rows}, indent=1))
    return out


def small_dbs(tuning_only: bool, misses: bool, dump: Path | None = None) -> dict[str, Any]:
    """The many small databases pooled alone, as held-out set A pools them: ours beside BM25, by part."""
    counts = smalldbs.build()
    path = smalldbs.TARGET
    cases = [c for c in smalldbs.questions(path) if not (tuning_only and held_out(c["id"]))]
    with tempfile.TemporaryDirectory() as tmp:
        root = new_project(Path(tmp), f"  small:\n    driver: duckdb\n    path: {path}\n")
        ranked, scan_s, p50 = ask_all(root, {}, "small", [c["question"] for c in cases], limit=10, scope=None)
    baseline = Baseline(warehouse_tables(path, comments=False))
    plain = [baseline.rank(c["question"]) for c in cases]
    out: dict[str, Any] = {"schemas": counts["schemas"], "tables": counts["tables"], "scan_s": round(scan_s, 2),
                           "search_p50_ms": round(p50 * 1000, 2)}
    parts: dict[str, Callable[[dict[str, Any]], bool]] = {"tuning": lambda c: not held_out(c["id"])}
    if not tuning_only:
        parts |= {"heldout": lambda c: held_out(c["id"]), "all": lambda c: True}
    for part, keep in parts.items():
        chosen = [i for i, c in enumerate(cases) if keep(c)]
        out[part] = {"ours": score([ranked[i] for i in chosen], [cases[i] for i in chosen]),
                     "bm25": score([plain[i] for i in chosen], [cases[i] for i in chosen])}
    if misses:
        out["misses"] = [{"id": c["id"], "q": c["question"], "gold": sorted(c["gold"][0]), "top": r[:6]}
                         for r, c in zip(ranked, cases, strict=True)
                         if not held_out(c["id"]) and not c["gold"][0] <= set(r[:3])]
    if dump is not None:
        rows = [{"id": c["id"], "part": "heldout" if held_out(c["id"]) else "tuning", "q": c["question"],
                 "gold": [sorted(g) for g in c["gold"]], "ours": r, "bm25": p[:10]}
                for r, p, c in zip(ranked, plain, cases, strict=True)]
        dumped = json.loads(dump.read_text()) if dump.exists() else {}
        dump.write_text(json.dumps({**dumped, "smalldbs": rows}, indent=1))
    return out


# ---- defog as before (PostgreSQL, with descriptions) -----------------------------------------------------

def defog_metadata(db: str) -> dict[str, list[dict[str, str]]]:
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
            for table, columns in defog_metadata(db).items():
                for column in columns:
                    if column.get("column_description"):
                        conn.execute(f'COMMENT ON COLUMN "{db}"."{table}"."{column["column_name"]}" IS '
                                     + "'" + column["column_description"].replace("'", "''") + "'")


@contextmanager
def defog_warehouse(dbs: tuple[str, ...]) -> Iterator[str]:
    with ExitStack() as stack:
        cluster = stack.enter_context(pgcluster.running_cluster())
        admin = cluster.dsn()
        name = pgcluster.create_database(admin, prefix="khive_defog")
        stack.callback(pgcluster.drop_database, admin, name)
        dsn = make_conninfo(admin, dbname=name)
        load(dsn, dbs)
        yield dsn


def evaluate(dsn: str, dbs: tuple[str, ...], limit: int = 50) -> dict[str, Any]:
    """Scan the loaded defog warehouse in a fresh project and rank every question (``limit`` refs each)."""
    cases = defog_questions(dbs)
    tables = {f"{db}.{table}": [table, *(c["column_name"] for c in columns),
                                *(c.get("column_description") or "" for c in columns)]
              for db in dbs for table, columns in defog_metadata(db).items()}
    baseline = Baseline(tables)
    with tempfile.TemporaryDirectory() as tmp:
        root = new_project(Path(tmp), "  defog:\n    driver: postgres\n    url: env:DEFOG_URL\n")
        ranked, scan_s, p50 = ask_all(root, {"DEFOG_URL": dsn}, "defog", [c["question"] for c in cases],
                                      limit=limit, scope="defog")
    return {"questions": len(cases), "ours": score(ranked, cases),
            "baseline_fts_descriptions": score([baseline.rank(c["question"]) for c in cases], cases),
            "search_p50_ms": round(p50 * 1000, 2), "scan_s": round(scan_s, 2),
            "misses": [{"q": c["question"], "gold": sorted(c["gold"][0]), "top": r[:5]}
                       for r, c in zip(ranked, cases, strict=True) if not c["gold"][0] <= set(r[:3])]}


def defog(dbs: tuple[str, ...], misses: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"databases": len(dbs)}
    with defog_warehouse(dbs) as dsn:
        for form, limit in (("legacy", 50), ("strict", 10)):
            figures = evaluate(dsn, dbs, limit)
            out["questions"] = figures["questions"]
            out["bm25_descriptions"] = figures["baseline_fts_descriptions"]
            out[form] = {"ours": figures["ours"], "search_p50_ms": figures["search_p50_ms"]}
            if misses and form == "legacy":
                out["misses"] = figures["misses"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tuning-only", action="store_true", help="leave the held-out questions out entirely")
    parser.add_argument("--skip-defog", action="store_true", help="only the pooled dev warehouse")
    parser.add_argument("--skip-pooled", action="store_true", help="leave out the pooled dev warehouse")
    parser.add_argument("--skip-smalldbs", action="store_true", help="leave out the many small databases")
    parser.add_argument("--misses", action="store_true", help="also list tuning questions missed at 3")
    parser.add_argument("--dump", type=Path, help="write every question's ranking (every variant) to this JSON file")
    parser.add_argument("--variant", action="append", choices=sorted(devwarehouse.VARIANTS),
                        help="only this pooled variant (repeatable; default: all)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"bench": "retrieval"}
    if not args.skip_pooled:
        figures["pooled_dev"] = pooled(args.tuning_only, args.misses, args.dump, args.variant)
    if not args.skip_smalldbs:
        figures["smalldbs"] = small_dbs(args.tuning_only, args.misses, args.dump)
    if not args.skip_defog:
        figures["defog"] = defog(DATABASES, args.misses)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
