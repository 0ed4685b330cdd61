"""sl.bootstrap on northwind, sakila and chinook in PostgreSQL (``../shared/tools/realworld-pg``, ADR 0033):
names that do not depend on the order connections are bootstrapped in, measures that mean something, both
paths from payment to store, and a query that names its path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from realworld import realworld_cluster
from sl_shop import layer, ops, source

from khive.scaffold import init_project

pytestmark = [pytest.mark.data, pytest.mark.slow, pytest.mark.anyio]

NAMES = ("northwind", "sakila", "chinook")
CONFIG = "version: 1\nconnections:\n" + "".join(
    f"  {name}: {{driver: postgres, url: env:{name.upper()}_URL}}\n" for name in NAMES)


@pytest.fixture(scope="module")
def warehouse() -> Iterator[dict[str, str]]:
    with realworld_cluster("rw-sl-") as (variables, _):
        yield variables


def rows(url: str, sql: str) -> list[list[Any]]:
    with psycopg.connect(url) as conn:
        return [list(row) for row in conn.execute(sql).fetchall()]


async def test_real_schemas_bootstrap_and_query(warehouse: dict[str, str], tmp_path: Path) -> None:
    env = {f"{name.upper()}_URL": warehouse[f"{name.upper()}_URL"] for name in NAMES}
    first, second = tmp_path / "first", tmp_path / "second"
    init_project(first, "ann")
    (first / "khive.yaml").write_text(CONFIG, encoding="utf-8")
    scans = await ops(first, env, *(f'scan.run(connection="{name}")' for name in NAMES))
    assert all("error" not in scan for scan in scans), scans
    shutil.copytree(first, second, ignore=shutil.ignore_patterns(".khive"))
    forward = await ops(first, env, *(f'sl.bootstrap(connection="{name}")' for name in NAMES))
    backward = await ops(second, env, *(f'sl.bootstrap(connection="{name}")' for name in reversed(NAMES)))
    assert layer(first) == {path.replace("second", "first"): text for path, text in layer(second).items()}
    renamed = {name: {item["table"]: item for item in report["renamed"]} for name, report in zip(NAMES, forward,
                                                                                             strict=True)}
    assert renamed["sakila"]["public.customer"]["source"] == "sakila_customer"
    assert renamed["chinook"]["public.customer"]["source"] == "chinook_customer"
    assert "connection chinook also has a table customer" in renamed["sakila"]["public.customer"]["reason"]
    assert {r["source"] for r in backward[0]["renamed"]} == {r["source"] for r in forward[2]["renamed"]}

    details = source(first, "northwind", "order_details")
    measures = {m["name"]: (m["agg"], m.get("expr")) for m in details["measures"]}
    assert "total_unit_price" not in measures and measures["avg_unit_price"] == ("avg", "unit_price")
    assert measures["revenue"] == ("sum", "unit_price * quantity")
    assert "discount is not applied to it" in details["descriptions"]["bootstrap"]
    orders = source(first, "northwind", "orders")
    assert ("sum", "freight") in [(m["agg"], m.get("expr")) for m in orders["measures"]]
    film = source(first, "sakila", "film")
    assert sorted(j.get("role") for j in film["joins"] if j["to"] == "language") == ["language", "original_language"]

    query = ('sl.query(connection="sakila", measures=["payment.total_amount"], dimensions=["store.store_id"], '
             'order_by=["store_id"]')
    ambiguous, by_customer, by_staff = await ops(first, env, query + ")", query + ', via=["sakila_customer"])',
                                                 query + ', via=["staff"])')
    assert ambiguous["error"]["code"] == "ambiguous_join_path", ambiguous
    url = env["SAKILA_URL"]
    through_customer = rows(url, "SELECT c.store_id, SUM(p.amount) FROM payment p JOIN customer c "
                                 "ON c.customer_id = p.customer_id GROUP BY 1 ORDER BY 1")
    through_staff = rows(url, "SELECT s.store_id, SUM(p.amount) FROM payment p JOIN staff s ON s.staff_id = p.staff_id "
                              "GROUP BY 1 ORDER BY 1")
    assert [[store, Decimal(total)] for store, total in by_customer["rows"]] == through_customer
    assert [[store, Decimal(total)] for store, total in by_staff["rows"]] == through_staff
    assert through_customer != through_staff
