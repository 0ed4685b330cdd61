"""A big project end to end: a 10,000-table warehouse scanned, bootstrapped, searched and ingested, in git.

    .venv/bin/python bench/bigproject.py                          # 10,000 tables, 50,000 templates: ONE JSON line
    .venv/bin/python bench/bigproject.py --tables 1000 --templates 5000   # a smaller run
    .venv/bin/python bench/bigproject.py --first-search-only      # phases 1-3 and the scan's FTS5 baseline

Warehouse. A throwaway PostgreSQL cluster (``tests/pgcluster.py``) holding the TPC-H and TPC-DS tables (schemas
``tpch`` and ``tpcds``, the columns the TPC queries name) plus ``bench/scan.py``'s generated tables (20 columns
each, 1-3 references, comments on every table and five columns) up to ``--tables`` in all: 10,000 tables and
about 200,000 columns. Sampling is off (as in ``bench/scan.py``: the comparison is with a schema dump).

Project. ``khive init`` layout in a git repository, one connection ``wh`` whose ``historicSql`` reads a query
log of ``--templates`` distinct templates over the TPC tables (``bench/historic_sql.py``'s generator).

Timed, one process, through the dispatcher, each phase in a fresh runtime as a CLI call would be:

1. ``pg_dump --schema-only`` of the database (before the scan and after the bootstrap; the mean is the baseline);
2. ``scan.run`` (with the scan report's own phase split);
3. the first ``discover.search`` on the freshly scanned project (the index is built from nothing here), with
   its split: the index refresh (the build) and discover's catalog lexicon, timed around those two calls;
4. ``sl.bootstrap`` (one source per table; it refreshes the index itself, before and after writing);
5. the first ``discover.search`` after the bootstrap (the index takes the new sources);
6. baselines from the same run: a bare FTS5 build of the same documents, the index's FTS rows copied
   field for field into a fresh SQLite FTS5 table (``porter unicode61``) in one transaction, for the documents
   of the scan alone and for all of them, and one bare ``MATCH ... ORDER BY bm25`` query;
7. ``historic_sql.ingest`` of the log (first run);
8. the repository: ``git add -A && git commit``, then the size of the committed files, of ``.git`` (after
   ``git gc``) and of the whole directory, runs and ``.khive/`` included; then a second scan, bootstrap and
   ingest, a second commit, and what each added.

``--until-first-search`` stops after step 6's scan baseline, and times the index build alone once more (the index
deleted, ``refresh()`` in a fresh runtime): ``index_build_vs_bare_fts5`` is issue #17's ratio; ``--builds N`` times
both N times, alternating, and pools them (``index_build_vs_bare_fts5_pooled``: sum over sum).

Ratios: ``scan_search_vs_baseline`` = (scan + first search) / (pg_dump + bare FTS5 of the scan's documents), the
issue's goal (<= 2); ``pipeline_vs_baseline`` = (scan + bootstrap + search after it) / (pg_dump + bare FTS5 of
every document). The cluster and the directory are removed at the end, also on failure.

``--first-search-only`` stops after phase 3 and the bare FTS5 build of the scan's documents (no bootstrap, no
ingest, no repository sizes, no query log): ``pg_dump`` runs before the scan and again after the search.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
import historic_sql as workload  # noqa: E402  (bench/historic_sql.py: the TPC template generator)
import pgcluster  # noqa: E402
import scan as generated  # noqa: E402  (bench/scan.py: the generated tables)

from khive.index.engine import RetrievalIndex  # noqa: E402
from khive.scaffold import init_project  # noqa: E402
from packs.discover import lexicon  # noqa: E402

SEED = 20261201
CONFIG = """connections:
  wh:
    driver: postgres
    url: env:WH_URL
    sample_values: {enabled: false}
    historicSql:
      enabled: true
      queryLog: query-log.jsonl
      searchPath: [tpcds]
      minExecutions: 1
      windowDays: 3650
