"""A real project for ingest tests: a TPC-H-like SQLite file with a query log beside it (scan it first)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from khive.scaffold import init_project

TPCH_SQLITE = """
CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name TEXT NOT NULL);
CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_nationkey INTEGER REFERENCES nation,
                       c_mktsegment TEXT, c_acctbal NUMERIC);
CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER REFERENCES customer, o_orderdate DATE,
                     o_totalprice NUMERIC, o_orderstatus TEXT);
CREATE TABLE lineitem (l_orderkey INTEGER REFERENCES orders, l_linenumber INTEGER, l_quantity INTEGER,
                       l_returnflag TEXT, l_shipdate DATE, PRIMARY KEY (l_orderkey, l_linenumber));
INSERT INTO nation VALUES (0, 'FRANCE'), (1, 'GERMANY'), (2, 'JAPAN');
INSERT INTO customer VALUES (1, 'a', 0, 'BUILDING', 10), (2, 'b', 1, 'MACHINERY', 20);
INSERT INTO orders VALUES (1, 1, '1995-01-02', 10.5, 'O'), (2, 2, '1995-02-03', 20.5, 'F');
INSERT INTO lineitem VALUES (1, 1, 2, 'A', '1995-01-05'), (2, 1, 3, 'N', '1995-02-06');
"""

# what analysts ran: (sql, user, times)
REVENUE_BY_NATION = ("SELECT n.n_name, SUM(o.o_totalprice) AS revenue FROM customer AS c "
                     "JOIN orders AS o ON o.o_custkey = c.c_custkey JOIN nation AS n ON n.n_nationkey = c.c_nationkey "
                     "WHERE c_mktsegment = '{segment}' GROUP BY n.n_name")
RETURNS = "SELECT l_returnflag, SUM(l_quantity) FROM lineitem WHERE l_shipdate <= '{day}' GROUP BY l_returnflag"
ORDER_STATUS = "SELECT o_orderstatus, COUNT(*) FROM orders WHERE o_orderdate >= '{day}' GROUP BY o_orderstatus"
# a join written with unqualified columns: o_custkey / c_mktsegment resolve only through the scan
LINE_ORDERS = ("SELECT o_orderkey, SUM(l_quantity) FROM orders JOIN lineitem ON l_orderkey = o_orderkey "
               "WHERE o_orderstatus = '{status}' GROUP BY o_orderkey")

Workload = Sequence[tuple[str, str, int]]


def workload(*, with_returns: bool = True, extra: Workload = ()) -> list[tuple[str, str, int]]:
    runs: list[tuple[str, str, int]] = []
    for i, segment in enumerate(["BUILDING", "MACHINERY", "AUTOMOBILE"]):
        runs.append((REVENUE_BY_NATION.format(segment=segment), "alice" if i else "bob", 4))
    runs += [(ORDER_STATUS.format(day=f"1995-0{m}-01"), "carol", 5) for m in range(1, 4)]
    # two analysts: a set of tables read together by one person only is no pattern (patternMinUsers)
    runs += [(LINE_ORDERS.format(status=s), user, 3) for s, user in (("O", "alice"), ("F", "erin"))]
    if with_returns:
        runs += [(RETURNS.format(day=f"1998-0{m}-01"), "dave", 6) for m in range(1, 3)]
    return [*runs, *extra]


def write_log(path: Path, runs: Workload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for sql, user, times in runs:
            for n in range(times):
                out.write(json.dumps({"sql": sql, "user": user, "started_at": f"2026-11-2{n % 9}T10:00:00Z",
                                      "duration_ms": 40 + n, "rows": 3}) + "\n")


CONFIG = """connections:
  tpch:
    driver: sqlite
    path: tpch.sqlite
    historicSql:
      enabled: true
      queryLog: logs/queries.jsonl
      minExecutions: 2
      windowDays: 3650
{extra}"""


def make_project(root: Path, *, extra: str = "") -> Path:
    init_project(root, "ann")
    db = sqlite3.connect(root / "tpch.sqlite")
    db.executescript(TPCH_SQLITE)
    db.commit()
    db.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", CONFIG.format(extra=extra)))
    write_log(root / "logs" / "queries.jsonl", workload())
    return root
