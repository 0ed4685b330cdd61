"""Relationship-inference benchmark: declared foreign keys of real sample databases as the gold standard.

    .venv/bin/python bench/relationships.py            # prints ONE JSON line
    .venv/bin/python bench/relationships.py --details  # plus every miss and false link on stderr
    .venv/bin/python bench/relationships.py --data DIR # sample databases elsewhere than ../shared/data/sampledbs

Loads Chinook (SQLite file with rows), Northwind and Sakila (Postgres with rows), AdventureWorks and Pagila
(Postgres, schema only) into a throwaway cluster (``tests/pgcluster.py``), reads each catalog and samples
through the khive drivers, keeps the declared foreign keys as gold, removes them from the snapshot (the
databases are untouched), runs ``infer_relationships`` and scores the accepted tier and accepted+review
against the gold: links match on child table + columns -> parent table + columns, schema-qualified,
case-insensitive. Goals: accepted precision >= 0.95 and recall >= 0.85 on databases with rows; recall
>= 0.7 on schema-only ones. Schema-only databases are also scored without column comments (``no_comments``),
because AdventureWorks documents most of its keys in comments and that would hide the name rules' share.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from khive.connections.catalog import CatalogSnapshot
from khive.connections.config import ConnectionConfig
from khive.connections.driver import Driver, open_driver
from packs.scan.relationships import InferredRelationship, infer_relationships

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import pgcluster  # noqa: E402  (a test helper, importable once tests/ is on the path)

DATA = ROOT.parent / "shared" / "data" / "sampledbs"
GOAL_PRECISION, GOAL_RECALL, GOAL_SCHEMA_ONLY_RECALL = 0.95, 0.85, 0.7

Link = tuple[str, tuple[str, ...], str, tuple[str, ...]]


@dataclass(frozen=True)
class Source:
    name: str
    rows: bool
    sql: tuple[str, ...] = ()  # files loaded in order into a fresh Postgres database
    sqlite: str | None = None
    strip_copy: bool = False
    compat: tuple[tuple[str, str], ...] = ()  # text replacements so a newer server's dump loads on this one


SOURCES = (
    Source("chinook", rows=True, sqlite="chinook/Chinook_Sqlite.sqlite"),
    Source("northwind", rows=True, sql=("northwind/northwind.sql",)),
    Source("sakila", rows=True, sql=("sakila/postgres-sakila-schema.sql",
                                     "sakila/postgres-sakila-insert-data-using-copy.sql")),
    Source("adventureworks", rows=False, sql=("adventureworks-pg/install.sql",), strip_copy=True),
    # Pagila targets PostgreSQL 18: uuidv7() and virtual generated columns; without these two stand-ins its
    # customer, film, payment and rental tables (and most of its keys) would not load on an older server.
    Source("pagila", rows=False, sql=("pagila/pagila-schema.sql",),
           compat=(("DEFAULT uuidv7()", "DEFAULT gen_random_uuid()"), (") VIRTUAL", ") STORED"))),
)


def load_sql(psql: Path, dsn: str, source: Source, data: Path) -> None:
    """Feed SQL files to psql; statements that need what this server lacks (extensions) fail alone."""
    for path in (data / name for name in source.sql):
        text = path.read_text(encoding="utf-8", errors="replace")
        for old, new in source.compat:
            text = text.replace(old, new)
        if source.strip_copy:  # the CSV files these lines read are not shipped
            text = "\n".join(line for line in text.splitlines()
                             if not line.lstrip().lower().startswith(("\\copy", "copy ")))
        done = subprocess.run([str(psql), "-X", "-q", "-d", dsn, "-v", "ON_ERROR_STOP=0"], input=text,
                              capture_output=True, text=True, check=False)
        if done.returncode not in (0, 3):
            raise SystemExit(f"psql failed on {path.name}: {done.stderr[-1000:]}")
    subprocess.run([str(psql), "-X", "-q", "-d", dsn, "-c", "ANALYZE"], capture_output=True, check=False)


def read(driver: Driver) -> CatalogSnapshot:
    try:
        snapshot = driver.read_catalog()
        samples = driver.sample(list(snapshot.tables))
        return snapshot.model_copy(update={"samples": tuple(samples)})
    finally:
        driver.close()


def gold_links(snapshot: CatalogSnapshot) -> set[Link]:
    return {(f"{t.db}.{t.name}".lower(), tuple(c.lower() for c in fk.columns),
             f"{fk.ref_db}.{fk.ref_table}".lower(), tuple(c.lower() for c in fk.ref_columns))
            for t in snapshot.tables for fk in t.foreign_keys}


def without_keys(snapshot: CatalogSnapshot, *, comments: bool = True) -> CatalogSnapshot:
    tables = []
    for table in snapshot.tables:
        update: dict[str, Any] = {"foreign_keys": ()}
        if not comments:
            update["columns"] = tuple(c.model_copy(update={"comment": None}) for c in table.columns)
        tables.append(table.model_copy(update=update))
    return snapshot.model_copy(update={"tables": tuple(tables)})


def inferred_links(found: Iterable[InferredRelationship]) -> set[Link]:
    return {(f"{r.from_db}.{r.from_table}".lower(), tuple(c.lower() for c in r.from_columns),
             f"{r.to_db}.{r.to_table}".lower(), tuple(c.lower() for c in r.to_columns)) for r in found}


def score(gold: set[Any], found: set[Any]) -> dict[str, Any]:
    tp = len(gold & found)
    precision = tp / len(found) if found else 1.0
    recall = tp / len(gold) if gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": len(found - gold), "fn": len(gold - found), "precision": round(precision, 3),
            "recall": round(recall, 3), "f1": round(f1, 3)}


def show(link: Link) -> str:
    return f"{link[0]}({','.join(link[1])}) -> {link[2]}({','.join(link[3])})"


@contextmanager
def postgres() -> Iterator[tuple[pgcluster.Cluster, Path]]:
    bindir = pgcluster.find_bindir()
    with pgcluster.running_cluster() as cluster:
        yield cluster, bindir / "psql"


def snapshots(data: Path, stack: ExitStack) -> Iterator[tuple[Source, CatalogSnapshot]]:
    cluster: pgcluster.Cluster | None = None
    psql: Path | None = None
    for source in SOURCES:
        if source.sqlite:
            config = ConnectionConfig(driver="sqlite", path=str((data / source.sqlite).resolve()))
            yield source, read(open_driver(source.name, config, secrets={}))
            continue
        if cluster is None or psql is None:
            cluster, psql = stack.enter_context(postgres())
        dbname = pgcluster.create_database(cluster.dsn(), prefix=f"bench_{source.name}")
        dsn = cluster.dsn(dbname)
        load_sql(psql, dsn, source, data)
        config = ConnectionConfig(driver="postgres", url="env:KHIVE_BENCH_URL")
        yield source, read(open_driver(source.name, config, secrets={"url": dsn}))


def main() -> None:
    args = sys.argv[1:]
    details = "--details" in args
    data = Path(args[args.index("--data") + 1]) if "--data" in args else DATA
    started = time.perf_counter()
    result: dict[str, Any] = {"bench": "relationships", "databases": {}}
    totals: dict[str, dict[str, set[tuple[str, Link]]]] = {}
    with ExitStack() as stack:
        for source, snapshot in snapshots(data, stack):
            gold = gold_links(snapshot)
            clock = time.perf_counter()
            found = infer_relationships(without_keys(snapshot))
            infer_ms = round((time.perf_counter() - clock) * 1000, 1)
            accepted = inferred_links(r for r in found if r.tier == "accepted")
            both = inferred_links(found)
            entry: dict[str, Any] = {
                "rows": source.rows, "tables": len(snapshot.tables), "gold": len(gold),
                "sampled_columns": sum(1 for s in snapshot.samples if s.values), "infer_ms": infer_ms,
                "accepted": score(gold, accepted), "accepted_review": score(gold, both)}
            if not source.rows:
                plain = infer_relationships(without_keys(snapshot, comments=False))
                entry["no_comments"] = {
                    "accepted": score(gold, inferred_links(r for r in plain if r.tier == "accepted")),
                    "accepted_review": score(gold, inferred_links(plain))}
            result["databases"][source.name] = entry
            group = "rows" if source.rows else "schema_only"
            for tier, links in (("accepted", accepted), ("accepted_review", both)):
                bucket = totals.setdefault(f"{group}:{tier}", {"gold": set(), "found": set()})
                bucket["gold"].update((source.name, link) for link in gold)
                bucket["found"].update((source.name, link) for link in links)
            if details:
                for link in sorted(gold - accepted):
                    print(f"{source.name} MISS  {show(link)}{'  (review)' if link in both else ''}", file=sys.stderr)
                for link in sorted(accepted - gold):
                    print(f"{source.name} FALSE {show(link)}", file=sys.stderr)
                for link in sorted(both - accepted - gold):
                    print(f"{source.name} false review {show(link)}", file=sys.stderr)
    overall: dict[str, Any] = {}
    for key, bucket in sorted(totals.items()):
        group, tier = key.split(":")
        overall.setdefault(group, {})[tier] = score(bucket["gold"], bucket["found"])
    result["overall"] = overall
    entries = list(result["databases"].values())
    with_rows, schema_only = [e for e in entries if e["rows"]], [e for e in entries if not e["rows"]]
    result["goals"] = {  # every database on its own, accepted tier
        "rows_accepted_precision": all(e["accepted"]["precision"] >= GOAL_PRECISION for e in with_rows),
        "rows_accepted_recall": all(e["accepted"]["recall"] >= GOAL_RECALL for e in with_rows),
        "schema_only_accepted_recall": all(e["accepted"]["recall"] >= GOAL_SCHEMA_ONLY_RECALL for e in schema_only),
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, separators=(",", ":")))


if __name__ == "__main__":
    main()
