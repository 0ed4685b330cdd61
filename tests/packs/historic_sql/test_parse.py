"""Batch parse: tables, columns by clause and joins, resolved against a scan catalog read from files."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlglot
from ruamel.yaml import YAML
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from packs.historic_sql.analyze import analyze
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.parse import ParseCache, parse_batch
from packs.historic_sql.parsed import ParsedTemplate, frozen_until_exit, paused_gc

SHOP = {
    "public": {"customers": ["customer_id", "name", "segment", "created_at"],
               "orders": ["order_id", "customer_id", "status", "total", "created_at"],
               "order_items": ["order_id", "product_id", "quantity"],
               "products": ["product_id", "title", "price"]},
    "sales": {"orders": ["order_id", "region", "amount"]},
    "archive": {"events": ["event_id", "kind", "customer_id"]},
    "x1": {"dup": ["id"]},
    "x2": {"dup": ["id"]},
}
SEARCH_PATH = ("public",)


def write_shards(project: Path, connection: str, schemas: dict[str, dict[str, list[str]]],
                 catalog: str | None = "shop", dropped: tuple[str, ...] = ()) -> None:
    """Shards in the scan's shape: ``_schema/<connection>/<catalog.schema>.yaml``."""
    folder = project / "_schema" / connection
    folder.mkdir(parents=True, exist_ok=True)
    yaml = YAML()
    for schema, tables in schemas.items():
        doc: dict[str, Any] = {"connection": connection, "catalog": catalog, "schema": schema, "tables": {}}
        for name, columns in tables.items():
            entry: dict[str, Any] = {"kind": "table", "syncId": "s1",
                                     "columns": [{"name": c, "type": "string"} for c in columns]}
            if name in dropped:
                entry = {"description": "kept by people", "droppedInSync": "s2"}
            doc["tables"][name] = entry
        with open(folder / f"{catalog}.{schema}.yaml" if catalog else folder / f"{schema}.yaml", "w") as handle:
            yaml.dump(doc, handle)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    write_shards(tmp_path, "shop", SHOP)
    return Catalog.from_project(tmp_path, "shop")


def run(sql: str, catalog: Catalog, search_path: tuple[str, ...] = SEARCH_PATH) -> ParsedTemplate:
    return analyze("t1", sql, "postgres", catalog, search_path)


def uses(parsed: ParsedTemplate) -> set[tuple[str, str, str]]:
    return set(parsed.columns)


def test_unqualified_columns_resolve_through_the_scan_catalog(catalog: Catalog) -> None:
    parsed = run("SELECT name, total FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
                 "WHERE status = 'paid' AND segment = 'smb' GROUP BY name, total ORDER BY total", catalog)
    assert parsed.error is None
    assert parsed.tables == ("public.customers", "public.orders")
    assert uses(parsed) == {
        ("public.customers", "select", "name"), ("public.orders", "select", "total"),
        ("public.orders", "where", "status"), ("public.customers", "where", "segment"),
        ("public.orders", "join", "customer_id"), ("public.customers", "join", "customer_id"),
        ("public.customers", "groupBy", "name"), ("public.orders", "groupBy", "total"),
        ("public.orders", "orderBy", "total")}
    assert parsed.joins == (("public.customers", "customer_id", "public.orders", "customer_id"),)


def test_aliases_and_output_aliases(catalog: Catalog) -> None:
    parsed = run("SELECT o.status AS state, COUNT(*) AS n FROM orders AS o WHERE o.total > 5 "
                 "GROUP BY state HAVING COUNT(o.order_id) > 1 ORDER BY n DESC", catalog)
    # state and n are output aliases: grouping by state groups by the status inside it; n holds no column
    assert uses(parsed) == {("public.orders", "select", "status"), ("public.orders", "where", "total"),
                            ("public.orders", "having", "order_id"), ("public.orders", "groupBy", "status")}


