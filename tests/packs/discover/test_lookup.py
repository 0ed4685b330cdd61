"""discover.lookup: aliases, neighbours, documents, usage, evidence, determinism; budgets on both verbs."""

from __future__ import annotations

from pathlib import Path

import pytest
from discover_project import Call, write_page
from ruamel.yaml import YAML

pytestmark = pytest.mark.anyio


async def test_table_lookup_has_neighbours_documents_and_evidence(scanned: Call, project: Path) -> None:
    write_page(project, "sales/orders-notes", "summary: orders notes", "We read main.orders daily.")
    result = await scanned('discover.lookup(id="main.orders")')
    entity = result["entity"]
    assert (entity["kind"], entity["id"], entity["docId"]) == ("table", "main.orders", "table:shop:main.orders")
    assert entity["provenance"]["path"] == "_schema/shop/shop.main.yaml" and len(entity["contentHash"]) == 64
    neighbours = result["neighbours"]
    assert {e["id"] for e in neighbours["contains"]} >= {"main.orders.status", "main.orders.customer_id"}
    fk = {(e["id"], e["direction"]) for e in neighbours["fk"]}
    assert ("main.customers", "out") in fk and ("main.order_items", "in") in fk
    assert [e["id"] for e in neighbours["sl_table"]] == ["orders"]
    assert {(d["id"], d["why"]) for d in result["documents"]} == {("orders", "covers"),
                                                                   ("sales/orders-notes", "mentions")}
    assert {item["path"] for item in result["evidence"]} >= {"_schema/shop/shop.main.yaml",
                                                              "wiki/global/sales/orders-notes.md"}


async def test_lookups_are_deterministic_and_bounded_by_depth(scanned: Call) -> None:
    first = await scanned('discover.lookup(id="main.orders", depth=2)')
    assert first == await scanned('discover.lookup(id="main.orders", depth=2)')
    distances = {e["distance"] for entries in first["neighbours"].values() for e in entries}
    assert distances == {1, 2}
    far = [e for entries in first["neighbours"].values() for e in entries if e["distance"] == 2]
    assert all(e["via"] for e in far)
    shallow = await scanned('discover.lookup(id="main.orders")')
    assert {e["distance"] for entries in shallow["neighbours"].values() for e in entries} == {1}
    error = (await scanned('discover.lookup(id="main.orders", depth=4)'))["error"]
    assert error["code"] == "invalid_args" and "depth" in str(error)


async def test_aliases_resolve(scanned: Call, project: Path) -> None:
    write_page(project, "sales/playbook", "summary: the playbook", "text")
    cases = {"table:shop:main.orders": "table:shop:main.orders", "shop.main.orders": "table:shop:main.orders",
             "main.orders.status": "column:shop:main.orders.status", "orders.status": "sl:orders.status",
             "sales/playbook": "wiki:sales/playbook", "invoices": "table:billing:main.invoices",
             "orders": "sl:orders"}
    for ident, doc_id in cases.items():
        assert (await scanned(f'discover.lookup(id="{ident}")'))["entity"]["docId"] == doc_id, ident
    missing = (await scanned('discover.lookup(id="main.ordrs")'))["error"]
    assert missing["code"] == "entity_not_found" and missing["details"]["closest"]


async def test_the_same_name_in_two_connections_needs_a_connection(scanned: Call, project: Path) -> None:
    import sqlite3

    db = sqlite3.connect(project / "billing.sqlite")
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    db.commit()
    db.close()
    assert "error" not in await scanned('scan.run(connection="billing")')
    error = (await scanned('discover.lookup(id="main.orders")'))["error"]
    assert error["code"] == "ambiguous_id" and "table:billing:main.orders" in error["details"]["candidates"]
    picked = await scanned('discover.lookup(id="main.orders", connection="billing")')
    assert picked["entity"]["docId"] == "table:billing:main.orders"


