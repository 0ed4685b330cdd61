"""Normalizing a log's texts together: the cross-run cache, the pool, and attribution from the normalizer's tree."""

from __future__ import annotations

from pathlib import Path

from hsql_project import LINE_ORDERS, ORDER_STATUS, RETURNS, REVENUE_BY_NATION

from packs.historic_sql.analyze import analyze
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.parsed import ParsedTemplate
from packs.historic_sql.prime import NormalCache, prime

CATALOG = Catalog([
    (None, "main", "nation", ["n_nationkey", "n_name"]),
    (None, "main", "customer", ["c_custkey", "c_name", "c_nationkey", "c_mktsegment"]),
    (None, "main", "orders", ["o_orderkey", "o_custkey", "o_orderdate", "o_totalprice", "o_orderstatus"]),
    (None, "main", "lineitem", ["l_orderkey", "l_linenumber", "l_quantity", "l_returnflag", "l_shipdate"]),
])
TEXTS = [REVENUE_BY_NATION.format(segment="BUILDING"), REVENUE_BY_NATION.format(segment="MACHINERY"),
         ORDER_STATUS.format(day="1995-01-01"), LINE_ORDERS.format(status="O"), RETURNS.format(day="1998-01-01"),
         "WITH big AS (SELECT o_custkey, SUM(o_totalprice) AS t FROM orders GROUP BY 1) "
         "SELECT c_name, t FROM customer JOIN big ON big.o_custkey = c_custkey WHERE t > 100",
         "SELECT l_returnflag FROM lineitem l JOIN orders o USING (x) WHERE -5 < l_quantity",
         "SELECT FROM WHERE (", "SHOW work_mem"]


def test_attribution_from_the_normalizers_tree_agrees_with_parsing_the_canonical_text() -> None:
    analyses: dict[str, ParsedTemplate] = {}
    normalizer = Normalizer("sqlite")
    prime(normalizer, TEXTS, analysis=(CATALOG, ("main",)), analyses=analyses)
    results = {normalizer.normalize(text).template_id: normalizer.normalize(text) for text in TEXTS}
    parsed = [r for r in results.values() if not r.parse_failed and r.kind == "SELECT"]
    assert len(parsed) == 6 and set(analyses) == {r.template_id for r in parsed}  # two texts, one template
    for result in parsed:
        fused = analyses[result.template_id]
        assert fused == analyze(result.template_id, result.canonical_sql, "sqlite", CATALOG, ("main",))
        assert fused.tables


def test_pool_and_in_process_agree_and_the_cache_serves_the_rerun(tmp_path: Path) -> None:
    texts = [REVENUE_BY_NATION.format(segment=f"S{i}") + f" LIMIT {i}" for i in range(8)] + TEXTS
    pooled, local = Normalizer("sqlite"), Normalizer("sqlite")
    pooled_found: dict[str, ParsedTemplate] = {}
    local_found: dict[str, ParsedTemplate] = {}
    cache = NormalCache(tmp_path / "cache.sqlite", "sqlite", ())
    stats = prime(pooled, iter(texts), cache=cache, workers=2, pool_threshold=1, chunk_size=3,
                  analysis=(CATALOG, ("main",)), analyses=pooled_found)
    prime(local, texts, workers=1, analysis=(CATALOG, ("main",)), analyses=local_found)
    assert {k: stats[k] for k in ("texts", "cached", "normalized", "workers", "chunks")} == {
        "texts": len(texts), "cached": 0, "normalized": len(texts), "workers": 2, "chunks": 6}
    assert [pooled.normalize(t) for t in texts] == [local.normalize(t) for t in texts]
    assert pooled_found == local_found
    again = Normalizer("sqlite")
    assert prime(again, texts, cache=cache)["cached"] == len(texts)
    assert [again.normalize(t) for t in texts] == [local.normalize(t) for t in texts]
    assert again.parses == 0  # everything came from the cache
    other = NormalCache(tmp_path / "cache.sqlite", "sqlite", ("secret",))  # another redaction list: not reused
    assert prime(Normalizer("sqlite", ["secret"]), texts, cache=other)["cached"] == 0
    cache.close()
    other.close()


GOLDEN = Path(__file__).parent / "fixtures" / "normalize"
SHAPES = [
    "INSERT INTO main.archive SELECT * FROM orders o WHERE o_orderdate < '1990-01-01'",
    "WITH x AS (SELECT * FROM orders), y AS (SELECT * FROM x JOIN lineitem ON l_orderkey = o_orderkey) "
    "SELECT * FROM y, generate_series(1, 3) AS g WHERE EXISTS (SELECT 1 FROM Nation n WHERE n.n_name = 'x')",
    "UPDATE customer SET c_name = 'x' WHERE c_custkey IN (SELECT o_custkey FROM orders)",
    "SELECT * FROM (SELECT c_custkey FROM customer) AS d UNION ALL SELECT o_custkey FROM pg_catalog.pg_class",
    "DELETE FROM lineitem WHERE l_orderkey IN (WITH o AS (SELECT o_orderkey FROM orders) SELECT * FROM o)",
]


def test_facts_from_the_analyzers_scopes_equal_a_plain_normalization() -> None:
    for dialect in ("postgres", "sqlite", "duckdb"):
        texts = TEXTS + SHAPES + [path.read_text(encoding="utf-8") for path in sorted(GOLDEN.glob(f"*.{dialect}.sql"))]
        fused = Normalizer(dialect)
        prime(fused, texts, analysis=(CATALOG, ("main",)), analyses={})
        for text in texts:
            assert fused.normalize(text) == Normalizer(dialect).normalize(text), text
