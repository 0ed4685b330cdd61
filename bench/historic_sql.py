"""Historic-SQL benchmark: ``historic_sql.ingest`` end to end against a bare single-process sqlglot parse.

    .venv/bin/python bench/historic_sql.py            # 50,000 templates, prints ONE JSON line
    .venv/bin/python bench/historic_sql.py --quick    # 5,000 templates, for a smoke test

Workload. The TPC-H (22) and TPC-DS (99) queries under ../shared/data/workloads, both forms
(``sqlglot_original``, ``duckdb_queries``), are read at run time and varied with a seeded RNG into
distinct templates: select columns dropped or added (columns of the query's own tables, wrapped in
MAX() when the query aggregates), WHERE conjuncts removed or added (``=``, ``<``, ``>``, IN, BETWEEN,
IS NOT NULL on the query's tables), literals re-drawn. A variant is kept only when its text with string
and number literals masked is new, so templates stay distinct after normalization
(``distinct_after_literal_mask`` recounts that), and is written as 1-6 executions to a JSONL query log
(sql, user, started_at, duration_ms, rows, error).
TPC-H tables are referenced as ``tpch.<table>``, TPC-DS tables unqualified and resolved through the
search path ``["tpcds"]`` (``customer`` exists in both schemas, so that path is exercised).

Project. A temporary khive project whose connection ``tpc`` (postgres dialect, never connected to) has
``historicSql: {enabled, queryLog: query-log.jsonl, searchPath: [tpcds]}``, and what a scan leaves: the
shards ``_schema/tpc/tpc.tpch.yaml`` and ``tpc.tpcds.yaml`` and one run's table artifacts, holding every
column the queries name (output aliases excluded), assigned to tables by TPC's column prefixes.

Timed, in the same process and run, interleaved (bare, first, bare, second) because the machine is shared:

* ``bare_parse_s``   ``sqlglot.parse_one(sql, read="postgres")`` over every distinct template text, one
                     process; the mean of the two passes (both are reported);
* ``first_run_s``    ``historic_sql.ingest(connection="tpc")`` through the dispatcher on an empty project
                     state: log read + normalization + filters, batch parse (pool, empty cache), bucketize,
                     stage, deterministic digests, projection into the shards and pattern pages;
                     ``ratio_vs_bare`` = first / bare (goal <= 1.0);
* ``second_run_s``   the same verb on the unchanged log; ``second_vs_first`` (goal <= 0.10), with
                     ``byte_identical`` (table and pattern files), ``work_units_second`` and
                     ``digests_second`` (goal 0 and none).

Wall times on a shared machine move with its other load: ``bare_parse_cpu_s``, ``first_parse_cpu_s``
(CPU the pool's workers spent) and the load averages at start and end tell a slow machine from a slow
pipeline. ``--demo`` instead measures ingest on the generated demo warehouse (khive.cli.demo), if present.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import sqlglot
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.scaffold import init_project  # noqa: E402

# ../shared beside the clone (CI), or two levels up from a worktree under wt/ (as bench/devwarehouse.py)
WORKLOADS = next((base / "shared" / "data" / "workloads" for base in (ROOT.parent, ROOT.parent.parent)
                  if (base / "shared" / "data").is_dir()), ROOT.parent / "shared" / "data" / "workloads")
SEED = 20260511
DIALECT = "postgres"
CONNECTION = "tpc"
SEARCH_PATH = ("tpcds",)
GOAL_RATIO = 1.0
GOAL_SECOND = 0.10
USERS = [f"analyst{i:02d}@example.com" for i in range(30)] + ["etl-loader", "looker-svc", "metabase"]
TPCH = {"l": "lineitem", "o": "orders", "c": "customer", "p": "part", "s": "supplier", "ps": "partsupp",
        "n": "nation", "r": "region"}
TPCDS = {"ss": "store_sales", "sr": "store_returns", "cs": "catalog_sales", "cr": "catalog_returns", "ws": "web_sales",
         "wr": "web_returns", "inv": "inventory", "s": "store", "cc": "call_center", "cp": "catalog_page",
         "web": "web_site", "wp": "web_page", "w": "warehouse", "c": "customer", "ca": "customer_address",
         "cd": "customer_demographics", "d": "date_dim", "hd": "household_demographics", "i": "item",
         "ib": "income_band", "p": "promotion", "r": "reason", "sm": "ship_mode", "t": "time_dim"}
SEL, WHERE = "__sel__", "__where__"
NUMBER = re.compile(r"(?<![\w.])\d+(\.\d+)?(?![\w.])")
DATE = re.compile(r"'(\d{4})-(\d{2})-(\d{2})'")
MASK = re.compile(r"'[^']*'|(?<![\w.])\d+(\.\d+)?(?![\w.])")


class Base:
    """One TPC query cut into a skeleton plus the pieces variants recombine."""

    def __init__(self, name: str, sql: str, schema: str, tables: dict[str, list[str]]) -> None:
        tree = sqlglot.parse_one(sql, read=DIALECT)
        if schema == "tpch":
            ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
            for table in tree.find_all(exp.Table):
                if table.name in tables and table.name not in ctes and not table.db:
                    table.set("db", exp.to_identifier("tpch"))
        select = max(tree.find_all(exp.Select), key=lambda node: len(_base_tables(node, tables)))
        self.name = name
        self.grouped = bool(select.args.get("group")) or any(isinstance(s.unnest(), exp.AggFunc) or
                                                              s.find(exp.AggFunc) for s in select.selects)
        self.selects = [s.sql(DIALECT) for s in select.selects]
        where = select.args.get("where")
        self.conjuncts = [c.sql(DIALECT) for c in where.this.flatten()] if where is not None else []
        self.joins = [i for i, c in enumerate(self.conjuncts) if re.fullmatch(r"[\w.]+ = [\w.]+", c)]
        self.columns = [f"{t.alias_or_name}.{c}" for t in _base_tables(select, tables) for c in tables[t.name]]
        select.set("expressions", [exp.column(SEL)])
        select.set("where", exp.Where(this=exp.column(WHERE)))
        self.skeleton = tree.sql(DIALECT)

    def variant(self, rng: random.Random) -> str:
        keep = [i for i in range(len(self.selects)) if len(self.selects) == 1 or rng.random() > 0.25] or [0]
        added = sorted(rng.sample(self.columns, k=min(len(self.columns), rng.choice((0, 0, 1, 2)))))
        kept = [i for i in range(len(self.conjuncts)) if i in self.joins or rng.random() > 0.2]
        preds = [(c, rng.choice(("=", "<", ">", "in", "between", "notnull")))
                 for c in sorted(rng.sample(self.columns, k=min(len(self.columns), rng.choice((0, 1, 1, 2)))))]
        items = [self.selects[i] for i in keep] + [f"MAX({c})" if self.grouped else c for c in added]
        conds = [_redraw(self.conjuncts[i], rng) for i in kept] + [_predicate(c, op, rng) for c, op in preds]
        sql = self.skeleton.replace(SEL, ", ".join(items), 1)
        sql = sql.replace(WHERE, " AND ".join(conds), 1) if conds else sql.replace(f" WHERE {WHERE}", "", 1)
        return sql


def _base_tables(select: exp.Select, tables: dict[str, list[str]]) -> list[exp.Table]:
    """The schema tables in ``select``'s own FROM and JOINs."""
    return [t for t in select.find_all(exp.Table) if t.parent_select is select and t.name in tables]


