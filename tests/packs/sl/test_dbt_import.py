"""sl.import_dbt: MetricFlow semantic models and metrics into semantic-layer sources.

A small dbt project is generated in tmp_path for the behaviour tests; the ``data`` tests import the
real MetricFlow manifests and the ``mf tutorial`` project from ../shared/data/semantic.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from khive.context import CLI, MCP_STDIO, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import OpError
from khive.hookspecs import PackInfo, hookimpl
from khive.plugins import available_packs
from khive.project.config import KhiveConfig
from khive.project.store import FileStore
from khive.runtime import Runtime, build_runtime
from khive.scaffold import init_project
from khive.verbs import Verb
from packs.sl.dbt_filters import FilterScope, Untranslatable, translate
from packs.sl.dbt_verbs import DBT_VERBS, ImportParams, import_dbt, run_import
from packs.sl.models import Source

pytestmark = pytest.mark.anyio

SEMANTIC_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "semantic"
CONFIG = {"connections": {"wh": {"driver": "duckdb", "path": "wh.duckdb"}}}

ORDERS_YML = """\
version: 2
models:
  - name: orders
    description: One row per order placed in the shop.
    columns:
      - name: order_id
        description: Primary key of an order.
        data_type: integer
      - name: status
        description: '{{ doc("order_status") }}'

semantic_models:
  - name: orders
    model: ref('orders')
    defaults:
      agg_time_dimension: ordered_at
    entities:
      - name: order_id
        type: primary
      - name: customer
        type: foreign
        expr: customer_id
    dimensions:
      - name: ordered_at
        type: time
        type_params:
          time_granularity: day
      - name: status
        type: categorical
      - name: is_food_order
        type: categorical
    measures:
      - name: order_total
        description: Sum of order amounts.
        agg: sum
        expr: amount
      - name: order_count
        expr: "1"
        agg: sum
      - name: food_orders
        agg: sum_boolean
        expr: is_food_order
      - name: customers_with_orders
        agg: count_distinct
        expr: customer_id
      - name: median_order_total
        agg: percentile
        expr: amount
        agg_params:
          percentile: 0.5
      - name: p90_order_total
        agg: percentile
        expr: amount
        agg_params:
          percentile: 0.9
      - name: average_order_total
        agg: average
        expr: amount
"""

CUSTOMERS_YML = """\
semantic_models:
  - name: customers
    description: People who ordered.
    model: ref('customers')
    entities:
      - name: customer
        type: primary
        expr: customer_id
    dimensions:
      - name: region
        type: categorical
    measures:
      - name: customer_count
        agg: count_distinct
        expr: customer_id
  - name: customer_profiles
    description: Marketing profile, at most one per customer.
    model: ref('customer_profiles')
    entities:
      - name: customer
        type: unique
        expr: customer_id
    dimensions:
      - name: segment
        type: categorical
"""

METRICS_YML = """\
metrics:
  - name: order_total
    type: simple
    type_params:
      measure: order_total
  - name: revenue
    label: Revenue
    type: simple
    type_params:
      measure: order_total
  - name: food_order_total
    description: Order totals of food orders.
    type: simple
    type_params:
      measure: order_total
    filter: "{{ Dimension('order_id__is_food_order') }} = true"
  - name: completed_orders
    type: simple
    type_params:
      measure:
        name: order_count
        filter: "{{ Dimension('order_id__status') }} = 'completed'"
  - name: recent_orders
    type: simple
    type_params:
      measure: order_count
    filter: "{{ TimeDimension('metric_time', 'day') }} >= '2024-01-01'"
  - name: emea_orders
    type: simple
    type_params:
      measure: order_count
    filter: "{{ Dimension('customer__region') }} = 'EMEA'"
  - name: average_order_value
    type: ratio
    type_params:
      numerator: order_total
      denominator: order_count
  - name: food_share
    type: ratio
    type_params:
      numerator:
        name: order_total
        filter: "{{ Dimension('order_id__is_food_order') }}"
        alias: food_total
      denominator: order_total
  - name: orders_per_customer
    type: ratio
    type_params:
      numerator: order_count
      denominator: customer_count
  - name: net_revenue
    type: derived
    type_params:
      expr: revenue - food_order_total * 0.1
      metrics:
        - name: revenue
        - name: food_order_total
  - name: revenue_growth
    type: derived
    type_params:
      expr: revenue - revenue_last_week
      metrics:
        - name: revenue
        - name: revenue
          offset_window: 1 week
          alias: revenue_last_week
  - name: cumulative_revenue
    type: cumulative
    type_params:
      measure: order_total
  - name: order_count
    type: simple
    type_params:
      measure: order_count