"""
QUERY = "customer orders revenue by status"
SCAN_KINDS = ("table", "column")
FIELDS = ("name", "title", "summary", "tags", "body", "extra")


def tpc_ddl(catalog: dict[str, dict[str, list[str]]]) -> list[str]:
    statements = []
    for schema, tables in sorted(catalog.items()):
        statements.append(f"CREATE SCHEMA {schema}")
        for table, columns in sorted(tables.items()):
            typed = [f'"{c}" {"bigint" if c.endswith(("sk", "key")) else "date" if "date" in c else "numeric"}'
                     if any(w in c for w in ("sk", "key", "date", "price", "quantity", "cost", "amt", "tax",
                                             "discount", "profit", "sales"))
                     else f'"{c}" text' for c in columns]
            statements.append(f"CREATE TABLE {schema}.{table} ({', '.join(typed)})")
    return statements


def build_warehouse(dsn: str, n_tables: int, catalog: dict[str, dict[str, list[str]]]) -> dict[str, int]:
    import psycopg

    spec = generated.Spec(n_tables - sum(len(t) for t in catalog.values()), generated.SCHEMAS, same_schema_fks=False)
    with psycopg.connect(dsn) as conn:
        conn.execute(";\n".join(tpc_ddl(catalog)))
        conn.commit()
        statements = generated.ddl(spec, "postgres")
        for start in range(0, len(statements), 2000):  # a commit per batch: one transaction would run out of locks
            conn.execute(";\n".join(statements[start:start + 2000]))
            conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE")
        tables, columns = conn.execute(
            "SELECT count(DISTINCT (table_schema, table_name)), count(*) FROM information_schema.columns "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')").fetchone()
    return {"tables": int(tables), "columns": int(columns)}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    clock = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - clock, 3), value


def bare_fts(index: Path, target: Path, kinds: tuple[str, ...] | None) -> tuple[float, int]:
    """Seconds to build an FTS5 table of the index's documents (of ``kinds``) from their stored fields."""
    source = sqlite3.connect(index)
    where = f"WHERE d.kind IN ({', '.join('?' * len(kinds))})" if kinds else ""
    rows = source.execute(f"SELECT {', '.join(f'f.{field}' for field in FIELDS)} FROM docs AS d "
                          f"JOIN docs_fts AS f ON f.rowid = d.rowid {where}", kinds or ()).fetchall()
    source.close()
    target.unlink(missing_ok=True)
    db = sqlite3.connect(target)
    clock = time.perf_counter()
    db.execute(f"CREATE VIRTUAL TABLE fts USING fts5({', '.join(FIELDS)}, tokenize='porter unicode61')")
    with db:
        db.executemany(f"INSERT INTO fts VALUES ({', '.join('?' * len(FIELDS))})", rows)
    seconds = time.perf_counter() - clock
    db.close()
    return round(seconds, 3), len(rows)


def index_build(project: Path, env: dict[str, str]) -> float:
    """Seconds of the index's build from nothing alone (``refresh()`` on a deleted index), no search after it."""
    from khive.bootstrap import open_runtime

    index = project / ".khive" / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    runtime = open_runtime(project, env)
    try:
        seconds, _ = timed(runtime.index.refresh)
    finally:
        anyio.run(runtime.aclose)
    return seconds


def bare_query(target: Path) -> float:
    db = sqlite3.connect(target)
    clock = time.perf_counter()
    terms = " OR ".join(QUERY.split())
    db.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 15", (terms,)).fetchall()
    seconds = time.perf_counter() - clock
    db.close()
    return round(seconds, 4)


class Split:
    """Seconds spent in the index refresh and in building discover's lexicon while it is installed."""

    def __init__(self) -> None:
        self.seconds = {"index_refresh_s": 0.0, "lexicon_s": 0.0}

    def __enter__(self) -> Split:
        self._refresh, self._build = RetrievalIndex.refresh, lexicon.build

        def refresh(index: RetrievalIndex) -> Any:
            return self._timed("index_refresh_s", self._refresh, index)

        def build(index: RetrievalIndex) -> Any:
            return self._timed("lexicon_s", self._build, index)

        RetrievalIndex.refresh, lexicon.build = refresh, build  # type: ignore[method-assign, assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        RetrievalIndex.refresh, lexicon.build = self._refresh, self._build  # type: ignore[method-assign]
        self.seconds = {key: round(value, 3) for key, value in self.seconds.items()}

    def _timed(self, key: str, fn: Callable[[RetrievalIndex], Any], index: RetrievalIndex) -> Any:
        clock = time.perf_counter()
        try:
            return fn(index)
        finally:
            self.seconds[key] += time.perf_counter() - clock


