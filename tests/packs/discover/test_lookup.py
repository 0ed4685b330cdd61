"""discover.lookup: aliases, neighbours, documents, usage, evidence, determinism; budgets on both verbs."""

from __future__ import annotations

import sqlite3
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
    assert "confidence 1.00: in the latest scan" in text


async def test_a_project_file_path_names_its_document(scanned: Call, project: Path) -> None:
    write_page(project, "sales/playbook", "summary: the playbook", "text")
    write_page(project, "sales/playbook", "summary: my playbook", "mine", scope="ann")
    cases = {"wiki/global/sales/playbook.md": "wiki:sales/playbook",
             "./wiki/users/ann/sales/playbook.md": "wiki:@ann/sales/playbook",
             "semantic-layer/shop/orders.yaml": "sl:orders",
             "semantic-layer/shop/orders.yaml#orders_count": "sl:orders.orders_count",
             "_schema/shop/shop.main.yaml#orders": "table:shop:main.orders",
             "_schema/shop/shop.main.yaml#orders.status": "column:shop:main.orders.status",
             "_schema/billing/billing.main.yaml": "table:billing:main.invoices"}  # a shard of one table
    for ident, doc_id in cases.items():
        entity = (await scanned(f'discover.lookup(id="{ident}")'))["entity"]
        assert (entity["docId"], entity["resolvedBy"]) == (doc_id, "path"), ident
        assert entity["path"] == ident.partition("#")[0].removeprefix("./") == entity["provenance"]["path"]
    shard = (await scanned('discover.lookup(id="_schema/shop/shop.main.yaml")'))["error"]
    assert shard["code"] == "ambiguous_id" and "_schema/shop/shop.main.yaml#orders" in shard["details"]["candidates"]
    entry = (await scanned('discover.lookup(id="_schema/shop/shop.main.yaml#ordres")'))["error"]
    assert entry["code"] == "entity_not_found" and "orders" in entry["details"]["entries"]
    missing = (await scanned('discover.lookup(id="wiki/global/nothing-here.md")'))["error"]
    assert missing["code"] == "entity_not_found" and "project-relative" in missing["message"]
    other = (await scanned('discover.lookup(id="wiki/users/bob/sales/playbook.md")'))["error"]
    assert other["code"] == "entity_not_found"  # another user's tier is not the caller's to read


async def test_declared_aliases_resolve_case_insensitively(scanned: Call, project: Path) -> None:
    written = await scanned('wiki.write(key="sales/gmv", summary="gross merchandise value", aliases=["GMV"])')
    assert "error" not in written
    source = project / "semantic-layer" / "shop" / "orders.yaml"
    source.write_text(source.read_text().replace("name: orders\n", "name: orders\naliases: [purchases]\n", 1))
    shard = project / "_schema" / "shop" / "shop.main.yaml"
    yaml = YAML()
    data = yaml.load(shard.read_text())
    data["tables"]["shipments"]["aliases"] = ["parcels", "deliveries"]
    with shard.open("w") as handle:
        yaml.dump(data, handle)
    for alias, doc_id in {"gmv": "wiki:sales/gmv", "Purchases": "sl:orders", "parcels": "table:shop:main.shipments",
                          "DELIVERIES": "table:shop:main.shipments"}.items():
        entity = (await scanned(f'discover.lookup(id="{alias}")'))["entity"]
        assert (entity["docId"], entity["resolvedBy"]) == (doc_id, "alias"), alias
        assert alias.lower() in [a.lower() for a in entity["aliases"]]
    assert "error" not in await scanned('wiki.write(key="sales/parcel-rules", summary="x", aliases=["parcels"])')
    both = (await scanned('discover.lookup(id="parcels")'))["error"]
    assert both["code"] == "ambiguous_id"
    assert set(both["details"]["candidates"]) == {"table:shop:main.shipments", "wiki:sales/parcel-rules"}


async def test_entity_and_neighbours_carry_a_confidence(scanned: Call, project: Path) -> None:
    db = sqlite3.connect(project / "shop.sqlite")
    db.execute("CREATE TABLE reviews (id INTEGER PRIMARY KEY, customer_id INTEGER, stars INTEGER)")
    db.executemany("INSERT INTO reviews VALUES (?, ?, ?)", [(i, i % 40, 3) for i in range(60)])
    db.commit()
    db.close()
    assert "error" not in await scanned('scan.run(connection="shop")')
    entity = await scanned('scan.entity(connection="shop", table="main.reviews")')  # the run keeps the confidence
    (inferred,) = [r for r in entity["inferredRelationships"]["out"] if r["toTable"] == "customers"]
    result = await scanned('discover.lookup(id="main.reviews", depth=2)')
    assert (result["entity"]["confidence"], result["entity"]["confidenceWhy"]) == (1.0, "in the latest scan")
    fk = {e["id"]: e for e in result["neighbours"]["fk"]}
    assert fk["main.customers"]["confidence"] == round(inferred["confidence"], 4) < 1.0
    columns = [e for e in result["neighbours"]["contains"] if e["distance"] == 1]
    assert columns and all(e["confidence"] == 1.0 for e in columns)
    far = [e for entries in result["neighbours"].values() for e in entries if e["via"] == "main.customers"]
    assert far and all(e["confidence"] == fk["main.customers"]["confidence"] for e in far)  # x 1.0 declared edges

    write_page(project, "old-rules", "summary: old rules\nstale_since: 2026-01-05", "text")
    write_page(project, "new-rules", "summary: new rules\nrelations: {supersedes: [old-rules]}", "text")
    write_page(project, "stale-rules", "summary: stale rules\nstale_since: 2026-01-05", "text")
    entity = (await scanned('discover.lookup(id="old-rules")'))["entity"]
    assert (entity["confidence"], entity["confidenceWhy"]) == (0.3, "superseded by new-rules")
    assert (await scanned('discover.lookup(id="stale-rules")'))["entity"]["confidence"] == 0.5
    ghost = project / "semantic-layer" / "shop" / "ghosts.yaml"
    ghost.write_text("name: ghosts\ntable: main.ghosts\ncolumns:\n  - name: id\nmeasures:\n"
                     "  - name: ghost_count\n    agg: count\n")
    for ident in ("ghosts", "ghosts.ghost_count"):
        entity = (await scanned(f'discover.lookup(id="{ident}")'))["entity"]
        assert entity["confidence"] == 0.5 and "does not hold" in entity["confidenceWhy"], ident
    assert (await scanned('discover.lookup(id="orders.orders_count")'))["entity"]["confidence"] == 1.0
    write_page(project, "points-nowhere", "summary: x\nrefs: [no-such-page]", "text")
    page = await scanned('discover.lookup(id="points-nowhere")')
    assert [(e["id"], e["exists"], e["confidence"]) for e in page["neighbours"]["refs"]] == [
        ("no-such-page", False, 0.0)]