def test_group_by_position_names_the_columns_inside_the_projection(catalog: Catalog) -> None:
    parsed = run("SELECT date_trunc('month', o.created_at) AS month, c.segment, SUM(o.total) FROM orders o "
                 "JOIN customers c ON c.customer_id = o.customer_id GROUP BY 1, 2 ORDER BY month, 3 DESC", catalog)
    grouped = {(table, column) for table, clause, column in uses(parsed) if clause == "groupBy"}
    ordered = {(table, column) for table, clause, column in uses(parsed) if clause == "orderBy"}
    assert grouped == {("public.orders", "created_at"), ("public.customers", "segment")}
    assert ordered == {("public.orders", "created_at"), ("public.orders", "total")}
    # a position past the select list, or one over a subquery, names no column of this scope
    odd = run("SELECT (SELECT max(total) FROM orders), status FROM orders GROUP BY 1, 2, 7", catalog)
    assert {(t, c) for t, clause, c in uses(odd) if clause == "groupBy"} == {("public.orders", "status")}


def test_using_join_counts_on_both_sides(catalog: Catalog) -> None:
    parsed = run("SELECT customer_id, name, total FROM customers JOIN orders USING (customer_id)", catalog)
    assert parsed.joins == (("public.customers", "customer_id", "public.orders", "customer_id"),)
    assert {("public.customers", "join", "customer_id"), ("public.orders", "join", "customer_id"),
            ("public.customers", "select", "customer_id")} <= uses(parsed)  # merged name: the left side


def test_cte_names_are_not_tables_and_joins_follow_the_cte(catalog: Catalog) -> None:
    parsed = run("WITH recent AS (SELECT customer_id, total AS spend FROM orders WHERE created_at > '2024-01-01') "
                 "SELECT c.name, r.spend FROM customers c JOIN recent r ON r.customer_id = c.customer_id", catalog)
    assert parsed.tables == ("public.customers", "public.orders")
    assert "recent" not in parsed.unknown_tables
    assert parsed.joins == (("public.customers", "customer_id", "public.orders", "customer_id"),)
    assert ("public.orders", "select", "total") in uses(parsed)


def test_correlated_subquery_and_derived_tables(catalog: Catalog) -> None:
    parsed = run("SELECT name FROM customers WHERE EXISTS (SELECT 1 FROM order_items i JOIN orders o "
                 "ON o.order_id = i.order_id WHERE o.customer_id = customers.customer_id AND quantity > 2)", catalog)
    assert set(parsed.joins) == {("public.customers", "customer_id", "public.orders", "customer_id"),
                                 ("public.order_items", "order_id", "public.orders", "order_id")}
    assert ("public.order_items", "where", "quantity") in uses(parsed)
    derived = run("SELECT t.total FROM (SELECT total, status FROM orders) t WHERE t.status = 'x'", catalog)
    assert uses(derived) == {("public.orders", "select", "total"), ("public.orders", "select", "status"),
                             ("public.orders", "where", "status")}


@pytest.mark.parametrize(("sql", "tables", "unknown"), [
    pytest.param("SELECT amount FROM sales.orders", ("sales.orders",), (), id="schema-qualified"),
    pytest.param("SELECT status FROM orders", ("public.orders",), (), id="search-path-wins-ambiguity"),
    pytest.param("SELECT kind FROM events", ("archive.events",), (), id="unique-off-path"),
    pytest.param("SELECT id FROM dup", (), ("dup",), id="ambiguous-off-path-never-guessed"),
    pytest.param("SELECT a FROM nowhere", (), ("nowhere",), id="unknown-table"),
    pytest.param("SELECT status FROM SHOP.PUBLIC.ORDERS", ("public.orders",), (), id="case-insensitive"),
    pytest.param("SELECT status FROM other_db.public.orders", (), ("other_db.public.orders",), id="other-database"),
])
def test_table_resolution(catalog: Catalog, sql: str, tables: tuple[str, ...], unknown: tuple[str, ...]) -> None:
    parsed = run(sql, catalog)
    assert (parsed.tables, parsed.unknown_tables) == (tables, unknown)