def git(project: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def sizes(project: Path) -> dict[str, int]:
    """Bytes: committed files, .git after gc, the whole directory, and the committed bytes per top folder."""
    git(project, "add", "-A")
    git(project, "commit", "-q", "--allow-empty", "-m", "bench")
    git(project, "gc", "-q", check=False)  # packs the objects when it can; a failed gc leaves them loose
    tracked = [line for line in git(project, "ls-files", "-z").split("\0") if line]
    per: dict[str, int] = {}
    for path in tracked:
        top = path.split("/", 2)[0] if not path.startswith("raw-sources/") else "/".join(path.split("/")[:3])
        per[top] = per.get(top, 0) + (project / path).stat().st_size
    return {"committed_bytes": sum(per.values()), "git_dir_bytes": _du(project / ".git"),
            "directory_bytes": _du(project), "committed_by_folder": dict(sorted(per.items()))}  # type: ignore[dict-item]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--templates", type=int, default=50_000)
    parser.add_argument("--until-first-search", "--first-search-only", dest="until_first_search",
                        action="store_true", help="stop after the first search and its baselines, then time the "
                        "index build alone (the ratios of #17/#18)")
    parser.add_argument("--builds", type=int, default=1, help="with --until-first-search: time the build alone "
                        "and a bare FTS5 build this many times, alternating (#17's ratio pooled over them)")
    parser.add_argument("--keep", type=Path, help="with --until-first-search: copy the scanned project (no .git) "
                        "there before the directory is removed (for bench/buildsplit.py)")
    args = parser.parse_args()
    out: dict[str, Any] = {"bench": "bigproject", "tables_asked": args.tables, "templates": args.templates,
                           "load_start": os.getloadavg()}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="khive-bench-big-")))
        project = tmp / "project"
        init_project(project, "bench")
        config = project / "khive.yaml"
        config.write_text(config.read_text().replace("connections: {}\n", CONFIG), encoding="utf-8")
        git(project, "init", "-q")
        (project / ".git" / "info" / "exclude").write_text("query-log.jsonl\n")  # the bench's input, not the project
        bases, catalog = workload.load_bases()

        clock = time.perf_counter()
        cluster = stack.enter_context(pgcluster.running_cluster())
        admin = cluster.dsn()
        dbname = pgcluster.create_database(admin, prefix="khive_big")
        stack.callback(pgcluster.drop_database, admin, dbname)
        dsn = cluster.dsn(dbname)
        out["warehouse"] = build_warehouse(dsn, args.tables, catalog)
        if not args.until_first_search:
            lines, _ = workload.write_log(project / "query-log.jsonl", bases, args.templates, random.Random(SEED))
            out["log_lines"] = lines
        out["setup_s"] = round(time.perf_counter() - clock, 1)
        env = {"WH_URL": dsn}
        bindir = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                     check=True).stdout.strip())
        dump = [str(bindir / "pg_dump"), "--schema-only", "-h", str(cluster.socket_dir), "-p", str(cluster.port),
                "-U", "postgres", "-f", "/dev/null", dbname]

        def pg_dump() -> float:
            return timed(lambda: subprocess.run(dump, check=True, capture_output=True))[0]

        def run(text: str) -> tuple[float, dict[str, Any]]:
            return timed(lambda: anyio.run(workload.op, project, env, text))

        dumps = [pg_dump()]
        print(orjson.dumps({"partial": {**out, "pg_dump_s": dumps}}).decode(), file=sys.stderr, flush=True)
        phases: dict[str, Any] = {}
        phases["scan_s"], report = run('scan.run(connection="wh")')
        phases["scan_phases_ms"] = report["timings"]
        with Split() as split:
            phases["first_search_after_scan_s"], found = run(f'discover.search(query="{QUERY}", limit=10)')
        phases["first_search_split"] = split.seconds
        out["first_search_refs"] = [ref["id"] for ref in found["refs"][:3]]
        index = project / ".khive" / "index.sqlite"
        fts_scan_s, scan_docs = bare_fts(index, tmp / "bare-scan.sqlite", SCAN_KINDS)
        if args.until_first_search:
            dumps.append(pg_dump())
            baseline: dict[str, Any] = {"pg_dump_s": round(sum(dumps) / len(dumps), 3), "pg_dump_runs_s": dumps,
                                        "bare_fts5_scan_docs_s": fts_scan_s, "scan_docs": scan_docs}
            out["phases"], out["baseline"] = phases, baseline
            out["scan_search_vs_baseline"] = round(
                (phases["scan_s"] + phases["first_search_after_scan_s"]) / (baseline["pg_dump_s"] + fts_scan_s), 2)
            out["first_search_vs_bare_fts5"] = round(phases["first_search_after_scan_s"] / fts_scan_s, 2)
            phases["index_build_s"] = index_build(project, env)  # the first search's build again, alone
            out["index_build_vs_bare_fts5"] = round(phases["index_build_s"] / fts_scan_s, 2)
            if args.builds > 1:  # more pairs, alternating: the build alone, then a bare FTS5 build
                builds, bares = [phases["index_build_s"]], [fts_scan_s]
                for _ in range(args.builds - 1):
                    builds.append(index_build(project, env))
                    bares.append(bare_fts(index, tmp / "bare-scan.sqlite", SCAN_KINDS)[0])
                out["index_builds_s"], out["bare_fts5_builds_s"] = builds, bares
                out["index_build_vs_bare_fts5_pooled"] = round(sum(builds) / sum(bares), 2)
            out["load_end"] = os.getloadavg()
            if args.keep:
                shutil.copytree(project, args.keep, ignore=shutil.ignore_patterns(".git"))
            print(orjson.dumps(out).decode())
            return
        print(orjson.dumps({"partial": {**out, "phases": phases, "bare_fts5_scan_docs_s": fts_scan_s}}).decode(),
              file=sys.stderr, flush=True)
        phases["bootstrap_s"], boot = run('sl.bootstrap(connection="wh")')
        out["bootstrap"] = {key: len(boot[key]) for key in ("created", "updated", "unchanged", "skipped", "errors",
                                                            "renamed")}
        phases["search_after_bootstrap_s"], _ = run(f'discover.search(query="{QUERY}", limit=10)')
        dumps.append(pg_dump())
        fts_all_s, all_docs = bare_fts(index, tmp / "bare-all.sqlite", None)
        baseline = {"pg_dump_s": round(sum(dumps) / len(dumps), 3), "pg_dump_runs_s": dumps,
                    "bare_fts5_scan_docs_s": fts_scan_s, "scan_docs": scan_docs, "bare_fts5_all_docs_s": fts_all_s,
                    "all_docs": all_docs, "bare_fts5_query_s": bare_query(tmp / "bare-all.sqlite")}
        scan_search = phases["scan_s"] + phases["first_search_after_scan_s"]
        pipeline = phases["scan_s"] + phases["bootstrap_s"] + phases["search_after_bootstrap_s"]
        out["phases"], out["baseline"] = phases, baseline
        out["scan_search_vs_baseline"] = round(scan_search / (baseline["pg_dump_s"] + fts_scan_s), 2)
        out["pipeline_vs_baseline"] = round(pipeline / (baseline["pg_dump_s"] + fts_all_s), 2)

        print(orjson.dumps({"partial": out}).decode(), file=sys.stderr, flush=True)  # a long run's figures so far
        phases["ingest_s"], ingested = run('historic_sql.ingest(connection="wh")')
        out["ingest"] = {"templates": ingested["counts"]["templates"], "tables": ingested["counts"]["tables"],
                         "timings_ms": ingested["timings"]}
        print(orjson.dumps({"partial": out}).decode(), file=sys.stderr, flush=True)
        first = sizes(project)
        second: dict[str, Any] = {}
        for name, text in (("scan", 'scan.run(connection="wh")'), ("bootstrap", 'sl.bootstrap(connection="wh")'),
                           ("ingest", 'historic_sql.ingest(connection="wh")')):
            seconds, result = run(text)
            second[name] = {"s": seconds, "unchangedSince": result.get("unchangedSince"),
                            **({"unchanged": len(result["unchanged"]), "created": len(result["created"]),
                                "updated": len(result["updated"])} if name == "bootstrap" else {})}
        again = sizes(project)
        out["repository"] = {"after_first_runs": first, "after_second_runs": {k: v for k, v in again.items()
                                                                            if k != "committed_by_folder"},
                             "second_runs": second,
                             "growth_pct": {key: round(100 * (again[key] - first[key]) / first[key], 3)
                                            for key in ("committed_bytes", "git_dir_bytes", "directory_bytes")}}
    out["load_end"] = os.getloadavg()
    print(orjson.dumps(out).decode())


if __name__ == "__main__":
    main()
