"""Scan benchmark: ``scan.run`` end to end on 1,000-table catalogs (PostgreSQL, DuckDB, SQLite).

    .venv/bin/python bench/scan.py            # prints ONE JSON line
    .venv/bin/python bench/scan.py --quick    # 120 tables, for a smoke test

Generated schema: N tables x 20 columns (ids, text, numeric, timestamps, booleans, uuid, a JSON/array/blob
column), each table referencing 1-2 earlier tables through declared foreign keys plus one undeclared
``<parent>_id`` column (work for relationship inference); spread over 4 schemas (SQLite: one), a few
views; comments on every table and five columns per table (not SQLite: no comments). 50 rows in the first
10% of the tables (their parents are among them, so every foreign key holds), so sampling does real work.

Every ``scan.run`` goes through the real dispatcher, ``dispatch(parse('scan.run(connection="..")'),
Context(runtime, "operator:bench", "cli"))``, against one project opened with ``open_runtime`` and
KHIVE_PACKS=core,scan. The first run of a connection is a first scan, the later ones re-scans (previous run
diffed, shards merged), as in daily use; ``runs_s`` lists all of them.

1. PostgreSQL (throwaway cluster, ``tests/pgcluster.py``), sampling disabled: ``pg_dump --schema-only`` of the
   same database through the socket to /dev/null, then ``scan.run``, interleaved, ``ROUNDS`` times (the machine
   is shared and noisy: each scan is compared with the dump run just before it). The first round is a first
   scan (every shard rendered), the others are re-scans of the unchanged schema (previous run read and diffed,
   shards left alone). ``ratio_vs_pg_dump``: median of the per-round ratios (goal <= 2); ``first_scan_ratio``
   and ``rescan_ratio`` split it; ``ratios`` lists them all. ``timings_ms``: per-phase medians from the scan
   reports (catalog_ms, samples_ms, inference_ms, write_ms, total_ms). ``cold_process_rescan_s``: two more
   re-scans, each in a fresh Python process (cold caches, as a CLI call), timed inside it, each after its own
   pg_dump (``cold_process_rescan_ratios``). Then a second connection on the same
   database with sampling enabled: ``sampled_scan_s`` and its ``samples_ms`` (the sample collection cost).
2. DuckDB and SQLite files of the same shape: ``scan_s`` median of the rounds with sampling disabled (goal
   <= 3 s each; ``first_scan_s`` the first of them) and the sampling-enabled scan.

The cluster and the temp directories are removed at the end, also on failure.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import pgcluster  # noqa: E402  (a test helper, importable once tests/ is on the path)

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from khive.runtime import Runtime  # noqa: E402
from khive.scaffold import init_project  # noqa: E402

SEED = 20240611
PRINCIPAL = "operator:bench"
ENV_PACKS = "core,scan"
SCHEMAS = ("sales", "finance", "ops", "crm")
ENTITIES = ("customer", "order", "invoice", "product", "supplier", "shipment", "account", "payment", "region",
            "warehouse", "campaign", "ticket", "contract", "employee", "vendor", "asset", "budget", "ledger",
            "store", "device")
STATUSES = ("new", "open", "closed", "hold", "cancelled")
ROWS = 50
VIEWS = 8
ROUNDS = 5  # per engine: one first scan, then re-scans
PHASES = ("catalog_ms", "samples_ms", "inference_ms", "write_ms", "total_ms")
GOALS = {"postgres_ratio_vs_pg_dump": 2.0, "duckdb_scan_s": 3.0, "sqlite_scan_s": 3.0}


# ---- the generated schema ---------------------------------------------------------------------------------


class Spec:
    """Tables, their parents and their columns, shared by the three engines (names differ only in schema)."""

    def __init__(self, n_tables: int, schemas: tuple[str, ...], *, same_schema_fks: bool) -> None:
        rng = random.Random(SEED)
        self.schemas = schemas
        self.names = [f"{ENTITIES[i % len(ENTITIES)]}_{i:04d}" for i in range(n_tables)]
        self.schema_of = [schemas[i % len(schemas)] for i in range(n_tables)]
        self.with_rows = max(4, n_tables // 10)  # the first tables: their parents are earlier, so among them
        self.parents: list[list[int]] = []  # declared parents first, then one undeclared reference
        self.n_declared: list[int] = []
        for i in range(n_tables):
            pool = [j for j in range(i) if not same_schema_fks or self.schema_of[j] == self.schema_of[i]]
            declared = rng.sample(pool, min(1 + i % 2, len(pool)))
            rest = [j for j in range(i) if j not in declared]
            self.parents.append(declared + ([rng.choice(rest)] if rest else []))
            self.n_declared.append(len(declared))

    def ref_columns(self, i: int) -> list[tuple[str, int, bool]]:
        """(column, parent index, declared) for the three reference slots; unused slots get plain columns."""
        return [(f"{self.names[p]}_id", p, k < self.n_declared[i]) for k, p in enumerate(self.parents[i])]


# Columns after id and the reference slots: (name, postgres, duckdb, sqlite). 16 plus id plus 3 slots = 20.
BODY = (
    ("name", "text NOT NULL", "VARCHAR NOT NULL", "TEXT NOT NULL"),
    ("code", "varchar(32)", "VARCHAR(32)", "VARCHAR(32)"),
    ("status", "text DEFAULT 'new'", "VARCHAR DEFAULT 'new'", "TEXT DEFAULT 'new'"),
    ("description", "text", "VARCHAR", "TEXT"),
    ("amount", "numeric(12,2)", "DECIMAL(12,2)", "NUMERIC(12,2)"),
    ("quantity", "integer", "INTEGER", "INTEGER"),
    ("unit_price", "numeric(10,2)", "DECIMAL(10,2)", "NUMERIC(10,2)"),
    ("score", "double precision", "DOUBLE", "REAL"),
    ("created_at", "timestamptz DEFAULT now()", "TIMESTAMPTZ", "TIMESTAMP DEFAULT CURRENT_TIMESTAMP"),
    ("updated_at", "timestamp", "TIMESTAMP", "TIMESTAMP"),
    ("due_date", "date", "DATE", "DATE"),
    ("is_active", "boolean DEFAULT true", "BOOLEAN DEFAULT true", "BOOLEAN DEFAULT 1"),
    ("is_archived", "boolean", "BOOLEAN", "BOOLEAN"),
    ("external_key", "uuid", "UUID", "TEXT"),
    ("contact_email", "text", "VARCHAR", "TEXT"),  # sensitive by name: never sampled
    ("attributes", "jsonb", "INTEGER[]", "BLOB"),  # sensitive by type: never sampled
)
ENGINE = {"postgres": 1, "duckdb": 2, "sqlite": 3}
FILLERS = ("region_code", "priority", "channel")  # stand-ins for missing reference slots (table 0, ...)


def table_columns(spec: Spec, i: int, engine: str) -> list[tuple[str, str]]:
    col = ENGINE[engine]
    bigint = "INTEGER" if engine == "sqlite" else "bigint"
    cols = [("id", f"{bigint} PRIMARY KEY" if engine != "sqlite" else "INTEGER PRIMARY KEY")]
    refs = spec.ref_columns(i)
    for name, _parent, declared in refs:
        cols.append((name, f"{bigint} NOT NULL" if declared and name == refs[0][0] else bigint))
    cols.extend((FILLERS[k], "integer" if engine != "sqlite" else "INTEGER") for k in range(3 - len(refs)))
    cols.extend((row[0], row[col]) for row in BODY)
    assert len(cols) == 20, cols
    return cols


def qualified(spec: Spec, i: int, engine: str) -> str:
    return f'"{spec.names[i]}"' if engine == "sqlite" else f'{spec.schema_of[i]}."{spec.names[i]}"'


def ddl(spec: Spec, engine: str) -> list[str]:
    statements = [f"CREATE SCHEMA {schema}" for schema in spec.schemas if engine != "sqlite"]
    for i in range(len(spec.names)):
        parts = [f'"{name}" {kind}' for name, kind in table_columns(spec, i, engine)]
        for name, parent, declared in spec.ref_columns(i):
            if declared:
                parts.append(f'FOREIGN KEY ("{name}") REFERENCES {qualified(spec, parent, engine)} (id)')
        statements.append(f"CREATE TABLE {qualified(spec, i, engine)} ({', '.join(parts)})")
        if engine != "sqlite":
            entity = spec.names[i].split("_")[0]
            statements.append(f"COMMENT ON TABLE {qualified(spec, i, engine)} IS "
                              f"'One row per {entity} record of the {spec.schema_of[i]} area (table {i}).'")
            notes = {"id": "Surrogate key.", "name": f"Display name of the {entity}.",
                     "status": "Lifecycle status: new, open, closed, hold or cancelled.",
                     "amount": "Gross amount in the account currency.", "created_at": "When the row was created."}
            for column, note in notes.items():
                statements.append(f"COMMENT ON COLUMN {qualified(spec, i, engine)}.\"{column}\" IS '{note}'")
    for v in range(min(VIEWS, len(spec.names) // 2)):
        i = len(spec.names) - 1 - v * 3
        name, parent, _declared = spec.ref_columns(i)[0]
        view = f'"v_{spec.names[i]}"' if engine == "sqlite" else f'{spec.schema_of[i]}."v_{spec.names[i]}"'
        statements.append(f"CREATE VIEW {view} AS SELECT c.id, c.name, c.status, c.amount, p.name AS parent_name "
                          f"FROM {qualified(spec, i, engine)} AS c JOIN {qualified(spec, parent, engine)} AS p "
                          f"ON p.id = c.\"{name}\"")
    return statements


def literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def inserts(spec: Spec, engine: str) -> list[str]:
    statements = []
    for i in range(spec.with_rows):
        entity = spec.names[i].split("_")[0]
        rows = []
        for r in range(1, ROWS + 1):
            values: list[Any] = [r]
            values += [(r * 7 + k) % ROWS + 1 for k, _ in enumerate(spec.ref_columns(i))]
            values += [r % 5 for _ in range(3 - len(spec.ref_columns(i)))]
            values += [f"{entity} {r}", f"C{r % 12:03d}", STATUSES[r % len(STATUSES)],
                       f"The {entity} number {r}, kept for the benchmark; nothing else to say about it.",
                       round(r * 13.25, 2), r % 9, round(2.5 + r % 17, 2), r / 7,
                       f"2024-{r % 12 + 1:02d}-{r % 28 + 1:02d} 10:{r % 60:02d}:00+00",
                       f"2024-{r % 12 + 1:02d}-{r % 28 + 1:02d} 11:00:00", f"2025-{r % 12 + 1:02d}-01",
                       r % 2 == 0, r % 5 == 0, str(uuid.UUID(int=i * 1000 + r)), f"user{r}@example.com"]
            row = [literal(v) for v in values]
            row.append({"postgres": "'{\"k\": 1}'", "duckdb": "[1, 2]", "sqlite": "x'0102'"}[engine])
            if engine == "sqlite":
                row = [("1" if v == "true" else "0" if v == "false" else v) for v in row]
            rows.append(f"({', '.join(row)})")
        statements.append(f"INSERT INTO {qualified(spec, i, engine)} VALUES {', '.join(rows)}")
    return statements


def build_postgres(dsn: str, spec: Spec) -> None:
    import psycopg

    with psycopg.connect(dsn) as conn:
        conn.execute(";\n".join(ddl(spec, "postgres")))
        conn.execute(";\n".join(inserts(spec, "postgres")))
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE")


def build_duckdb(path: Path, spec: Spec) -> None:
    import duckdb

    conn = duckdb.connect(str(path))
    try:
        conn.execute("BEGIN")
        for statement in ddl(spec, "duckdb") + inserts(spec, "duckdb"):
            conn.execute(statement)
        conn.execute("COMMIT")
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


def build_sqlite(path: Path, spec: Spec) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        script = ";\n".join(ddl(spec, "sqlite") + inserts(spec, "sqlite"))
        conn.executescript(f"PRAGMA foreign_keys = ON;\nBEGIN;\n{script};\nCOMMIT;\nANALYZE;")
    finally:
        conn.close()


# ---- the project and the measurements ---------------------------------------------------------------------


def write_config(project: Path, duckdb_file: Path, sqlite_file: Path) -> None:
    def conn(name: str, driver: str, target: str, sampled: bool) -> str:
        return (f"  {name}:\n    driver: {driver}\n    {target}\n"
                f"    sample_values: {{enabled: {'true' if sampled else 'false'}}}\n")

    block = "connections:\n" + "".join([
        conn("pg", "postgres", "url: env:BENCH_PG_URL", False),
        conn("pg_sampled", "postgres", "url: env:BENCH_PG_URL", True),
        conn("duck", "duckdb", f"path: {duckdb_file.name}", False),
        conn("duck_sampled", "duckdb", f"path: {duckdb_file.name}", True),
        conn("lite", "sqlite", f"path: {sqlite_file.name}", False),
        conn("lite_sampled", "sqlite", f"path: {sqlite_file.name}", True),
    ])
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", block))


async def scan(runtime: Runtime, connection: str) -> tuple[float, dict[str, Any]]:
    request = parse(f'scan.run(connection="{connection}")')
    ctx = Context(runtime, PRINCIPAL, CLI)
    started = time.perf_counter()
    envelope = await dispatch(request, ctx)
    seconds = time.perf_counter() - started
    if envelope["status"] != "success":
        raise SystemExit(f"scan.run({connection}) failed: {envelope['results'][0].get('error')}")
    report: dict[str, Any] = envelope["results"][0]["result"]
    return seconds, report


async def scan_figures(runtime: Runtime, connection: str, rounds: int,
                       baseline: Callable[[], float] | None = None) -> dict[str, Any]:
    """``rounds`` scans of ``connection``; with a ``baseline``, it runs just before each scan."""
    runs, baselines = [], []
    for _ in range(rounds):
        if baseline is not None:
            baselines.append(baseline())
        runs.append(await scan(runtime, connection))
    seconds = [s for s, _ in runs]
    reports = [r for _, r in runs]
    figures: dict[str, Any] = {
        "scan_s": round(statistics.median(seconds), 3),
        "first_scan_s": round(seconds[0], 3),
        "runs_s": [round(s, 3) for s in seconds],
        "timings_ms": {phase: round(statistics.median(r["timings"].get(phase, 0.0) for r in reports), 1)
                       for phase in PHASES},
        "first_scan_timings_ms": {phase: reports[0]["timings"].get(phase, 0.0) for phase in PHASES},
        "counts": reports[-1]["counts"],
        "inferred": reports[-1]["inferredRelationships"],
    }
    if baselines:
        ratios = [s / b for s, b in zip(seconds, baselines, strict=True)]
        figures.update({
            "pg_dump_s": round(statistics.median(baselines), 3), "pg_dump_runs_s": [round(b, 3) for b in baselines],
            "ratios": [round(r, 2) for r in ratios], "ratio_vs_pg_dump": round(statistics.median(ratios), 2),
            "first_scan_ratio": round(ratios[0], 2),
            "rescan_ratio": round(statistics.median(ratios[1:]), 2) if len(ratios) > 1 else None})
    return figures


def sampled_figures(figures: dict[str, Any]) -> dict[str, Any]:
    return {"sampled_scan_s": figures["scan_s"], "sampled_runs_s": figures["runs_s"],
            "sampled_timings_ms": figures["timings_ms"],
            "sample_collection_ms": figures["timings_ms"]["samples_ms"],
            "sampled_columns": figures["counts"]["sampledColumns"],
            "skipped_columns": figures["counts"]["skippedColumns"]}


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def cold_rescan(project: Path, connection: str, env: dict[str, str]) -> float:
    """One scan.run in a fresh process (cold caches and lazy imports, as a CLI call pays), timed inside it."""
    done = subprocess.run([sys.executable, __file__, "--cold-scan", str(project), connection],
                          env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def cold_scan_main(project: Path, connection: str) -> None:
    runtime = open_runtime(project, {"BENCH_PG_URL": os.environ["BENCH_PG_URL"], "KHIVE_PACKS": ENV_PACKS})

    async def one() -> float:
        try:
            return (await scan(runtime, connection))[0]
        finally:
            await runtime.aclose()

    print(anyio.run(one))


def main() -> None:
    quick = "--quick" in sys.argv
    n_tables, rounds, sampled_rounds = (120, 3, 1) if quick else (1000, ROUNDS, 1)
    out: dict[str, Any] = {"bench": "scan", "tables": n_tables, "columns_per_table": 20, "quick": quick}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="khive-bench-scan-")))
        project = tmp / "project"
        init_project(project, "bench")
        duck_file, lite_file = project / "bench.duckdb", project / "bench.sqlite"
        write_config(project, duck_file, lite_file)

        clock = time.perf_counter()
        cluster = stack.enter_context(pgcluster.running_cluster())
        admin = cluster.dsn()
        dbname = pgcluster.create_database(admin, prefix="khive_bench")
        stack.callback(pgcluster.drop_database, admin, dbname)
        pg_dsn = cluster.dsn(dbname)
        build_postgres(pg_dsn, Spec(n_tables, SCHEMAS, same_schema_fks=False))
        build_duckdb(duck_file, Spec(n_tables, SCHEMAS, same_schema_fks=True))
        build_sqlite(lite_file, Spec(n_tables, ("main",), same_schema_fks=False))
        out["setup_s"] = round(time.perf_counter() - clock, 1)

        bindir = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                     check=True).stdout.strip())
        dump = [str(bindir / "pg_dump"), "--schema-only", "-h", str(cluster.socket_dir), "-p", str(cluster.port),
                "-U", "postgres", "-f", "/dev/null", dbname]

        def pg_dump() -> float:
            return timed(lambda: subprocess.run(dump, check=True, capture_output=True))

        runtime = open_runtime(project, {"BENCH_PG_URL": pg_dsn, "KHIVE_PACKS": ENV_PACKS})

        async def measure() -> dict[str, Any]:
            try:
                figures = {"pg": await scan_figures(runtime, "pg", rounds, pg_dump)}
                colds = [(pg_dump(), cold_rescan(project, "pg", {"BENCH_PG_URL": pg_dsn})) for _ in range(2)]
                figures["pg"].update({"cold_process_rescan_s": [round(c, 3) for _, c in colds],
                                      "cold_process_rescan_ratios": [round(c / d, 2) for d, c in colds]})
                for name, n in (("pg_sampled", sampled_rounds), ("duck", rounds), ("duck_sampled", sampled_rounds),
                                ("lite", rounds), ("lite_sampled", sampled_rounds)):
                    figures[name] = await scan_figures(runtime, name, n)
                return figures
            finally:
                await runtime.aclose()

        figures = anyio.run(measure)
        out["postgres"] = {**figures["pg"], **sampled_figures(figures["pg_sampled"])}
        out["duckdb"] = {**figures["duck"], **sampled_figures(figures["duck_sampled"])}
        out["sqlite"] = {**figures["lite"], **sampled_figures(figures["lite_sampled"])}

    measured = {"postgres_ratio_vs_pg_dump": out["postgres"]["ratio_vs_pg_dump"],
                "duckdb_scan_s": out["duckdb"]["scan_s"], "sqlite_scan_s": out["sqlite"]["scan_s"]}
    out["goals"] = GOALS
    out["met"] = {name: measured[name] <= goal for name, goal in GOALS.items()}
    print(orjson.dumps(out).decode())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cold-scan"]:
        cold_scan_main(Path(sys.argv[2]), sys.argv[3])
    else:
        main()