def test_names_the_catalog_lacks_are_dropped_not_guessed(catalog: Catalog) -> None:
    parsed = run("SELECT amount, status FROM orders", catalog)  # public.orders has no amount
    assert parsed.tables == ("public.orders",) and uses(parsed) == {("public.orders", "select", "status")}
    ambiguous = run("SELECT customer_id FROM customers, orders", catalog)
    assert ambiguous.columns == ()


def test_search_path_order_decides_between_schemas(catalog: Catalog) -> None:
    assert run("SELECT region FROM orders", catalog, ("sales", "public")).tables == ("sales.orders",)
    assert run("SELECT region FROM orders", catalog, ()).tables == ()


def test_never_guess_across_databases() -> None:
    rows = [("db1", "public", "orders", ["id"]), ("db2", "public", "orders", ["id"])]
    assert Catalog(rows).resolve("orders", search_path=["public"]) is None
    chosen = Catalog(rows, default_catalog="db2").resolve("orders", search_path=["public"])
    assert chosen is not None and chosen.key == "db2.public.orders"


def test_dml_touches_its_target(catalog: Catalog) -> None:
    parsed = run("INSERT INTO orders (order_id) SELECT product_id FROM products", catalog)
    assert parsed.tables == ("public.orders", "public.products")


def test_parse_failure_is_a_warning(catalog: Catalog) -> None:
    batch = parse_batch([("bad", "SELEC broken FROM (", "postgres"), ("ok", "SELECT name FROM customers", "postgres")],
                        catalog, search_path=SEARCH_PATH)
    assert batch.warnings == ("parse_failed:bad",)
    assert batch.parsed["bad"].error and batch.parsed["ok"].error is None


QUERIES = [
    "SELECT name, total FROM customers c JOIN orders o ON o.customer_id = c.customer_id WHERE status = 'paid'",
    "SELECT o.status, SUM(i.quantity) FROM orders o JOIN order_items i ON i.order_id = o.order_id "
    "JOIN products p ON p.product_id = i.product_id WHERE p.price > 10 GROUP BY o.status",
    "SELECT title FROM products WHERE product_id IN (SELECT product_id FROM order_items WHERE quantity > 3)",
    "SELECT name FROM customers WHERE EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = customers.customer_id)",
    "SELECT kind, segment FROM archive.events e JOIN customers c ON c.customer_id = e.customer_id ORDER BY segment",
    "SELECT region, amount FROM sales.orders WHERE amount > 100 ORDER BY region",
]


def _qualified_pairs(sql: str) -> set[tuple[str, str]]:
    """(table, column) pairs as sqlglot's own ``qualify`` attributes them: the oracle."""
    schema: dict[str, object] = {s: {t: dict.fromkeys(cols, "text") for t, cols in tables.items()}
                                 for s, tables in SHOP.items() if s not in ("x1", "x2")}
    tree = qualify(sqlglot.parse_one(sql, read="postgres"), schema=schema, db="public", dialect="postgres",
                   quote_identifiers=False)
    pairs = set()
    for scope in traverse_scope(tree):
        for column in scope.columns:
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table):
                pairs.add((f"{source.db}.{source.name}", column.name))
    return pairs


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_column_attribution_agrees_with_sqlglot_qualify(catalog: Catalog, sql: str) -> None:
    assert {(table, column) for table, _, column in run(sql, catalog).columns} == _qualified_pairs(sql)


@pytest.mark.slow
def test_pool_and_in_process_give_identical_output(catalog: Catalog) -> None:
    items = [(f"t{i:03d}", sql.replace("> 10", f"> {i}"), "postgres") for i, sql in enumerate(QUERIES * 20)]
    items.append(("broken", "SELECT FROM WHERE (", "postgres"))
    pooled = parse_batch(items, catalog, search_path=SEARCH_PATH, concurrency=2, pool_threshold=0)
    local = parse_batch(items, catalog, search_path=SEARCH_PATH, concurrency=1)
    assert pooled.stats["workers"] == 2 and local.stats["workers"] == 1
    assert pooled.parsed == local.parsed and pooled.warnings == local.warnings == ("parse_failed:broken",)


