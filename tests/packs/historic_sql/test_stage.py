"""Bucketing by table in stable bands, atomic staging, content hashes and work units."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from packs.historic_sql.bucketize import EXECUTION_BANDS, RUNTIME_BANDS, USER_BANDS, _index, _p95_band, band, bucketize
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding, TemplateStats
from packs.historic_sql.parse import parse_batch
from packs.historic_sql.stage import previous_manifest, stage, sync_ids, work_units

ROWS = [(None, "public", "customers", ["customer_id", "name", "segment"]),
        (None, "public", "orders", ["order_id", "customer_id", "status", "total"]),
        (None, "public", "products", ["product_id", "title", "price"])]
SQL = {
    "join": "SELECT c.name, SUM(o.total) FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
            "WHERE o.status = 'paid' GROUP BY c.name",
    "orders": "SELECT status, COUNT(*) FROM orders GROUP BY status",
    "products": "SELECT title FROM products WHERE price > 10",
    "broken": "SELECT FROM WHERE (",
}


def template(tid: str, executions: int, users: int = 3, p95: float | None = 250.0) -> AggregatedTemplate:
    return AggregatedTemplate(templateId=tid, canonicalSql=SQL[tid], dialect="postgres",
                              stats=TemplateStats(executions=executions, distinctUsers=users,
                                                  firstSeen="2026-05-01T00:00:00Z", lastSeen="2026-05-10T00:00:00Z",
                                                  p95RuntimeMs=p95, errorRate=0.0),
                              topUsers=[f"u{i}" for i in range(min(users, 3))])


def workload(products_executions: int = 40, join_executions: int = 101) -> list[AggregatedTemplate]:
    return [template("join", join_executions), template("orders", 700, users=12),
            template("products", products_executions), template("broken", 3)]


def pipeline(project: Path, templates: list[AggregatedTemplate], sync_id: str) -> tuple[dict[str, object], list[str]]:
    batch = parse_batch(templates, Catalog(ROWS), search_path=("public",))
    staged = stage(project, "shop", sync_id, dialect="postgres", templates=templates, batch=batch,
                   bucketed=bucketize(templates, batch.parsed),
                   findings=[ProbeFinding(severity="info", code="pgss", message="ok")])
    return staged.manifest, work_units(previous_manifest(project, "shop", before=sync_id), staged.manifest)


def table_bytes(project: Path, sync_id: str) -> dict[str, bytes]:
    root = project / "raw-sources" / "shop" / "historic-sql" / sync_id
    return {p.name: p.read_bytes() for p in sorted(root.rglob("*.json")) if p.name != "manifest.json"}


@pytest.mark.parametrize(("value", "bands", "label"), [
    (9, EXECUTION_BANDS, "<10"), (10, EXECUTION_BANDS, "10-100"), (101, EXECUTION_BANDS, "100-1k"),
    (120, EXECUTION_BANDS, "100-1k"), (4_999, EXECUTION_BANDS, "1k-5k"), (50_001, EXECUTION_BANDS, ">50k"),
    (1, USER_BANDS, "1"), (5, USER_BANDS, "2-5"), (20, USER_BANDS, "6-20"), (21, USER_BANDS, ">20"),
])
def test_bands(value: int, bands: tuple[tuple[float, str], ...], label: str) -> None:
    assert band(value, bands) == label


def test_the_p95_runtime_band_is_the_band_of_the_weighted_percentile() -> None:
    rng = random.Random(5)

    def percentile(weighted: list[tuple[float, int]]) -> float:  # what the band summarises, spelled out
        ordered, seen = sorted(weighted), 0
        threshold = 0.95 * sum(w for _, w in ordered)
        for value, w in ordered:
            seen += w
            if seen >= threshold:
                return value
        raise AssertionError("unreachable")

    for _ in range(500):
        weighted = [(rng.choice([rng.uniform(0, 120_000), 100.0, 1_000.0, 99.999]), rng.randint(1, 60))
                    for _ in range(rng.randint(1, 12))]
        weights = [0] * len(RUNTIME_BANDS)
        for value, w in weighted:
            weights[_index(value, RUNTIME_BANDS)] += w
        assert _p95_band(weights) == band(percentile(weighted), RUNTIME_BANDS), weighted
    assert _p95_band([0] * len(RUNTIME_BANDS)) == "unknown"


def test_small_fluctuations_do_not_change_table_content() -> None:
    catalog = Catalog(ROWS)
    contents = []
    for executions in (101, 120):
        templates = workload(join_executions=executions)
        batch = parse_batch(templates, catalog, search_path=("public",))
        contents.append(bucketize(templates, batch.parsed).tables)
    assert contents[0] == contents[1]


def test_every_side_of_a_join_gets_the_template_and_the_join() -> None:
    templates = workload()
    batch = parse_batch(templates, Catalog(ROWS), search_path=("public",))
    bucketed = bucketize(templates, batch.parsed)
    tables = bucketed.tables
    assert sorted(tables) == ["public.customers", "public.orders", "public.products"]
    customers, orders = tables["public.customers"], tables["public.orders"]
    assert customers["observedJoins"] == [
        {"withTable": "public.orders", "on": [["customer_id", "customer_id"]], "freq": "high"}]
    assert orders["observedJoins"] == [
        {"withTable": "public.customers", "on": [["customer_id", "customer_id"]], "freq": "mid"}]  # 101 of 801
    assert [t["id"] for t in orders["topTemplates"]] == ["orders", "join"]  # by executions band
    assert orders["stats"] == {"executionsBucket": "100-1k", "distinctUsersBucket": "6-20",
                               "p95RuntimeBucket": "100ms-1s", "errorRateBucket": "none",
                               "recencyBucket": "current", "workloadTier": "high"}  # the busiest table
    assert tables["public.products"]["stats"]["workloadTier"] == "low"  # 40 of 801
    assert orders["columnsByClause"]["groupBy"] == [["status", "high"]]
    assert customers["columnsByClause"]["join"] == [["customer_id", "high"]]
    sets = bucketed.table_sets
    assert [s["tables"] for s in sets] == [["public.customers", "public.orders"]]
    assert [t["id"] for t in sets[0]["templates"]] == ["join"]
    # patterns-input.json lists every template the reader kept, parse failures too
    assert [(t["id"], t["tablesTouched"]) for t in bucketed.patterns["templates"]] == [
        ("broken", []), ("join", ["public.customers", "public.orders"]), ("orders", ["public.orders"]),
        ("products", ["public.products"])]


def test_stage_writes_the_run_atomically_with_warnings_and_hashes(tmp_path: Path) -> None:
    manifest, units = pipeline(tmp_path, workload(), "20260511T000000000000Z")
    root = tmp_path / "raw-sources" / "shop" / "historic-sql"
    assert [p.name for p in root.iterdir()] == ["20260511T000000000000Z"]  # no temp dir left behind
    run = root / "20260511T000000000000Z"
    assert sorted(p.name for p in (run / "tables").iterdir()) == [
        "public.customers.json", "public.orders.json", "public.products.json"]
    assert manifest["warnings"] == ["parse_failed:broken"]
    assert manifest["counts"] == {"templates": 4, "parsed": 3, "parseFailures": 1, "zeroTableTemplates": 0,
                                  "tables": 3, "tableSets": 1}
    assert manifest["readerFindings"] == [{"severity": "info", "code": "pgss", "message": "ok", "fix": ""}]
    assert orjson.loads((run / "manifest.json").read_bytes()) == manifest
    assert units == ["public.customers", "public.orders", "public.products"]  # first run: everything is new
    assert b"20260511" not in b"".join(table_bytes(tmp_path, "20260511T000000000000Z").values())


def test_second_run_is_byte_identical_and_causes_no_work(tmp_path: Path) -> None:
    pipeline(tmp_path, workload(), "20260511T000000000000Z")
    manifest, units = pipeline(tmp_path, workload(), "20260512T000000000000Z")
    assert units == []
    assert table_bytes(tmp_path, "20260511T000000000000Z") == table_bytes(tmp_path, "20260512T000000000000Z")
    assert sync_ids(tmp_path, "shop") == ["20260511T000000000000Z", "20260512T000000000000Z"]
    assert manifest["syncId"] == "20260512T000000000000Z"


def test_a_changed_table_is_exactly_one_work_unit(tmp_path: Path) -> None:
    pipeline(tmp_path, workload(products_executions=40), "20260511T000000000000Z")
    _, units = pipeline(tmp_path, workload(products_executions=45), "20260512T000000000000Z")
    assert units == []  # same band
    # a band of its own changes (products stays below the busiest table, so no other table's workload tier moves)
    _, units = pipeline(tmp_path, workload(products_executions=400), "20260513T000000000000Z")
    assert units == ["public.products"]
    # a new busiest table places every other table lower in the workload: all of them are work
    _, units = pipeline(tmp_path, workload(products_executions=4_000), "20260514T000000000000Z")
    assert units == ["public.customers", "public.orders", "public.products"]


def test_a_failed_stage_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline(tmp_path, workload(), "20260511T000000000000Z")

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("khive.project.runs.os.rename", fail)
    with pytest.raises(OSError, match="disk full"):
        pipeline(tmp_path, workload(), "20260512T000000000000Z")
    root = tmp_path / "raw-sources" / "shop" / "historic-sql"
    assert [p.name for p in root.iterdir()] == ["20260511T000000000000Z"]  # the previous run is intact