async def test_usage_comes_from_the_schema_shard(scanned: Call, project: Path) -> None:
    shard = project / "_schema" / "shop" / "shop.main.yaml"
    yaml = YAML()
    data = yaml.load(shard.read_text())
    data["tables"]["orders"]["usage"] = {"narrative": "Read by finance daily.", "frequencyTier": "high",
                                         "commonFilters": ["status"], "commonGroupBys": [], "commonJoins": []}
    with shard.open("w") as handle:
        yaml.dump(data, handle)
    usage = (await scanned('discover.lookup(id="main.orders")'))["usage"]
    assert usage["frequencyTier"] == "high" and usage["commonFilters"] == ["status"]
    assert usage["staleSince"] is None


async def test_pattern_pages_are_patterns_of_the_tables_they_name(scanned: Call, project: Path) -> None:
    write_page(project, "historic-sql/orders-by-customer", "summary: orders per customer\ntags: [pattern]",
               "Joins main.orders to main.customers on customer_id.")
    neighbours = (await scanned('discover.lookup(id="main.orders")'))["neighbours"]
    assert [(e["id"], e["direction"], e["kind"]) for e in neighbours["pattern_of"]] == [
        ("historic-sql/orders-by-customer", "in", "pattern")]
    page = await scanned('discover.lookup(id="historic-sql/orders-by-customer")')
    assert [e["id"] for e in page["neighbours"]["pattern_of"]] == ["main.customers", "main.orders"]
    refs = (await scanned('discover.search(query="orders per customer", kinds=["pattern"])'))["refs"]
    assert [ref["id"] for ref in refs] == ["historic-sql/orders-by-customer"]


async def test_lookup_budget_drops_sections_in_order_and_never_the_core(scanned: Call, project: Path) -> None:
    write_page(project, "sales/orders-notes", "summary: orders notes", "We read main.orders daily. " * 20)
    full = await scanned('discover.lookup(id="main.orders", depth=2, budget_tokens=100000)')
    assert full["budget"]["fits"] and full["budget"]["dropped"] == [] and full["budget"]["tokenMethod"] == "approximate"
    sections = full["budget"]["tokens"]["sections"]
    assert set(sections) == {"evidenceExcerpts", "related", "neighbours", "summaries"}
    core = full["budget"]["tokens"]["core"]
    seen = []
    for budget in range(full["budget"]["tokens"]["total"], core - 1, -40):
        result = await scanned(f'discover.lookup(id="main.orders", depth=2, budget_tokens={budget})')
        report = result["budget"]
        assert report["order"] == ["evidenceExcerpts", "related", "neighbours", "summaries"]
        assert report["dropped"] == report["order"][: len(report["dropped"])]  # a prefix of the order
        assert report["fits"] and report["tokens"]["total"] <= budget
        assert result["entity"]["docId"] == "table:shop:main.orders" and result["evidence"][0]["contentHash"]
        seen.append(tuple(report["dropped"]))
    assert len(set(seen)) >= 3
    if any("evidenceExcerpts" in d for d in seen):
        assert all("excerpt" not in item for item in result["evidence"])


async def test_core_over_budget_reports_fits_false(scanned: Call) -> None:
    result = await scanned('discover.lookup(id="main.orders", budget_tokens=10)')
    report = result["budget"]
    assert report["fits"] is False and report["kept"] == [] and report["tokens"]["total"] > 10
    assert result["entity"]["id"] == "main.orders"


async def test_search_budget_sheds_snippets_first(scanned: Call) -> None:
    full = await scanned('discover.search(query="orders status", budget_tokens=100000)')
    budget = full["budget"]["tokens"]["total"] - full["budget"]["tokens"]["sections"]["evidenceExcerpts"] // 2
    result = await scanned(f'discover.search(query="orders status", budget_tokens={budget})')
    assert result["budget"]["dropped"] == ["evidenceExcerpts"] and result["budget"]["fits"]
    assert all("snippet" not in ref and "summary" in ref for ref in result["refs"])
    assert [ref["id"] for ref in result["refs"]] == [ref["id"] for ref in full["refs"]]


async def test_lookup_text_format(scanned: Call) -> None:
    text = (await scanned('discover.lookup(id="main.orders", format="text")'))["text"]
    assert text.startswith("table main.orders") and "fk:" in text and "_schema/shop/shop.main.yaml" in text
