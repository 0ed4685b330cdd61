"""``khive ingest`` against a real PostgreSQL with pg_stat_statements: a TPC-H-like workload by several users."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from khive.scaffold import init_project

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

SCHEMA = """
CREATE TABLE region (r_regionkey int PRIMARY KEY, r_name text NOT NULL);
CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL, n_regionkey int REFERENCES region);
CREATE TABLE customer (c_custkey int PRIMARY KEY, c_name text, c_nationkey int REFERENCES nation,
                       c_mktsegment text);
CREATE TABLE orders (o_orderkey int PRIMARY KEY, o_custkey int REFERENCES customer, o_orderdate date,
                     o_totalprice numeric(12, 2), o_orderstatus char(1));
CREATE TABLE lineitem (l_orderkey int REFERENCES orders, l_linenumber int, l_quantity int, l_returnflag char(1),
                       l_shipdate date, PRIMARY KEY (l_orderkey, l_linenumber));
INSERT INTO region VALUES (0, 'EUROPE'), (1, 'ASIA');
INSERT INTO nation VALUES (0, 'FRANCE', 0), (1, 'GERMANY', 0), (2, 'JAPAN', 1);
INSERT INTO customer SELECT c, 'Customer ' || c, c % 3, (ARRAY['BUILDING', 'MACHINERY'])[c % 2 + 1]
FROM generate_series(1, 30) AS c;
INSERT INTO orders SELECT o, o % 30 + 1, DATE '1995-01-01' + o, o * 3.25, 'O' FROM generate_series(1, 100) AS o;
INSERT INTO lineitem SELECT o, l, l * 2, (ARRAY['A', 'N', 'R'])[l], DATE '1995-01-05' + o
FROM generate_series(1, 100) AS o, generate_series(1, 3) AS l;
"""
# TPC-H Q5-like (customer/orders/nation/region, unqualified columns), Q1-like (lineitem), Q3-like (orders/lineitem)
Q5 = ("SELECT n_name, SUM(o_totalprice) AS revenue FROM customer, orders, nation, region "
      "WHERE c_custkey = o_custkey AND c_nationkey = n_nationkey AND n_regionkey = r_regionkey "
      "AND r_name = '{region}' AND o_orderdate >= DATE '{since}' GROUP BY n_name ORDER BY revenue DESC")
Q1 = ("SELECT l_returnflag, SUM(l_quantity) AS qty, COUNT(*) FROM lineitem "
      "WHERE l_shipdate <= DATE '1998-12-01' - {days} GROUP BY l_returnflag ORDER BY l_returnflag")
Q3 = ("SELECT o.o_orderkey, SUM(l.l_quantity) FROM orders o JOIN lineitem l USING_KEYS "
      "WHERE o.o_orderdate < DATE '{day}' GROUP BY o.o_orderkey")
RUNS = {"analyst_a": [("q5", 6), ("q1", 4)], "analyst_b": [("q5", 3), ("q3", 5)], "analyst_c": [("q1", 2)]}


def _statement(kind: str, n: int) -> str:
    if kind == "q5":
        return Q5.format(region=("EUROPE", "ASIA")[n % 2], since=f"1995-0{n % 9 + 1}-01")
    if kind == "q1":
        return Q1.format(days=30 + n)
    return Q3.replace("USING_KEYS", "ON l.l_orderkey = o.o_orderkey").format(day=f"1995-0{n % 9 + 1}-15")


@pytest.fixture
def warehouse(pg_database: str) -> Iterator[tuple[str, dict[str, str]]]:
    suffix = uuid.uuid4().hex[:6]
    roles = {name: f"{name}_{suffix}" for name in RUNS}  # roles are cluster-wide: unique per test
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute(SCHEMA)
        for role in roles.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
    yield pg_database, roles
    with psycopg.connect(pg_database, autocommit=True) as conn:
        for role in roles.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def run_workload(dsn: str, roles: dict[str, str], runs: dict[str, list[tuple[str, int]]]) -> None:
    for name, planned in runs.items():
        with psycopg.connect(make_conninfo(dsn, user=roles[name]), autocommit=True) as conn:
            for kind, times in planned:
                for n in range(times):
                    conn.execute(_statement(kind, n))


def project_runtime(root: Path, dsn: str, *, samples: bool) -> Runtime:
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", (
        "connections:\n  wh:\n    driver: postgres\n    url: env:WH_URL\n"
        f"    sample_values: {{enabled: {str(samples).lower()}}}\n"
        "    historicSql: {enabled: true, minExecutions: 2}\n")))
    return open_runtime(root, {"WH_URL": dsn})


@pytest.fixture
async def runtime(tmp_path: Path, warehouse: tuple[str, dict[str, str]]) -> AsyncIterator[Runtime]:
    runtime = project_runtime(tmp_path / "proj", warehouse[0], samples=False)
    yield runtime
    await runtime.aclose()


async def call(runtime: Runtime, text: str) -> dict[str, Any]:
    envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    (result,) = envelope["results"]
    assert result["ok"], result
    return dict(result["result"])


def shard(runtime: Runtime) -> dict[str, Any]:
    (path,) = (runtime.project / "_schema/wh").glob("*public.yaml")  # <database>.public.yaml
    data = YAML(typ="safe").load(path.read_text())
    tables: dict[str, Any] = data["tables"]
    return tables


async def test_postgres_workload_to_usage_and_patterns(runtime: Runtime, warehouse: tuple[str, dict[str, str]]
                                                      ) -> None:
    dsn, roles = warehouse
    await call(runtime, 'scan.run(connection="wh")')
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")  # only the analysts' work is history
    run_workload(dsn, roles, RUNS)
    probe = await call(runtime, 'historic_sql.probe(connection="wh")')
    assert "stats_reset" in {f["code"] for f in probe["findings"]}
    # one role for agents and history here: the probe says so (a test of the reader, not of the set-up)
    assert {f["code"] for f in probe["findings"] if f["severity"] != "info"} == {"shared_role"}
    first = await call(runtime, 'historic_sql.ingest(connection="wh")')
    assert first["counts"]["templates"] == 3 and first["counts"]["tables"] == 5
    totals = {t: (await call(runtime, f'historic_sql.usage(connection="wh", table="{t}")'))["totals"]
              for t in ("region", "lineitem", "orders")}
    # q5: 6 by a + 3 by b; pg_stat_statements keeps no times, so no lastSeen
    assert totals["region"] == {"executions": 9, "templates": 1, "distinctUsers": 2, "lastSeen": None}
    assert totals["lineitem"] == {"executions": 4 + 2 + 5, "templates": 2, "distinctUsers": 3, "lastSeen": None}
    assert totals["orders"] == {"executions": 9 + 5, "templates": 2, "distinctUsers": 2, "lastSeen": None}
    tables = shard(runtime)
    # Q5 names no table on any column: the scan resolves c_nationkey, n_regionkey, r_name, ...
    assert "r_name" in tables["region"]["usage"]["commonFilters"]
    assert {"table": "public.nation", "on": ["r_regionkey = n_regionkey"]} in tables["region"]["usage"]["commonJoins"]
    assert {"table": "public.region", "on": ["n_regionkey = r_regionkey"]} in tables["nation"]["usage"]["commonJoins"]
    assert (runtime.project / "wiki/global/historic-sql/customer-nation-orders-region.md").is_file()
    second = await call(runtime, 'historic_sql.ingest(connection="wh")')
    assert second["workUnits"] == 0 and second["digests"] == {}
    assert second["parseStats"]["cached"] == 3
    first_run = runtime.project / "raw-sources/wh/historic-sql" / first["syncId"]
    second_run = runtime.project / "raw-sources/wh/historic-sql" / second["syncId"]
    assert {p.name: p.read_bytes() for p in (first_run / "tables").iterdir()} == {
        p.name: p.read_bytes() for p in (second_run / "tables").iterdir()}
    assert (first_run / "patterns-input.json").read_bytes() == (second_run / "patterns-input.json").read_bytes()


async def test_the_scans_own_sampling_is_not_usage(tmp_path: Path, warehouse: tuple[str, dict[str, str]]) -> None:
    dsn, roles = warehouse
    runtime = project_runtime(tmp_path / "proj", dsn, samples=True)
    try:
        for _ in range(2):  # each scan samples every table: twice clears minExecutions
            await call(runtime, 'scan.run(connection="wh")')
        with psycopg.connect(dsn, autocommit=True) as conn:  # pg_stat_statements keeps the leading comment
            marked = conn.execute("SELECT count(*), min(calls) FROM pg_stat_statements "
                                  "WHERE query LIKE '/* khive:scan */%'").fetchone()
        assert marked is not None and marked[0] >= 5 and marked[1] >= 2
        run_workload(dsn, roles, RUNS)  # no stats reset: the history holds the scans and the analysts
        first = await call(runtime, 'historic_sql.ingest(connection="wh")')
        assert first["counts"]["templates"] == 3
        region = await call(runtime, 'historic_sql.usage(connection="wh", table="region")')
        assert region["totals"] == {"executions": 9, "templates": 1, "distinctUsers": 2, "lastSeen": None}
    finally:
        await runtime.aclose()