def _literal(column: str, rng: random.Random) -> str:
    if column.endswith(("name", "type", "status", "flag", "mode", "state", "city", "country", "category")):
        return f"'{rng.choice(('A', 'N', 'R', 'TN', 'GA', 'Books', 'Music', 'Home', 'EUROPE', 'BUILDING'))}'"
    return str(rng.randint(1, 2000))


def _predicate(column: str, op: str, rng: random.Random) -> str:
    if op == "notnull":
        return f"NOT {column} IS NULL"
    if op == "in":
        return f"{column} IN ({', '.join(_literal(column, rng) for _ in range(rng.randint(2, 4)))})"
    if op == "between":
        low = rng.randint(1, 1000)
        return f"{column} BETWEEN {low} AND {low + rng.randint(1, 500)}"
    return f"{column} {op} {_literal(column, rng)}"


def _redraw(sql: str, rng: random.Random) -> str:
    sql = DATE.sub(lambda m: f"'{rng.randint(1992, 2002)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'", sql)
    return NUMBER.sub(lambda m: str(max(1, int(float(m.group(0)) * rng.uniform(0.5, 1.5)))), sql)


def load_bases() -> tuple[list[Base], dict[str, dict[str, list[str]]]]:
    sources = sorted(WORKLOADS.glob("tpc*/*/*.sql"))
    if not sources:
        raise SystemExit(f"no TPC queries under {WORKLOADS}")
    schema: dict[str, dict[str, set[str]]] = {"tpch": defaultdict(set), "tpcds": defaultdict(set)}
    texts = {path: path.read_text(encoding="utf-8") for path in sources}
    for path, sql in texts.items():
        name, prefixes = ("tpch", TPCH) if path.parts[-3] == "tpch" else ("tpcds", TPCDS)
        tree = sqlglot.parse_one(sql, read=DIALECT)
        aliases = {a.alias for a in tree.find_all(exp.Alias)} | {
            c.name for t in tree.find_all(exp.TableAlias) for c in t.columns}
        for column in tree.find_all(exp.Column):
            table = prefixes.get(column.name.split("_")[0])
            if table and column.name not in aliases:
                schema[name][table].add(column.name)
    catalog = {s: {t: sorted(cols) for t, cols in tables.items()} for s, tables in schema.items()}
    bases = [Base(f"{p.parts[-3]}/{p.parts[-2]}/{p.stem}", sql, p.parts[-3], catalog[p.parts[-3]])
             for p, sql in texts.items()]
    return bases, catalog