def test_cache_serves_unchanged_templates_and_reparses_changed_text(tmp_path: Path, catalog: Catalog) -> None:
    items = [("a", "SELECT name FROM customers", "postgres"), ("b", "SELECT total FROM orders", "postgres")]
    cache = ParseCache.for_project(tmp_path, "shop")
    first = parse_batch(items, catalog, search_path=SEARCH_PATH, cache=cache)
    again = parse_batch(items, catalog, search_path=SEARCH_PATH, cache=cache)
    assert (first.stats["parsed"], again.stats["parsed"], again.stats["cached"]) == (2, 0, 2)
    assert again.parsed == first.parsed
    changed = parse_batch([items[0], ("b", "SELECT status FROM orders", "postgres")], catalog,
                          search_path=SEARCH_PATH, cache=cache)
    assert changed.stats["parsed"] == 1 and ("public.orders", "select", "status") in uses(changed.parsed["b"])
    other_path = parse_batch(items, catalog, search_path=("sales",), cache=cache)
    assert other_path.stats["cached"] == 0  # resolution depends on the search path
    cache.close()


def test_a_damaged_cache_document_is_parsed_afresh(tmp_path: Path, catalog: Catalog) -> None:
    items = [("a", "SELECT name FROM customers", "postgres"), ("b", "SELECT total FROM orders", "postgres")]
    cache = ParseCache.for_project(tmp_path, "shop")
    first = parse_batch(items, catalog, search_path=SEARCH_PATH, cache=cache)
    cache.db.execute("UPDATE parsed_docs SET payload = ?", (b'{"format": 2, "templates": [["a"]]}',))
    again = parse_batch(items, catalog, search_path=SEARCH_PATH, cache=cache)
    assert again.stats["parsed"] == 2 and again.parsed == first.parsed
    assert parse_batch(items, catalog, search_path=SEARCH_PATH, cache=cache).stats["cached"] == 2  # stored again
    cache.close()


def test_catalog_reads_the_latest_run_files_or_the_shards(tmp_path: Path) -> None:
    write_shards(tmp_path, "shop", {"public": SHOP["public"]}, dropped=("products",))
    from_shards = Catalog.from_project(tmp_path, "shop")
    assert sorted(from_shards.tables) == ["public.customers", "public.order_items", "public.orders"]
    for sync_id, tables in (("20260101T000000000000Z", ["old"]), ("20260102T000000000000Z", ["customers"])):
        folder = tmp_path / "raw-sources" / "shop" / "live-database" / sync_id / "tables"
        folder.mkdir(parents=True)
        for name in tables:
            data = {"catalog": "shop", "db": "public", "name": name,
                    "columns": [{"name": c} for c in SHOP["public"].get(name, ["x"])]}
            (folder / f"public-{name}.json").write_bytes(orjson.dumps(data))
    from_run = Catalog.from_project(tmp_path, "shop")
    assert list(from_run.tables) == ["public.customers"]
    assert from_run.tables["public.customers"].columns == tuple(SHOP["public"]["customers"])


def test_parsed_template_round_trips_through_json() -> None:
    parsed = ParsedTemplate("t", ("a.b",), ("x",), (("a.b", "select", "c"),),
                            (("a.b", "c", "a.d", "e"),))
    assert ParsedTemplate.from_json(orjson.loads(orjson.dumps(parsed.to_json()))) == parsed


def test_records_built_during_an_ingest_are_frozen_until_it_ends() -> None:
    with paused_gc():
        outside = [[n] for n in range(1_000)]
    assert gc.get_freeze_count() == 0  # outside an ingest nothing is frozen
    with frozen_until_exit():
        with paused_gc():
            inside = [[n] for n in range(1_000)]
        assert gc.get_freeze_count() >= len(inside) + len(outside)
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0