"""

DOCS_MD = "{% docs order_status %}\nOne of placed, shipped, completed, returned.\n{% enddocs %}\n"


class _DbtVerbsOnly:
    """The dbt verbs as a plugin of their own, for a runtime without the rest of the sl pack."""

    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="sl_dbt_only", version="0")

    @hookimpl
    def khive_register_verbs(self) -> tuple[Verb, ...]:
        return DBT_VERBS


def write_dbt_project(root: Path) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: shop\nversion: '1.0'\nmodels:\n  shop:\n    +materialized: table\n")
    (root / "models" / "orders.yml").write_text(ORDERS_YML)
    (root / "models" / "customers.yml").write_text(CUSTOMERS_YML)
    (root / "models" / "metrics.yml").write_text(METRICS_YML)
    (root / "models" / "docs.md").write_text(DOCS_MD)
    (root / "target").mkdir()
    (root / "target" / "broken.yml").write_text("semantic_models: [\n")  # build output is never read
    return root


def load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def skipped(result: dict[str, Any]) -> dict[str, str]:
    return {w["element"]: w["message"] for w in result["warnings"] if w["skipped"]}


@pytest.fixture
def khive_project(tmp_path: Path) -> Path:
    init_project(tmp_path / "proj", "ann")
    return tmp_path / "proj"


@pytest.fixture
def dbt_dir(tmp_path: Path) -> Path:
    return write_dbt_project(tmp_path / "shop_dbt")


@pytest.fixture
async def dbt_runtime(khive_project: Path) -> AsyncIterator[Runtime]:
    runtime = build_runtime(khive_project, KhiveConfig.model_validate(CONFIG), env={}, packs=["core"],
                            extra_plugins=[_DbtVerbsOnly()])
    yield runtime
    await runtime.aclose()


async def run(runtime: Runtime, path: Path | str, **args: Any) -> dict[str, Any]:
    params = ImportParams.model_validate({"path": str(path), "connection": "wh", **args})
    return import_dbt(params, Context(runtime, "operator:ann", CLI))  # a plain handler: called directly here


# -- the generated project ---------------------------------------------------------------------------


async def test_import_maps_models_joins_measures_and_metrics(dbt_runtime: Runtime, dbt_dir: Path,
                                                             khive_project: Path) -> None:
    result = await run(dbt_runtime, dbt_dir, schema="shop")
    layer = "semantic-layer/wh"
    names = ("customer_profiles", "customers", "orders")
    assert sorted(result["created"]) == [f"{layer}/{name}.yaml" for name in names]
    assert (result["sources"], result["measures"], result["metrics"]) == (3, 7, 9)
    for path in result["created"]:
        Source.model_validate(load(khive_project / path))

    orders = load(khive_project / layer / "orders.yaml")
    assert orders["table"] == "shop.orders" and orders["grain"] == ["order_id"]
    assert orders["descriptions"]["user"] == ("One row per order placed in the shop. "
                                              "(default time dimension: ordered_at)")
    columns = by_name(orders["columns"])
    assert columns["order_id"]["type"] == "number"
    assert columns["order_id"]["descriptions"]["user"] == "Primary key of an order."
    assert columns["customer"]["expr"] == "customer_id"
    assert columns["status"]["descriptions"]["user"] == "One of placed, shipped, completed, returned."
    assert columns["ordered_at"] == {"name": "ordered_at", "type": "time",
                                     "descriptions": {"user": "Time dimension at day granularity."}}
    assert [(j["to"], j["relationship"], j["on"]) for j in orders["joins"]] == [
        ("customers", "many_to_one", [{"from": "customer", "to": "customer"}]),
        ("customer_profiles", "many_to_one", [{"from": "customer", "to": "customer"}])]

    measures = by_name(orders["measures"])
    assert measures["order_total"] == {"name": "order_total", "agg": "sum", "expr": "amount",
                                       "description": "Sum of order amounts."}
    assert measures["food_orders"]["expr"] == "CASE WHEN is_food_order THEN 1 ELSE 0 END"
    assert measures["median_order_total"]["agg"] == "median" and measures["average_order_total"]["agg"] == "avg"
    assert "p90_order_total" not in measures
    assert measures["revenue"] == {"name": "revenue", "agg": "derived", "expr": "order_total",
                                   "description": "Revenue"}
    assert measures["food_order_total"]["filter"] == "is_food_order = true"
    assert measures["completed_orders"]["filter"] == "status = 'completed'"
    assert measures["recent_orders"]["filter"] == "ordered_at >= '2024-01-01'"
    assert measures["average_order_value"]["expr"] == "1.0 * order_total / NULLIF(order_count, 0)"
    assert measures["food_total"]["filter"] == "is_food_order" and measures["food_total"]["expr"] == "amount"
    assert measures["food_share"]["expr"] == "1.0 * food_total / NULLIF(order_total, 0)"
    assert measures["net_revenue"]["expr"] == "revenue - food_order_total * 0.1"
    assert "order_total" in measures and "emea_orders" not in measures

    customers = load(khive_project / layer / "customers.yaml")
    assert customers["grain"] == ["customer"] and by_name(customers["columns"])["customer"]["expr"] == "customer_id"
    assert [(j["to"], j["relationship"]) for j in customers["joins"]] == [("customer_profiles", "one_to_one")]
    profiles = load(khive_project / layer / "customer_profiles.yaml")
    assert "grain" not in profiles and [(j["to"], j["relationship"]) for j in profiles["joins"]] == [
        ("customers", "one_to_one")]

    problems = skipped(result)
    assert set(problems) == {"semantic_model:orders/measure:p90_order_total", "metric:emea_orders",
                             "metric:orders_per_customer", "metric:revenue_growth", "metric:cumulative_revenue"}
    assert "region of customers, reached by a join on entity customer" in problems["metric:emea_orders"]
    assert "different sources (customers, orders)" in problems["metric:orders_per_customer"]
    assert "time offset (1 week)" in problems["metric:revenue_growth"]
    assert "cumulative metrics are not supported" in problems["metric:cumulative_revenue"]
    located = {w["element"]: w for w in result["warnings"]}["metric:cumulative_revenue"]
    assert (located["file"], located["line"]) == ("models/metrics.yml", 67)
    assert not [w for w in result["warnings"] if w["element"].startswith("field:")]  # sl.validate finds nothing


async def test_reimport_is_unchanged_and_keeps_a_persons_edits(dbt_runtime: Runtime, dbt_dir: Path,
                                                               khive_project: Path) -> None:
    first = await run(dbt_runtime, dbt_dir)
    again = await run(dbt_runtime, dbt_dir)
    assert again["unchanged"] == first["created"] and again["created"] == again["updated"] == []

    path = khive_project / "semantic-layer/wh/orders.yaml"
    text = path.read_text()
    text = text.replace("measures:\n", "measures:\n  # Finance asked for this one\n"
                        "  - name: big_orders\n    agg: count\n    filter: amount > 1000\n", 1)
    text = text.replace("  - name: status\n    type: string\n",
                        "  - name: status\n    type: string\n    values: [placed, completed]\n", 1)
    text = text.replace("One row per order placed in the shop. (default time dimension: ordered_at)",
                        "Orders as finance counts them.")
    path.write_text(text)

    unchanged = await run(dbt_runtime, dbt_dir)
    assert "semantic-layer/wh/orders.yaml" in unchanged["unchanged"] and path.read_text() == text

    orders_yml = dbt_dir / "models" / "orders.yml"
    orders_yml.write_text(ORDERS_YML.replace("        expr: amount\n      - name: order_count",
                                             "        expr: amount_usd\n      - name: order_count", 1)
                          + "      - name: max_order_total\n        agg: max\n        expr: amount\n")
    updated = await run(dbt_runtime, dbt_dir)
    assert updated["updated"] == ["semantic-layer/wh/orders.yaml"]
    after = path.read_text()
    assert "# Finance asked for this one" in after
    orders = load(path)
    assert orders["descriptions"]["user"] == "Orders as finance counts them."
    measures = by_name(orders["measures"])
    assert measures["big_orders"] == {"name": "big_orders", "agg": "count", "filter": "amount > 1000"}
    assert measures["max_order_total"]["agg"] == "max"
    assert measures["order_total"]["expr"] == "amount"  # the file's definition stands ...
    drift = [w["message"] for w in updated["warnings"] if w["element"] == "source:orders"]
    assert "drift: measure order_total: the file has sum(amount), dbt sum(amount_usd); kept the file's version " \
           "(overwrite=true takes dbt's)" in drift  # ... and the difference is reported, for the metrics' copies too
    assert sorted(item.split(":")[1] for item in drift) == [" measure food_order_total", " measure food_total",
                                                            " measure order_total"]
    assert by_name(orders["columns"])["status"]["values"] == ["placed", "completed"]

    replaced = await run(dbt_runtime, dbt_dir, overwrite=True)
    assert "semantic-layer/wh/orders.yaml" in replaced["updated"]
    orders = load(path)
    assert by_name(orders["measures"])["order_total"]["expr"] == "amount_usd" and "big_orders" not in by_name(
        orders["measures"])


async def test_dry_run_writes_nothing(dbt_runtime: Runtime, dbt_dir: Path, khive_project: Path) -> None:
    result = await run(dbt_runtime, dbt_dir, dry_run=True)
    assert len(result["created"]) == 3 and result["dryRun"] is True
    assert not (khive_project / "semantic-layer" / "wh").exists()


async def test_merges_into_a_source_that_reads_the_same_table(dbt_runtime: Runtime, dbt_dir: Path,
                                                               khive_project: Path) -> None:
    existing = khive_project / "semantic-layer/wh/main_customers.yaml"
    existing.parent.mkdir(parents=True)
    existing.write_text("# from sl.bootstrap\nname: main_customers\ntable: main.customers\ngrain: [customer_id]\n"
                        "columns:\n  - name: customer_id\n    type: number\n    descriptions:\n"
                        "      db: customer key\n")
    result = await run(dbt_runtime, dbt_dir)
    assert "semantic-layer/wh/main_customers.yaml" in result["updated"]
    assert not (khive_project / "semantic-layer/wh/customers.yaml").exists()
    merged = load(existing)
    assert merged["table"] == "main.customers" and merged["grain"] == ["customer_id"]
    assert {"customer", "region"} <= set(by_name(merged["columns"]))
    assert by_name(merged["measures"])["customer_count"]["agg"] == "count_distinct"
    orders = load(khive_project / "semantic-layer/wh/orders.yaml")
    assert "main_customers" in [join["to"] for join in orders["joins"]]
    assert any("merged into source main_customers" in w["message"] for w in result["warnings"])
    assert existing.read_text().startswith("# from sl.bootstrap\n")


async def test_unknown_connection_and_missing_path(dbt_runtime: Runtime, dbt_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(OpError) as missing_connection:
        import_dbt(ImportParams.model_validate({"path": str(dbt_dir), "connection": "nope"}),
                   Context(dbt_runtime, "operator:ann", CLI))
    assert missing_connection.value.code == "connection_not_found"
    with pytest.raises(OpError) as missing_path:
        await run(dbt_runtime, tmp_path / "nowhere")
    assert missing_path.value.code == "path_not_found"


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("semantic_models:\n  - name: orders\n    model: ref('orders')\n    measures:\n      - name: x\n"
     "        agg: sum\n       expr: y\n", 7, "invalid YAML"),
    ("semantic_model:\n  name: a\n  node_relation: {alias: a}\nsemantic_model:\n  name: b\n", 4, "duplicate key"),
    ("semantic_models:\n  - model: ref('orders')\n    entities: []\n", 2, "semantic model has no name"),
    ("semantic_models:\n  - name: orders\n    model: ref('orders')\n    measures:\n      - name: total\n", 5,
     "measure total of semantic model orders has no agg"),
    ("semantic_models:\n  - name: orders\n    model: orders_table\n", 3, "is not a ref()"),
], ids=["indentation", "duplicate-key", "no-name", "no-agg", "not-a-ref"])
async def test_broken_yaml_reports_file_line_and_fix(dbt_runtime: Runtime, tmp_path: Path, text: str, line: int,
                                                     problem: str) -> None:
    folder = tmp_path / "broken"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "semantic.yml").write_text(text)
    with pytest.raises(OpError) as caught:
        await run(dbt_runtime, folder)
    error = caught.value
    assert error.code == "invalid_dbt_project" and problem in error.message
    assert error.details["file"] == str(folder / "models" / "semantic.yml") and error.details["line"] == line
    assert error.details["fix"] and f"semantic.yml:{line}: " in error.message


async def test_semantic_manifest_json(dbt_runtime: Runtime, tmp_path: Path, khive_project: Path) -> None:
    manifest = {
        "semantic_models": [{
            "name": "bookings", "description": "Bookings.", "defaults": {"agg_time_dimension": "ds"},
            "node_relation": {"alias": "fct_bookings", "schema_name": "analytics", "database": "db",
                              "relation_name": '"db"."analytics"."fct_bookings"'},
            "entities": [{"name": "booking", "type": "primary", "expr": "booking_id"}],
            "dimensions": [{"name": "ds", "type": "time", "type_params": {"time_granularity": "day"}},
                           {"name": "is_instant", "type": "categorical"}],
            "measures": [{"name": "booking_value", "agg": "sum", "expr": None, "agg_params": None}]}],
        "metrics": [{"name": "instant_booking_value", "type": "simple", "description": None,
                     "type_params": {"measure": {"name": "booking_value", "filter": None, "alias": None}},
                     "filter": {"where_filters": [
                         {"where_sql_template": "{{ Dimension('booking__is_instant') }}"}]}}],
        "project_configuration": {}}
    path = tmp_path / "target" / "semantic_manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(manifest, indent=2))
    result = await run(dbt_runtime, path)
    assert result["created"] == ["semantic-layer/wh/bookings.yaml"] and result["metrics"] == 1
    bookings = load(khive_project / "semantic-layer/wh/bookings.yaml")
    assert bookings["table"] == "analytics.fct_bookings"
    assert by_name(bookings["measures"])["instant_booking_value"]["filter"] == "is_instant"
    path.write_text('{"semantic_models": [}')
    with pytest.raises(OpError) as caught:
        await run(dbt_runtime, path)
    assert caught.value.details["line"] == 1 and "invalid JSON" in caught.value.message


async def test_through_the_dispatcher(dbt_runtime: Runtime, dbt_dir: Path) -> None:
    text = f'sl.import_dbt(path="{dbt_dir}", connection="wh", dry_run=true)'
    envelope = await dispatch(parse(text), Context(dbt_runtime, "operator:ann", CLI, presentation="verbose"))
    (result,) = envelope["results"]
    assert result["ok"] and len(result["result"]["created"]) == 3
    wire = await dispatch(parse(text), Context(dbt_runtime, "agent:bot", MCP_STDIO))
    assert wire["results"][0]["error"]["code"] == "permission_denied"  # an operator verb, not on the MCP wire
    broken = dbt_dir / "models" / "broken.yml"
    broken.write_text("semantic_models:\n  - name: [\n")
    failed = await dispatch(parse(text), Context(dbt_runtime, "operator:ann", CLI))
    error = failed["results"][0]["error"]
    assert error["code"] == "invalid_dbt_project" and error["details"]["line"] == 3


@pytest.fixture
async def sl_runtime(khive_project: Path) -> AsyncIterator[Runtime]:
    if "sl" not in available_packs():
        pytest.skip("the sl pack is not registered")
    runtime = build_runtime(khive_project, KhiveConfig.model_validate(CONFIG), env={}, packs=["core", "scan", "sl"])
    yield runtime
    await runtime.aclose()


async def test_registered_in_the_sl_pack(sl_runtime: Runtime, dbt_dir: Path, khive_project: Path) -> None:
    envelope = await dispatch(parse(f'sl.import_dbt(path="{dbt_dir}", connection="wh")'),
                              Context(sl_runtime, "operator:ann", CLI, presentation="verbose"))
    (result,) = envelope["results"]
    assert result["ok"], result
    assert result["result"]["sources"] == 3 and (khive_project / "semantic-layer/wh/orders.yaml").is_file()
    assert sl_runtime.registry.resolve("sl.import_dbt").pack == "sl"
    listed = await dispatch(parse('sl.list(connection="wh")'),
                            Context(sl_runtime, "operator:ann", CLI, presentation="verbose"))
    shown = listed["results"][0]["result"]
    assert sorted(row["name"] for row in shown["sources"]) == ["customer_profiles", "customers", "orders"]
    assert shown["errors"] == {}  # the index parsed every imported file


# -- filters -----------------------------------------------------------------------------------------

SCOPE = FilterScope(
    model="bookings", own_entities=frozenset({"booking"}),
    entity_sql={"booking": "booking_id", "listing": "listing_id"},
    dimensions={"is_instant": ("is_instant", None), "ds": ("ds", "day"), "country": ("UPPER(country_code)", None)},
    time_dimension="ds", homes={("listing", "capacity"): "listings"})


@pytest.mark.parametrize(("template", "sql"), [
    ("{{ Dimension('booking__is_instant') }}", "is_instant"),
    ("{{Dimension('booking__is_instant')}} = true", "is_instant = true"),
    ("NOT {{ Dimension('is_instant') }}", "NOT is_instant"),
    ("{{ Dimension('booking__country') }} IN ('US', 'CA')", "(UPPER(country_code)) IN ('US', 'CA')"),
    ("{{ Entity('listing') }} IS NOT NULL", "listing_id IS NOT NULL"),
    ("{{ TimeDimension('metric_time', 'day') }} >= '2024-01-01'", "ds >= '2024-01-01'"),
    ("{{ TimeDimension('booking__ds__day') }} < '2024-02-01'", "ds < '2024-02-01'"),
    ("{{ TimeDimension('booking__ds').grain('day') }} = '2024-01-01'", "ds = '2024-01-01'"),
], ids=["bare", "no-spaces", "unprefixed", "expression", "entity", "metric-time", "grain-suffix", "grain-method"])
def test_filter_translates(template: str, sql: str) -> None:
    assert translate(template, SCOPE) == sql


@pytest.mark.parametrize(("template", "reason"), [
    ("{{ Dimension('listing__capacity') }} > 2", "capacity of listings, reached by a join on entity listing"),
    ("{{ Dimension('country__region', entity_path=['listing']) }} = 'NA'", "multi-hop join"),
    ("{{ Dimension('listing__user__home_state') }} = 'CA'", "multi-hop join"),
    ("{{ TimeDimension('metric_time', 'month') }} = '2024-01-01'", "at month grain"),
    ("{{ Metric('bookings', group_by=['listing']) }} > 2", "Metric(...) references are not supported"),
    ("{{ Dimension('booking__nope') }} = 1", "nope is not a dimension of semantic model bookings"),
    ("{% if true %}x{% endif %}", "Jinja statements"),
    ("{{ Dimension(name) }}", "is not a literal"),
], ids=["across-join", "entity-path", "two-hops", "coarser-grain", "metric", "unknown", "statement", "not-literal"])
def test_filter_refuses(template: str, reason: str) -> None:
    with pytest.raises(Untranslatable, match=r".*") as caught:
        translate(template, SCOPE)
    assert reason in str(caught.value)


# -- the real MetricFlow manifests (../shared/data/semantic) ------------------------------------------

MANIFESTS = ["metricflow_semantic_manifest_yamls/sg_02_single_join",
             "metricflow_semantic_manifest_yamls/multi_hop_join_manifest",
             "metricflow_semantic_manifest_yamls/derived_metrics_manifest",
             "metricflow_semantic_manifest_yamls/join_types_manifest",
             "metricflow_semantic_manifest_yamls/extended_date_manifest",
             "metricflow_semantic_manifest_yamls/simple_manifest",
             "dbt_metricflow_tutorial_sample"]


def declared(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Semantic models and metrics as the YAML declares them, read independently of the importer."""
    models: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    for path in sorted([*folder.rglob("*.yml"), *folder.rglob("*.yaml")]):
        for document in YAML(typ="safe").load_all(path.read_text()):
            if not isinstance(document, dict):
                continue
            models += [document["semantic_model"]] if "semantic_model" in document else []
            models += document.get("semantic_models") or []
            metrics += [document["metric"]] if "metric" in document else []
            metrics += document.get("metrics") or [] if isinstance(document.get("metrics"), list) else []
    return models, metrics