def write_shards(project: Path, catalog: dict[str, dict[str, list[str]]]) -> None:
    folder = project / "_schema" / CONNECTION
    folder.mkdir(parents=True)
    for schema, tables in catalog.items():
        lines = [f"connection: {CONNECTION}", "catalog: tpc", f"schema: {schema}", "tables:"]
        for table, columns in sorted(tables.items()):
            lines += [f"  {table}:", "    kind: table", "    columns:"]
            lines += [f"    - name: {c}\n      type: other" for c in columns]
        (folder / f"tpc.{schema}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # a scan also leaves its run's machine-written table artifacts, which is what ingest resolves against
    run = project / "raw-sources" / CONNECTION / "live-database" / "20260401T000000000000Z" / "tables"
    run.mkdir(parents=True)
    for schema, tables in catalog.items():
        for table, columns in tables.items():
            artifact = {"catalog": "tpc", "db": schema, "name": table, "columns": [{"name": c} for c in columns]}
            (run / f"tpc.{schema}.{table}.json").write_bytes(orjson.dumps(artifact))


def write_log(path: Path, bases: list[Base], count: int, rng: random.Random) -> tuple[int, list[str]]:
    seen: set[str] = set()
    distinct: list[str] = []
    start = datetime(2026, 4, 1, tzinfo=UTC)
    lines = attempts = 0
    with open(path, "wb") as out:
        while len(seen) < count:
            attempts += 1
            if attempts > 50 * count:
                raise SystemExit(f"only {len(seen)} distinct variants after {attempts} attempts")
            sql = bases[attempts % len(bases)].variant(rng)
            key = MASK.sub("?", sql)
            if key in seen:
                continue
            seen.add(key)
            distinct.append(sql)
            for _ in range(min(6, 1 + int(rng.expovariate(1.2)))):
                at = start + timedelta(seconds=rng.randint(0, 30 * 86400))
                error = "canceling statement due to statement timeout" if rng.random() < 0.01 else None
                row = {"sql": sql, "user": rng.choice(USERS[: rng.randint(1, len(USERS))]),
                       "started_at": at.isoformat(), "duration_ms": round(rng.lognormvariate(5, 1.5), 1),
                       "rows": rng.randint(0, 5000), "error": error}
                out.write(orjson.dumps(row) + b"\n")
                lines += 1
    return lines, distinct


CONFIG = """connections:
  tpc:
    driver: postgres
    url: env:TPC_URL
    historicSql:
      enabled: true
      queryLog: query-log.jsonl
      searchPath: [tpcds]
      minExecutions: 1
      windowDays: 3650
"""


def make_project(root: Path, catalog: dict[str, dict[str, list[str]]]) -> None:
    init_project(root, "bench")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", CONFIG), encoding="utf-8")
    write_shards(root, catalog)


def bare_parse(sqls: list[str]) -> tuple[float, float]:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for sql in sqls:
        sqlglot.parse_one(sql, read=DIALECT)
    return time.perf_counter() - t0, time.process_time() - c0


async def op(project: Path, env: dict[str, str], text: str) -> dict[str, Any]:
    """One op through the dispatcher on a fresh runtime (its start included); exits when the op fails."""
    runtime = open_runtime(project, env)
    try:
        envelope = await dispatch(parse(text), Context(runtime, "operator:bench", CLI, presentation="verbose"))
    finally:
        await runtime.aclose()
    (result,) = envelope["results"]
    if not result["ok"]:
        raise SystemExit(f"{text} failed: {result['error']}")
    return dict(result["result"])


def ingest(project: Path, connection: str = CONNECTION) -> tuple[float, dict[str, Any]]:
    """One ``historic_sql.ingest`` through the dispatcher, runtime start included; (seconds, result)."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    result = anyio.run(op, project, {}, f'historic_sql.ingest(connection="{connection}")')
    seconds, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    normalize, parse_stats = result.get("normalizeStats") or {}, result["parseStats"]
    workers_cpu = (normalize.get("cpuMs", 0) if normalize.get("workers", 1) > 1 else 0) + (
        parse_stats["parseCpuMs"] if parse_stats["workers"] > 1 else 0)
    result["cpu_s"] = round(main_cpu + workers_cpu / 1000, 2)  # this process plus the pool workers
    return seconds, result


def staged_bytes(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*.json")) if p.name != "manifest.json"}


GOAL_DEMO_S = 5.0


def demo() -> None:
    """Ingest on the generated demo warehouse: the demo's own first ingest, then a fresh-cache and a warm rerun."""
    import io
    import shutil

    from rich.console import Console

    from khive.cli.demo.run import run_demo

    with tempfile.TemporaryDirectory(prefix="khive-bench-hsql-demo-") as tmp:
        root = Path(tmp) / "demo"
        report = anyio.run(lambda: run_demo(root, {}, console=Console(file=io.StringIO())))
        phase = next(p for p in report.phases if p.name == "query history")
        # derived state (caches, the stored log aggregate) and evidence out: a true first run
        for derived in (root / ".khive" / "historic-sql-cache.sqlite", root / ".khive" / "historic-sql-logs",
                        root / "raw-sources" / "shop" / "historic-sql-digests"):
            if derived.is_dir():
                shutil.rmtree(derived)
            else:
                derived.unlink(missing_ok=True)
        cold_s, cold = ingest(root, "shop")
        warm_s, warm = ingest(root, "shop")
    print(json.dumps({
        "bench": "historic_sql_demo", "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        "demo_phase_s": round(phase.seconds, 2), "demo_phase_note": phase.note,
        "cold_ingest_s": round(cold_s, 2), "cold_cpu_s": cold["cpu_s"], "goal_s": GOAL_DEMO_S,
        "templates": cold["counts"]["templates"], "tables": cold["counts"]["tables"],
        "work_units": cold["workUnits"], "cold_phases_ms": cold["timings"],
        "warm_ingest_s": round(warm_s, 2), "warm_work_units": warm["workUnits"], "warm_phases_ms": warm["timings"],
    }))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--templates", type=int)
    parser.add_argument("--demo", action="store_true", help="ingest on the generated demo warehouse instead")
    args = parser.parse_args()
    if args.demo:
        demo()
        return
    count = args.templates or (5_000 if args.quick else 50_000)
    load = round(os.getloadavg()[0], 2)
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="khive-bench-hsql-") as tmp:
        project = Path(tmp) / "proj"
        bases, catalog = load_bases()
        make_project(project, catalog)
        t0 = time.perf_counter()
        lines, sqls = write_log(project / "query-log.jsonl", bases, count, rng)
        generate_s = time.perf_counter() - t0
        masked = len({MASK.sub("?", sql) for sql in sqls})
        bare_1, bare_cpu = bare_parse(sqls)
        first_s, first = ingest(project)
        bare_2, _ = bare_parse(sqls)
        second_s, second = ingest(project)
        runs = project / "raw-sources" / CONNECTION / "historic-sql"
        identical = staged_bytes(runs / first["syncId"]) == staged_bytes(runs / second["syncId"])
    bare_s = (bare_1 + bare_2) / 2
    stats = first["parseStats"]
    print(json.dumps({
        "bench": "historic_sql", "quick": args.quick, "templates": first["counts"]["templates"],
        "distinct_texts": len(sqls), "log_lines": lines, "base_queries": len(bases),
        "distinct_after_literal_mask": masked, "path": "historic_sql.ingest through the dispatcher",
        "cores": os.cpu_count(), "load_avg_1m_at_start": load,
        "generate_s": round(generate_s, 2), "bare_parse_s": round(bare_s, 2),
        "bare_parse_passes_s": [round(bare_1, 2), round(bare_2, 2)], "bare_parse_cpu_s": round(bare_cpu, 2),
        "first_run_s": round(first_s, 2), "ratio_vs_bare": round(first_s / bare_s, 3), "goal_ratio": GOAL_RATIO,
        "first_phases_ms": first["timings"], "first_cpu_s": first["cpu_s"],
        "first_cpu_vs_bare_cpu": round(first["cpu_s"] / bare_cpu, 3), "first_normalize": first["normalizeStats"],
        "first_parse": stats,
        "second_run_s": round(second_s, 2), "second_vs_first": round(second_s / first_s, 3),
        "second_cpu_s": second["cpu_s"],
        "goal_second": GOAL_SECOND, "second_phases_ms": second["timings"],
        "second_cached": second["parseStats"]["cached"], "byte_identical": identical,
        "work_units_first": first["workUnits"], "digests_first": first["digests"],
        "work_units_second": second["workUnits"], "digests_second": second["digests"],
        "tables": first["counts"]["tables"], "table_sets": first["counts"]["tableSets"],
        "pattern_pages": len(first["projection"]["patterns"].get("written", [])),
        "parse_failures": stats["failed"], "median_sql_chars": int(statistics.median(len(s) for s in sqls)),
        "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
    }))


if __name__ == "__main__":
    main()
