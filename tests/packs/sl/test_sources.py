"""Source files through the verbs: round-trip edits, validation with lines, read, list, search, index, conflicts."""

from __future__ import annotations

import difflib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime

pytestmark = pytest.mark.anyio

CUSTOMERS = """\
name: customers
table: main.customers
grain: [id]
columns:
  - name: id
    type: number
  - name: name
    type: string
"""

ORDERS = """\
# Orders: one row per order.
name: orders
descriptions:
  db: orders table
  user: Paid and unpaid orders  # the team's definition
table: main.orders
grain:
  - id
columns:
  - name: id
    type: number
  - name: customer_id  # references customers
    type: number
  - name: status
    type: string
    values: [delivered, refunded]
measures:
  # how many orders
  - name: order_count
    agg: count
  - name: revenue
    agg: sum
    expr: total
    filter: status <> 'refunded'
  - name: revenue_per_order
    agg: derived
    expr: revenue / order_count
joins:
  - to: customers
    on:
      - from: customer_id
        to: id
segments:
  - name: refunded
    filter: status = 'refunded'
usage:
  narrative: Finance reviews churn from these orders every month.
  frequencyTier: hot
  commonFilters: [status]
"""


def op(verb: str, **args: Any) -> str:
    """DSL text for one op (JSON values are valid DSL values)."""
    return f"{verb}({', '.join(f'{key}={json.dumps(value)}' for key, value in args.items())})"


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if marker in line)


async def write_both(call: Any) -> None:
    for text in (CUSTOMERS, ORDERS):
        result = await call(op("sl.write", connection="shop", yaml=text))
        assert result["created"] and result["changed"], result