def importable(measure: dict[str, Any]) -> bool:
    """MetricFlow measures khive has an aggregation for (percentiles other than p50 are declined)."""
    return str(measure["agg"]).lower() != "percentile" or measure["agg_params"]["percentile"] == 0.5


@pytest.fixture(params=MANIFESTS, ids=[name.rsplit("/", 1)[-1] for name in MANIFESTS])
def manifest(request: pytest.FixtureRequest) -> Iterator[Path]:
    folder = SEMANTIC_DATA / request.param
    if not folder.is_dir():
        pytest.skip(f"no semantic data at {folder}")
    yield folder


@pytest.mark.data
def test_real_manifest_imports(manifest: Path, tmp_path: Path) -> None:
    files = FileStore(tmp_path / "proj")
    result = run_import(files, manifest, connection="wh", dialect="duckdb")
    models, metrics = declared(manifest)
    assert result["sources"] == len(models) == len(result["created"])
    assert result["measures"] == sum(importable(m) for model in models for m in model.get("measures") or [])
    skipped_metrics = {w["element"] for w in result["warnings"] if w["skipped"] and w["element"].startswith("metric:")}
    assert result["metrics"] + len(skipped_metrics) == len(metrics)
    assert not [w for w in result["warnings"] if w["element"].startswith("field:")], "sl.validate problems"

    primary = {e["name"]: model["name"] for model in models for e in model.get("entities") or []
               if e["type"].lower() in ("primary", "unique")}
    for model in models:
        source = Source.model_validate(load(tmp_path / "proj" / f"semantic-layer/wh/{model['name']}.yaml"))
        assert {m["name"] for m in model.get("measures") or [] if importable(m)} <= {m.name for m in source.measures}
        expected = {primary[e["name"]] for e in model.get("entities") or []
                    if e["type"].lower() == "foreign" and e["name"] in primary}
        assert expected <= {join.to for join in source.joins}, f"{model['name']} misses joins"
        assert source.grain == [e["name"] for e in model.get("entities") or [] if e["type"].lower() == "primary"]

    again = run_import(files, manifest, connection="wh", dialect="duckdb")
    assert again["unchanged"] == result["created"] and again["created"] == again["updated"] == []


