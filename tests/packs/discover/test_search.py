"""discover.search: the result contract, filters, freshness and uncovered terms, through the dispatcher."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from discover_project import Call, write_page

pytestmark = pytest.mark.anyio

ORDERS_PAGE = ("summary: How we count paid orders\ntags: [orders]", "Count orders whose status is delivered.")


async def test_one_ranked_list_across_kinds_with_the_ref_contract(scanned: Call, project: Path) -> None:
    write_page(project, "sales/orders-playbook", *ORDERS_PAGE)
    result = await scanned('discover.search(query="orders status", limit=50)')
    refs = result["refs"]
    assert {"wiki", "sl_source", "sl_dimension", "table", "column"} <= {ref["kind"] for ref in refs}
    assert all(0.0 <= ref["score"] <= 1.0 for ref in refs)
    assert [ref["score"] for ref in refs] == sorted((ref["score"] for ref in refs), reverse=True)
    assert all(ref["snippet"] is None or len(ref["snippet"]) <= 200 for ref in refs)
    table = next(ref for ref in refs if ref["id"] == "main.orders")
    assert table["kind"] == "table" and table["connectionId"] == "shop" and table["matchedOn"] == "name"
    assert table["tableRef"] == {"catalog": "shop", "db": "main", "name": "orders"}
    column = next(ref for ref in refs if ref["id"] == "main.orders.status")
    assert column["columnName"] == "status" and column["tableRef"]["name"] == "orders"
    assert next(ref for ref in refs if ref["id"] == "sales/orders-playbook")["summary"] == "How we count paid orders"


async def test_snippet_is_cut_around_the_match(scanned: Call, project: Path) -> None:
    filler = " ".join(f"word{i}" for i in range(300))
    write_page(project, "notes/long", "summary: a long page", f"{filler} the zebra clause matters {filler}")
    (ref,) = (await scanned('discover.search(query="zebra", kinds=["wiki"])'))["refs"]
    assert len(ref["snippet"]) <= 200 and "zebra" in ref["snippet"] and ref["matchedOn"] == "body"


async def test_kinds_filter_after_ranking_keeps_order_and_fills_the_limit(scanned: Call) -> None:
    everything = (await scanned('discover.search(query="orders customers products", limit=50)'))["refs"]
    tables = (await scanned('discover.search(query="orders customers products", kinds=["table", "column"], '
                            'limit=5)'))["refs"]
    assert [ref["docId"] for ref in tables] == [ref["docId"] for ref in everything
                                                 if ref["kind"] in ("table", "column")][:5]
    assert len(tables) == 5


async def test_connection_scopes_raw_and_semantic_layer_refs(scanned: Call, project: Path) -> None:
    write_page(project, "billing/invoices", "summary: invoices amount notes", "Invoices carry an amount.")
    refs = (await scanned('discover.search(query="invoices amount orders", connection="billing", limit=50)'))["refs"]
    assert {ref.get("connectionId") for ref in refs if ref["kind"] != "wiki"} == {"billing"}
    assert any(ref["kind"] == "wiki" for ref in refs)
    assert not any(ref["id"].startswith("main.orders") for ref in refs)


async def test_a_newer_scan_shows_on_the_next_call(scanned: Call, project: Path) -> None:
    assert (await scanned('discover.search(query="warehouses", kinds=["table"])'))["refs"] == []
    db = sqlite3.connect(project / "shop.sqlite")
    db.execute("CREATE TABLE warehouses (id INTEGER PRIMARY KEY, city TEXT)")
    db.commit()
    db.close()
    assert "error" not in await scanned('scan.run(connection="shop")')
    refs = (await scanned('discover.search(query="warehouses", kinds=["table"])'))["refs"]
    assert refs[0]["id"] == "main.warehouses" and "reached" not in refs[0]
    assert all(ref.get("reached") == "fill" for ref in refs[1:])  # the rest of a small schema, not matches


async def test_edited_sl_source_and_wiki_page_show_on_the_next_call(scanned: Call, project: Path) -> None:
    path = project / "semantic-layer" / "shop" / "orders.yaml"
    text = path.read_text()  # a person's description beside what bootstrap wrote (its guesses may be there)
    wanted = "\ndescriptions:\n  user: gizmo facts\n"
    text = (text.replace("\ndescriptions:\n", wanted, 1) if "\ndescriptions:\n" in text
            else text.replace("name: orders\n", "name: orders" + wanted, 1))
    path.write_text(text)
    write_page(project, "notes/gizmo", "summary: gizmo notes", "All about the gizmo.")
    refs = (await scanned('discover.search(query="gizmo")'))["refs"]
    assert {("sl_source", "orders"), ("wiki", "notes/gizmo")} <= {(ref["kind"], ref["id"]) for ref in refs}


async def test_uncovered_terms_are_reported(scanned: Call) -> None:
    result = await scanned('discover.search(query="orders by zyzzyva")')
    assert result["uncovered"] == ["zyzzyva"] and result["terms"] == ["orders", "zyzzyva"]


async def test_explain_shows_lanes_and_column_lift(scanned: Call) -> None:
    refs = (await scanned('discover.search(query="carrier", kinds=["table"], explain=true)'))["refs"]
    shipments = refs[0]
    assert shipments["id"] == "main.shipments"
    assert shipments["explain"]["lanes"]["catalog"]["rank"] == 1 and shipments["explain"]["base"] > 0
    assert shipments["explain"]["matchedTerms"] == ["carrier"]
    assert all("rank" in lane and "raw" in lane for lane in shipments["explain"]["lanes"].values())


async def test_the_table_joining_two_named_tables_ranks_with_them(scanned: Call) -> None:
    refs = (await scanned('discover.search(query="products customers orders quantity", kinds=["table"])'))["refs"]
    assert "main.order_items" in [ref["id"] for ref in refs[:4]]


async def test_text_format_renders_the_same_refs(scanned: Call) -> None:
    text = (await scanned('discover.search(query="carrier", format="text", limit=3)'))["text"]
    assert "main.shipments" in text and text.startswith("3 refs for 'carrier'")


async def test_bad_arguments_name_the_field(scanned: Call) -> None:
    error = (await scanned('discover.search(query="orders", limit=51)'))["error"]
    assert error["code"] == "invalid_args" and "limit" in str(error)
    error = (await scanned('discover.search(query="orders", kinds=["tables"])'))["error"]
    assert error["code"] == "invalid_args" and "kinds" in str(error)


async def test_a_table_found_through_its_columns_says_column(scanned: Call) -> None:
    (table,) = (await scanned('discover.search(query="carrier", kinds=["table"], limit=1)'))["refs"]
    assert table["id"] == "main.shipments" and table["matchedOn"] == "column"
    assert table["snippet"].startswith("carrier")  # the column that matched comes first
    (named,) = (await scanned('discover.search(query="shipments", kinds=["table"], limit=1)'))["refs"]
    assert named["id"] == "main.shipments" and named["matchedOn"] == "name"


async def test_a_count_measure_without_an_expression_shows_what_it_computes(scanned: Call, project: Path) -> None:
    refs = (await scanned('discover.search(query="orders count", kinds=["sl_measure"])'))["refs"]
    bootstrapped = next(ref for ref in refs if ref["id"] == "orders.orders_count")
    assert bootstrapped["snippet"] == "count(*)"
    (project / "semantic-layer" / "shop" / "tally.yaml").write_text(
        "name: tally\ntable: main.orders\ncolumns:\n  - name: status\nmeasures:\n"
        "  - name: paid_tally\n    expr: count(*)\n    filter: status = 'delivered'\n"
        "  - name: spend_tally\n    expr: sum(total)\n")
    refs = (await scanned('discover.search(query="tally", kinds=["sl_measure"])'))["refs"]
    assert {ref["id"]: ref["snippet"] for ref in refs} == {
        "tally.paid_tally": "count(*) filter (where status = 'delivered')", "tally.spend_tally": "sum(total)"}


async def test_a_measure_the_question_names_ranks_with_the_tables_it_needs(scanned: Call) -> None:
    refs = (await scanned('discover.search(query="total quantity per product", limit=12)'))["refs"]
    ids = [ref["id"] for ref in refs]
    # the measure spelled out by the question, among the two tables it is computed from
    assert ids.index("order_items.total_quantity") < ids.index("main.products")
    assert next(ref for ref in refs if ref["id"] == "order_items.total_quantity")["kind"] == "sl_measure"
