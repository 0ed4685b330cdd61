"""The semantic-layer compiler on a real, skewed DuckDB shop: compiled SQL runs and matches hand-written SQL."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import compile_expected as expected
import duckdb
import pytest
import sqlglot
from compile_fixtures import build_shop, shop_sources, source_dicts
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.connections.sqlgate import check_sql
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import OpError
from khive.plugins import available_packs
from khive.scaffold import init_project
from packs.sl.compile_verbs import COMPILE_VERBS
from packs.sl.compiler import AdHocMeasure, Compiled, CompileError, compile_query
from packs.sl.models import Source

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    path = build_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb")
    db = duckdb.connect(str(path), read_only=True)
    yield db
    db.close()


def norm(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples; numbers rounded so DECIMAL and DOUBLE compare."""
    def value(x: Any) -> Any:
        return round(float(x), 6) if isinstance(x, (Decimal, float)) else x

    fixed = [tuple(value(x) for x in row) for row in rows]
    return sorted(fixed, key=lambda row: [(x is None, str(x)) for x in row])


def compiled(sources: dict[str, Source] | None = None, **query: Any) -> Compiled:
    return compile_query(sources or shop_sources(), dialect="duckdb", **query)


def run(db: duckdb.DuckDBPyConnection, query: Compiled | str) -> list[tuple[Any, ...]]:
    sql = query if isinstance(query, str) else query.sql
    if not isinstance(query, str):
        assert check_sql(sql, "duckdb", wire=True).allowed, check_sql(sql, "duckdb", wire=True).reason
    return norm(db.execute(sql).fetchall())


def refused(code: str, **query: Any) -> CompileError:
    with pytest.raises(CompileError) as caught:
        compiled(**query)
    assert caught.value.code == code, caught.value.message
    return caught.value


# --- single source, joins, names ---------------------------------------------------------------------------