async def test_write_yaml_then_edit_one_field_keeps_comments(call: Any, project: Path) -> None:
    await write_both(call)
    path = project / "semantic-layer/shop/orders.yaml"
    assert path.read_text() == ORDERS
    source = (await call(op("sl.read", name="orders", format="json")))["source"]
    source["descriptions"]["user"] = "All orders, paid or not"
    result = await call(op("sl.write", connection="shop", source=source))
    assert result["changed"] and not result["created"]
    after = path.read_text()
    changed = [line for line in difflib.unified_diff(ORDERS.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed[0] == "-  user: Paid and unpaid orders  # the team's definition"
    assert changed[1].startswith("+  user: All orders, paid or not") and changed[1].endswith("# the team's definition")
    assert len(changed) == 2  # nothing else moved

    patch = {"name": "orders", "columns": [{"name": "status", "descriptions": {"user": "order lifecycle"}}]}
    await call(op("sl.write", connection="shop", source=patch, merge=True))
    patched = path.read_text()
    for comment in ("# Orders: one row per order.", "# references customers", "# how many orders"):
        assert comment in patched
    read = await call(op("sl.read", name="orders", format="json"))
    assert [c["name"] for c in read["source"]["columns"]] == ["id", "customer_id", "status"]
    assert read["source"]["columns"][2]["descriptions"] == {"user": "order lifecycle"}
    assert read["source"]["measures"][2]["expr"] == "revenue / order_count"
    unchanged = await call(op("sl.write", connection="shop", source=patch, merge=True))
    assert unchanged["changed"] is False


async def test_replace_drops_what_the_object_leaves_out(call: Any, project: Path) -> None:
    await write_both(call)
    source = (await call(op("sl.read", name="orders", format="json")))["source"]
    del source["segments"]
    source["measures"] = source["measures"][:1]
    await call(op("sl.write", connection="shop", source=source))
    read = (await call(op("sl.read", name="orders", format="json")))["source"]
    assert "segments" not in read and [m["name"] for m in read["measures"]] == ["order_count"]
    assert "# Orders: one row per order." in (project / "semantic-layer/shop/orders.yaml").read_text()


BAD_REFERENCES = """\
name: orders
table: main.orders
columns:
  - name: id
  - name: customer_id
  - name: status
measures:
  - name: order_count
    agg: count
  - name: revenue
    agg: sum
    expr: total
    filter: status <> 'refunded' AND
  - name: revenue_per_order
    agg: derived
    expr: revenue / orders_count
joins:
  - to: customer
    on:
      - from: customer_id
        to: id
  - to: customers
    on:
      - from: client_id
        to: id
      - from: customer_id
        to: customer_key
"""


async def test_reference_problems_point_at_their_lines(call: Any) -> None:
    await call(op("sl.write", connection="shop", yaml=CUSTOMERS))
    bad = BAD_REFERENCES
    result = await call(op("sl.validate", connection="shop", yaml=bad))
    assert result["valid"] is False and result["path"] == "semantic-layer/shop/orders.yaml"
    found = {(p["field"], p["line"]) for p in result["problems"]}
    assert found == {("joins[0].to", line_of(bad, "- to: customer")),
                     ("joins[1].on[0].from", line_of(bad, "- from: client_id")),
                     ("joins[1].on[1].to", line_of(bad, "to: customer_key")),
                     ("measures[1].filter", line_of(bad, "AND")),
                     ("measures[2].expr", line_of(bad, "orders_count"))}
    by_field = {p["field"]: p for p in result["problems"]}
    assert "customers" in by_field["joins[0].to"]["fix"]  # the close match is offered
    assert "order_count" in by_field["measures[2].expr"]["fix"]
    assert by_field["measures[1].filter"]["file"] == "semantic-layer/shop/orders.yaml"
    assert [s["name"] for s in (await call(op("sl.list")))["sources"]] == ["customers"]  # nothing written


async def test_model_problems_have_lines_and_fixes(call: Any) -> None:
    bad_grain = CUSTOMERS.replace("grain: [id]", "grain:\n  - id\n  - tenant_id")
    result = await call(op("sl.validate", connection="shop", yaml=bad_grain))
    (problem,) = result["problems"]
    assert problem["field"] == "grain[1]" and problem["line"] == line_of(bad_grain, "tenant_id")
    assert "declare" in problem["fix"]

    typo = CUSTOMERS.replace("    type: string", "    typ: string")
    (problem,) = (await call(op("sl.validate", connection="shop", yaml=typo)))["problems"]
    assert problem["line"] == line_of(typo, "typ: string") and "type" in problem["fix"]

    broken = CUSTOMERS.replace("grain: [id]", "grain: [id")
    (problem,) = (await call(op("sl.validate", connection="shop", yaml=broken)))["problems"]
    assert problem["message"].startswith("invalid YAML") and problem["line"] >= 3

    segment = CUSTOMERS + "segments:\n  - name: big\n    filter: id >> > 3)\n"
    (problem,) = (await call(op("sl.validate", connection="shop", yaml=segment)))["problems"]
    assert problem["field"] == "segments[0].filter" and problem["line"] == line_of(segment, "id >>")


async def test_write_refuses_invalid_sources(call: Any, project: Path) -> None:
    result = await call(op("sl.write", connection="shop", yaml=ORDERS))  # customers does not exist yet
    assert result["error"]["code"] == "invalid_source"
    assert result["error"]["message"].startswith(f"semantic-layer/shop/orders.yaml:{line_of(ORDERS, '- to: ')}:")
    assert not (project / "semantic-layer/shop/orders.yaml").exists()
    renamed = CUSTOMERS.replace("name: customers", "name: customers\nname2: x")
    assert (await call(op("sl.write", connection="shop", yaml=renamed)))["error"]["code"] == "invalid_source"
    unnamed = await call(op("sl.write", connection="shop", source={"table": "main.x"}))
    assert unnamed["error"]["code"] == "invalid_source"
    unknown = await call(op("sl.write", connection="nowhere", yaml=CUSTOMERS))
    assert unknown["error"]["code"] == "connection_not_found"
    await call(op("sl.write", connection="shop", yaml=CUSTOMERS))
    twin = await call(op("sl.write", connection="spare", yaml=CUSTOMERS))
    assert "already used by connection 'shop'" in twin["error"]["message"]


async def test_read_yaml_and_json(call: Any) -> None:
    await write_both(call)
    as_yaml = await call(op("sl.read", name="orders"))
    assert as_yaml["yaml"] == ORDERS and as_yaml["connectionId"] == "shop" and as_yaml["problems"] == []
    assert as_yaml["description"] == "Paid and unpaid orders"  # user wins over db
    as_json = await call(op("sl.read", name="orders", connection="shop", format="json"))
    # the keys the file sets, defaults not filled in: writing it back changes nothing
    assert as_json["source"]["joins"] == [{"to": "customers", "on": [{"from": "customer_id", "to": "id"}]}]
    assert as_json["source"]["usage"]["frequencyTier"] == "hot"
    missing = await call(op("sl.read", name="order"))
    assert missing["error"]["code"] == "source_not_found" and "orders" in missing["error"]["message"]


async def test_search_marks_the_match_and_finds_usage_text(call: Any) -> None:
    await write_both(call)
    result = await call(op("sl.search", query="churn"))
    (hit,) = result["hits"]
    assert hit["name"] == "orders" and hit["connectionId"] == "shop" and hit["table"] == "main.orders"
    assert "**churn**" in hit["snippet"] and 0 < hit["score"] <= 1
    assert hit["frequencyTier"] == "hot" and hit["description"] == "Paid and unpaid orders"
    assert (hit["columnCount"], hit["measureCount"], hit["joinCount"]) == (3, 3, 1)
    revenue = (await call(op("sl.search", query="revenue", connection="shop")))["hits"]
    assert revenue[0]["name"] == "orders" and "revenue" in revenue[0]["matches"]
    assert (await call(op("sl.search", query="churn", connection="spare")))["hits"] == []


async def test_list_filters_and_reports_broken_files(call: Any, project: Path) -> None:
    await write_both(call)
    (project / "semantic-layer/shop/broken.yaml").write_text("name: broken\ncolumns: [\n")
    listed = await call(op("sl.list", connection="shop"))
    assert [s["name"] for s in listed["sources"]] == ["customers", "orders"]
    assert "semantic-layer/shop/broken.yaml" in listed["errors"]
    assert [s["name"] for s in (await call(op("sl.list", query="CUST")))["sources"]] == ["customers"]
    assert (await call(op("sl.list", query="team's definition")))["sources"] == []
    assert [s["name"] for s in (await call(op("sl.list", query="unpaid")))["sources"]] == ["orders"]


async def test_index_documents_and_edges(scanned: Any, runtime: Runtime) -> None:
    await write_both(scanned)
    index = runtime.index
    assert index.get("sl:orders")["kind"] == "sl_source"  # type: ignore[index]
    assert index.get("sl:orders.revenue")["kind"] == "sl_measure"  # type: ignore[index]
    assert index.get("sl:orders.status")["kind"] == "sl_dimension"  # type: ignore[index]
    edges = {(e["relation"], e["id"]) for e in index.edges("sl:orders")}
    assert ("join", "sl:customers") in edges
    assert ("contains", "sl:orders.revenue") in edges and ("contains", "sl:orders.status") in edges
    assert ("sl_table", "table:shop:main.orders") in edges
    assert index.get("table:shop:main.orders") is not None
    assert {"sl:orders"} <= {e["id"] for e in index.edges("sl:customers", direction="in")}
    assert index.item_errors() == {}


async def test_two_writes_of_one_source_in_a_batch_conflict(runtime: Runtime) -> None:
    text = "[" + op("sl.write", connection="shop", yaml=CUSTOMERS) + ", " + \
        op("sl.write", connection="shop", source={"name": "customers", "table": "main.customers"}) + "]"
    envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
    first, second = envelope["results"]
    assert first["ok"] or second["ok"]
    loser = second if first["ok"] else first
    assert loser["error"]["code"] == "write_conflict"
    assert loser["error"]["details"]["writeKey"] == "sl:shop/customers"


SEED_MEASURES = """\
name: customers
table: main.customers
grain: [id]
columns:
  - name: id
    type: number
  - name: segment
    type: string
measures:
  - name: customer_count
    expr: count(*)
  - name: segments
    expr: COUNT(DISTINCT segment)
  - name: id_total
    expr: sum(id)
"""


async def test_a_measure_written_as_one_aggregate_call_is_read_as_agg_and_expr(call: Any, project: Path) -> None:
    assert (await call(op("sl.validate", connection="shop", yaml=SEED_MEASURES)))["problems"] == []
    await call(op("sl.write", connection="shop", yaml=SEED_MEASURES))
    assert (project / "semantic-layer/shop/customers.yaml").read_text() == SEED_MEASURES  # the author's form stays
    result = await call(op("sl.query", connection="shop", measures=["customers.customer_count", "customers.segments",
                                                                      "customers.id_total"]))
    db = sqlite3.connect(project / "shop.sqlite")
    expected = db.execute("SELECT count(*), count(DISTINCT segment), sum(id) FROM customers").fetchone()
    db.close()
    assert [list(row) for row in result["rows"]] == [list(expected)], result


async def test_a_nested_or_missing_aggregate_is_refused_with_its_fix(call: Any) -> None:
    nested = SEED_MEASURES.replace("    expr: sum(id)", "    agg: sum\n    expr: count(*)")
    (problem,) = (await call(op("sl.validate", connection="shop", yaml=nested)))["problems"]
    assert problem["field"] == "measures[2]" and problem["line"] == line_of(nested, "- name: id_total")
    assert "nests two aggregates" in problem["message"] and problem["fix"].startswith("drop agg:")
    bare = SEED_MEASURES.replace("    expr: sum(id)", "    expr: id * 2")
    (problem,) = (await call(op("sl.validate", connection="shop", yaml=bare)))["problems"]
    assert "not one aggregate call" in problem["message"] and "count(*) or sum(amount)" in problem["fix"]