@pytest.mark.data
def test_real_tutorial_project_details(tmp_path: Path) -> None:
    folder = SEMANTIC_DATA / "dbt_metricflow_tutorial_sample"
    if not folder.is_dir():
        pytest.skip(f"no semantic data at {folder}")
    files = FileStore(tmp_path / "proj")
    result = run_import(files, folder, connection="wh", schema="tutorial")
    transactions = Source.model_validate(load(tmp_path / "proj/semantic-layer/wh/transactions.yaml"))
    assert transactions.table == "tutorial.transactions" and transactions.grain == ["transaction"]
    assert [(j.to, j.relationship) for j in transactions.joins] == [("customers", "many_to_one")]
    revenue = transactions.measure("revenue_usd")
    assert revenue is not None and revenue.agg == "derived"
    assert revenue.expr == "transaction_amount - cancellations + alterations"
    assert set(skipped(result)) == {"metric:cancellations_mx", "metric:transaction_usd_na",
                                    "metric:cumulative_transactions", "metric:cumulative_transactions_in_last_7_days"}
    customers = Source.model_validate(load(tmp_path / "proj/semantic-layer/wh/customers.yaml"))
    assert [(j.to, j.on[0].from_, j.on[0].to) for j in customers.joins] == [("countries", "country", "country")]


@pytest.mark.data
def test_real_duplicate_key_manifest_fails_with_its_line(tmp_path: Path) -> None:
    folder = SEMANTIC_DATA / "metricflow_semantic_manifest_yamls" / "config_linter_manifest"
    if not folder.is_dir():
        pytest.skip(f"no semantic data at {folder}")
    with pytest.raises(OpError) as caught:
        run_import(FileStore(tmp_path / "proj"), folder, connection="wh")
    assert caught.value.details["line"] == 22 and "duplicate key" in caught.value.message