def test_single_source_measures_by_dimension(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue", "order_count"], dimensions=["orders.status"])
    assert run(shop, result) == run(shop, expected.ORDERS_BY_STATUS)
    assert result.plan["joins"] == [] and result.plan["preAggregations"] == []
    assert "JOIN" not in result.sql


def test_multi_hop_join(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["order_items.quantity"], dimensions=["categories.name"])
    assert run(shop, result) == run(shop, expected.QUANTITY_BY_CATEGORY)
    assert [(j["from"], j["to"], j["relationship"]) for j in result.plan["joins"]] == [
        ("order_items", "products", "many_to_one"), ("products", "categories", "many_to_one")]
    assert result.plan["joins"][0]["on"] == [{"from": "order_items.product_id", "to": "products.id"}]


def test_unqualified_names_resolve_when_unique_and_list_candidates_when_not() -> None:
    assert compiled(measures=["refund_total"], dimensions=["segment"]).plan["measures"] == ["returns.refund_total"]
    error = refused("ambiguous_name", measures=["revenue"])
    assert error.details["candidates"] == ["orders.revenue", "order_items.revenue"]
    error = refused("ambiguous_name", measures=["orders.revenue"], dimensions=["name"])
    assert "customers.name" in error.message and "categories.name" in error.message
    assert "did you mean revenue" in refused("unknown_name", measures=["orders.revnue"]).message


def test_order_by_and_limit(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue"], dimensions=["customers.segment"], order_by=["revenue desc"],
                      limit=2)
    top = shop.execute("SELECT cu.segment, SUM(o.amount) AS revenue FROM orders o LEFT JOIN customers cu "
                       "ON cu.id = o.customer_id GROUP BY 1 ORDER BY revenue DESC LIMIT 2").fetchall()
    assert shop.execute(result.sql).fetchall() == top
    error = refused("unknown_name", measures=["orders.revenue"], order_by=["order_count"])
    assert "add it to measures" in error.message


# --- fan-out and chasm traps -------------------------------------------------------------------------------

def test_fan_out_is_pre_aggregated_not_double_counted(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue"], dimensions=["categories.name"])
    right, naive = run(shop, expected.REVENUE_BY_CATEGORY), run(shop, expected.REVENUE_BY_CATEGORY_NAIVE)
    assert right != naive  # the data fans out: the naive join double counts
    assert run(shop, result) == right
    (pre,) = result.plan["preAggregations"]
    assert pre["source"] == "orders" and pre["grain"] == ["orders.id"]
    assert pre["fanOutJoins"][0]["relationship"] == "one_to_many"
    assert any("pre-aggregated" in note for note in result.notes)


def test_fan_out_re_aggregates_every_kind(shop: duckdb.DuckDBPyConnection) -> None:
    measures = ["orders.revenue", "orders.avg_amount", "orders.order_count", "orders.largest", "orders.smallest",
                "orders.aov"]
    result = compiled(measures=measures, dimensions=["categories.name", "customers.segment"])
    assert run(shop, result) == run(shop, expected.ORDER_MEASURES_BY_CATEGORY_AND_SEGMENT)
    assert result.plan["preAggregations"][0]["grain"] == ["customers.segment", "orders.id"]


def test_chasm_trap_measures_are_aggregated_per_source(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue", "returns.refund_total"], dimensions=["customers.segment"])
    right = run(shop, expected.REVENUE_AND_REFUNDS_BY_SEGMENT)
    naive = run(shop, expected.REVENUE_AND_REFUNDS_BY_SEGMENT_NAIVE)
    assert right != naive
    assert run(shop, result) == right
    assert result.plan["combine"]["groups"] == ["orders__agg", "returns__agg"]


def test_chasm_trap_with_a_fanned_out_group(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue", "order_items.quantity"], dimensions=["categories.name"])
    assert run(shop, result) == run(shop, expected.REVENUE_AND_QUANTITY_BY_CATEGORY)


def test_two_fan_outs_from_one_measure_source(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue"], dimensions=["categories.name", "returns.reason"])
    assert run(shop, result) == run(shop, expected.REVENUE_BY_CATEGORY_AND_RETURN_REASON)
    assert [j["to"] for j in result.plan["preAggregations"][0]["fanOutJoins"]] == ["order_items", "returns"]


def test_sql_defined_source(shop: duckdb.DuckDBPyConnection) -> None:
    big = Source.model_validate({
        "name": "big_orders", "sql": "SELECT * FROM orders WHERE amount >= 500",
        "measures": [{"name": "n", "agg": "count"}],
        "joins": [{"to": "customers", "on": [{"from": "customer_id", "to": "id"}]}]})
    result = compiled({**shop_sources(), "big_orders": big}, measures=["big_orders.n"], dimensions=["segment"])
    assert run(shop, result) == run(shop, expected.BIG_ORDER_COUNT_BY_SEGMENT)


def test_measures_of_several_sources_without_dimensions(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue", "returns.refund_total"])
    assert run(shop, result) == run(shop, "SELECT (SELECT SUM(amount) FROM orders), (SELECT SUM(amount) FROM returns)")


def test_count_distinct_across_a_fan_out_is_refused(shop: duckdb.DuckDBPyConnection) -> None:
    error = refused("fan_out_not_reaggregable", measures=["orders.unique_customers"], dimensions=["categories.name"])
    assert "count_distinct" in error.message and "orders -> order_items" in error.message
    fine = compiled(measures=["orders.unique_customers"], dimensions=["customers.segment"])
    assert run(shop, fine) == run(shop, expected.UNIQUE_CUSTOMERS_BY_SEGMENT)


def test_filter_across_a_fan_out_is_refused() -> None:
    error = refused("fan_out_filter", measures=["orders.revenue"], dimensions=["customers.segment"],
                    filters=["categories.name = 'books'"])
    assert "one_to_many" in error.message and error.details["path"] == "orders -> order_items -> products -> categories"


# --- measures ----------------------------------------------------------------------------------------------

def test_derived_measures(shop: duckdb.DuckDBPyConnection) -> None:
    doubled = AdHocMeasure(name="aov_x2", agg="derived", expr="orders.aov * 2")
    result = compiled(measures=["orders.aov", "orders.delivered_share", doubled], dimensions=["customers.segment"])
    assert run(shop, result) == run(shop, expected.DERIVED_BY_SEGMENT)


def test_derived_cycle_is_refused() -> None:
    sources = shop_sources()
    data = sources["returns"].model_dump(by_alias=True)
    data["measures"] += [{"name": "a", "agg": "derived", "expr": "b + 1"},
                         {"name": "b", "agg": "derived", "expr": "a * refund_total"}]
    sources["returns"] = Source.model_validate(data)
    with pytest.raises(CompileError) as caught:
        compiled(sources, measures=["returns.a"])
    assert caught.value.code == "derived_cycle" and "returns.a -> returns.b -> returns.a" in caught.value.message


def test_ad_hoc_measures(shop: duckdb.DuckDBPyConnection) -> None:
    value = AdHocMeasure(name="item_value", agg="sum", expr="order_items.quantity * order_items.unit_price")
    assert run(shop, compiled(measures=[value], dimensions=["categories.name"])) == run(
        shop, expected.ITEM_VALUE_BY_CATEGORY)
    big = AdHocMeasure(name="big_orders", agg="count", source="orders", filter="amount >= 500")
    assert run(shop, compiled(measures=[big], dimensions=["status"])) == run(shop, expected.BIG_ORDERS_BY_STATUS)
    big_by_column = AdHocMeasure(name="big_orders", agg="count", source="orders", filter="big")  # a declared column
    assert run(shop, compiled(measures=[big_by_column], dimensions=["status"])) == run(
        shop, expected.BIG_ORDERS_BY_STATUS)
    sourceless = AdHocMeasure(name="x", agg="sum", expr="amount")
    assert "set source:" in refused("invalid_measure", measures=[sourceless]).message
    two = AdHocMeasure(name="x", agg="sum", expr="orders.amount - returns.amount")
    assert refused("invalid_measure", measures=[two]).code == "invalid_measure"


# --- filters, segments, time --------------------------------------------------------------------------------

def test_segments_and_filters(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue"], dimensions=["customers.segment"],
                      segments=["orders.delivered", "business"],
                      filters=["orders.created_at >= TIMESTAMP '2025-07-01'", "big"])
    assert run(shop, result) == run(shop, expected.FILTERED_REVENUE_BY_SEGMENT)
    assert result.plan["segments"] == ["orders.delivered", "customers.business"]
    assert "orders.amount >= 500" in result.sql  # the declared column's expr, qualified


def test_bad_filters_say_why() -> None:
    base = {"measures": ["orders.revenue"], "dimensions": ["customers.segment"]}
    assert "names the measure orders.revenue" in refused("invalid_filter", **base, filters=["revenue > 100"]).message
    assert "names the measure" in refused("invalid_filter", **base, filters=["orders.revenue > 100"]).message
    assert "aggregates" in refused("invalid_filter", **base, filters=["SUM(orders.amount) > 100"]).message
    assert "one SQL expression" in refused("invalid_sql", **base, filters=["1 = 1; DROP TABLE orders"]).message
    assert "qualified as source.column (e.g. orders.amount)" in refused(
        "unknown_name", **base, filters=["amount > 5"]).message


def test_time_grain_month(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(measures=["orders.revenue"], dimensions=["orders.created_at"], time_grain="month")
    assert run(shop, result) == run(shop, expected.REVENUE_BY_MONTH)
    assert len(run(shop, result)) == 12


@pytest.mark.parametrize("grain", ["day", "week", "month", "quarter", "year"])
def test_time_grains_on_sqlite(grain: str) -> None:
    stamps = ["2025-01-01 10:00:00", "2025-02-15 23:59:00", "2025-05-31 00:00:00", "2025-08-20 12:00:00",
              "2025-11-03 08:00:00", "2025-12-28 17:30:00"]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE events (ts TEXT)")
    db.executemany("INSERT INTO events VALUES (?)", [(s,) for s in stamps])
    events = Source.model_validate({"name": "events", "table": "events", "columns": [{"name": "ts", "type": "time"}],
                                    "measures": [{"name": "n", "agg": "count"}]})
    result = compile_query({"events": events}, measures=["n"], dimensions=["ts"], time_grain=grain, dialect="sqlite")
    got = dict(db.execute(result.sql).fetchall())
    want: dict[str, int] = {}
    for stamp in stamps:
        day = dt.date.fromisoformat(stamp[:10])
        start = {"day": day, "week": day - dt.timedelta(days=day.weekday()), "month": day.replace(day=1),
                 "quarter": dt.date(day.year, (day.month - 1) // 3 * 3 + 1, 1), "year": dt.date(day.year, 1, 1)}[grain]
        want[start.isoformat()] = want.get(start.isoformat(), 0) + 1
    assert got == want


# --- join paths ---------------------------------------------------------------------------------------------

def test_ambiguous_path_is_noted_when_the_query_breaks_the_tie(shop: duckdb.DuckDBPyConnection) -> None:
    result = compiled(shop_sources(ambiguous=True), measures=["order_items.quantity"], dimensions=["stores.name"],
                      filters=["orders.status = 'delivered'"])
    assert run(shop, result) == run(shop, expected.DELIVERED_QUANTITY_BY_ORDER_STORE)
    (note,) = [n for n in result.notes if n.startswith("ambiguous join path")]
    assert "order_items -> orders -> stores or order_items -> products -> stores" in note
    assert "chose the one through orders" in note


def test_a_path_via_names_is_noted_as_chosen_by_via(shop: duckdb.DuckDBPyConnection) -> None:
    for through in ("orders", "products"):
        result = compiled(shop_sources(ambiguous=True), measures=["order_items.quantity"], dimensions=["stores.name"],
                          via=[through])
        (note,) = [n for n in result.notes if n.startswith("ambiguous join path")]
        assert note.endswith(f"chose the one through {through}, as via names it"), note
        assert f"ON {through}.store_id = stores.id" in result.sql, result.sql


def test_ambiguous_path_without_a_tie_break_is_refused() -> None:
    with pytest.raises(CompileError) as caught:
        compiled(shop_sources(ambiguous=True), measures=["order_items.quantity"], dimensions=["stores.name"])
    assert caught.value.code == "ambiguous_join_path"
    assert caught.value.details["paths"] == [["order_items", "orders", "stores"], ["order_items", "products", "stores"]]


def test_parallel_joins_use_the_first_declared_with_a_note() -> None:
    flights = Source.model_validate({
        "name": "flights", "table": "flights", "measures": [{"name": "n", "agg": "count"}],
        "joins": [{"to": "airports", "on": [{"from": "origin", "to": "code"}]},
                  {"to": "airports", "on": [{"from": "destination", "to": "code"}]}]})
    airports = Source.model_validate({"name": "airports", "table": "airports", "columns": [{"name": "city"}]})
    result = compile_query({"flights": flights, "airports": airports}, measures=["n"], dimensions=["city"],
                           dialect="postgres")
    assert "flights.origin = airports.code" in result.sql and "destination" not in result.sql
    assert any("used the first declared (flights.origin = airports.code)" in n for n in result.notes)


def test_disconnected_sources_are_named() -> None:
    sources = {**shop_sources(), "weather": Source.model_validate(
        {"name": "weather", "table": "weather", "columns": [{"name": "city"}]})}
    with pytest.raises(CompileError) as caught:
        compiled(sources, measures=["orders.revenue"], dimensions=["weather.city", "customers.segment"])
    assert caught.value.code == "disconnected_sources" and caught.value.details["unreachable"] == ["weather"]


# --- golden SQL ---------------------------------------------------------------------------------------------

GOLDEN_CASES = sorted(path.stem for path in GOLDEN.glob("*.json"))


@pytest.mark.parametrize("dialect", ["postgres", "snowflake"])
@pytest.mark.parametrize("case", GOLDEN_CASES)
def test_golden_sql(case: str, dialect: str) -> None:
    query = json.loads((GOLDEN / f"{case}.json").read_text())
    measures = [m if isinstance(m, str) else AdHocMeasure(**m) for m in query.pop("measures")]
    sql = compile_query(shop_sources(), measures=measures, dialect=dialect, **query).sql + "\n"
    golden = GOLDEN / f"{case}.{dialect}.sql"
    if os.environ.get("KHIVE_UPDATE_GOLDEN") == "1":
        golden.write_text(sql)
    assert sql == golden.read_text()
    reparsed = sqlglot.parse_one(golden.read_text(), read=dialect)
    assert reparsed.sql(dialect=dialect, pretty=True) + "\n" == sql


def test_golden_cases_exist() -> None:
    assert len(GOLDEN_CASES) >= 3


# --- the verbs, on a project ---------------------------------------------------------------------------------

@pytest.fixture
def duck_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init_project(root, "ann")
    build_shop(root / "shop.duckdb")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  shop:\n    driver: duckdb\n    path: shop.duckdb\n"))
    layer = root / "semantic-layer" / "shop"
    layer.mkdir(parents=True)
    yaml = YAML()
    for data in source_dicts():
        with (layer / f"{data['name']}.yaml").open("w") as handle:
            yaml.dump(data, handle)
    (layer / "broken.yaml").write_text("name: broken\ntable: [unclosed\n")
    return root


@pytest.fixture
async def sl_call(duck_project: Path) -> AsyncIterator[Callable[..., Awaitable[dict[str, Any]]]]:
    """Run an sl verb the way clients do (through the dispatcher) when the sl pack is installed, else its handler."""
    via_dispatch = "sl" in available_packs()
    runtime = open_runtime(duck_project, {"KHIVE_PACKS": "core,scan,sl" if via_dispatch else "core,scan"})
    via_dispatch = via_dispatch and "sl.query" in runtime.registry.verbs

    async def call(verb: str, **args: Any) -> dict[str, Any]:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")
        if via_dispatch:
            envelope = await dispatch(parse(f"{verb}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})"),
                                      ctx)
            (result,) = envelope["results"]
            return dict(result["result"]) if result["ok"] else {"error": result["error"]}
        handler = next(v for v in COMPILE_VERBS if v.name == verb)
        try:
            answer = handler.handler(handler.params.model_validate(args), ctx)
            return dict(await answer if inspect.isawaitable(answer) else answer)  # sl.query is async, sl.compile not
        except OpError as exc:
            return {"error": exc.to_dict()}

    yield call
    await runtime.aclose()


@pytest.mark.anyio
async def test_sl_query_runs_through_the_read_only_gate(sl_call: Any, shop: duckdb.DuckDBPyConnection) -> None:
    result = await sl_call("sl.query", connection="shop", measures=["orders.revenue", "returns.refund_total"],
                           dimensions=["customers.segment"], include=["sql", "plan"])
    assert "error" not in result, result
    assert [c["name"] for c in result["columns"]] == ["segment", "revenue", "refund_total"]
    # exact decimals travel as the text DuckDB prints for them (docs/values.md)
    printed = shop.execute(f"SELECT COLUMNS(*)::VARCHAR FROM ({expected.REVENUE_AND_REFUNDS_BY_SEGMENT})").fetchall()
    assert norm(result["rows"]) == norm(printed)
    assert result["truncated"] is False and result["sql"].startswith("WITH orders__agg AS")
    assert result["plan"]["combine"]["groups"] == ["orders__agg", "returns__agg"]
    assert any("broken.yaml skipped" in note for note in result["notes"])
    small = await sl_call("sl.query", connection="shop", measures=["orders.revenue"], dimensions=["orders.status"],
                          max_rows=2)
    assert small["truncated"] is True and small["rowCount"] == 2


@pytest.mark.anyio
async def test_sl_compile_returns_sql_plan_and_errors(sl_call: Any) -> None:
    big = {"name": "big_orders", "agg": "count", "source": "orders", "filter": "amount >= 500"}
    result = await sl_call("sl.compile", connection="shop", measures=[big], dimensions=["categories.name"],
                           include=["plan"])
    assert "sql" not in result and result["plan"]["preAggregations"][0]["source"] == "orders"
    refused = await sl_call("sl.compile", connection="shop", measures=["orders.revenue"],
                            filters=["categories.name = 'books'"])
    assert refused["error"]["code"] == "fan_out_filter"
    unknown = await sl_call("sl.compile", connection="nope", measures=["orders.revenue"])
    assert unknown["error"]["code"] == "connection_not_found"


def test_derived_division_is_true_division_on_sqlite() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE events (kind TEXT)")
    db.executemany("INSERT INTO events VALUES (?)", [("a",), ("b",), ("b",), ("b",)])
    events = Source.model_validate({"name": "events", "table": "events", "columns": [{"name": "kind"}],
                                    "measures": [{"name": "n", "agg": "count"},
                                                 {"name": "half", "agg": "derived", "expr": "n / 2"}]})
    result = compile_query({"events": events}, measures=["half"], dimensions=["kind"], dialect="sqlite")
    assert sorted(db.execute(result.sql).fetchall()) == [("a", 0.5), ("b", 1.5)]
