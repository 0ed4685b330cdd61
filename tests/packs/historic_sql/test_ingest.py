"""``historic_sql.ingest`` end to end on a scanned SQLite project with a query log: usage, idempotency, drift."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hsql_project import LINE_ORDERS, ORDER_STATUS, REVENUE_BY_NATION, workload, write_log
from ruamel.yaml import YAML

from khive.runtime import Runtime

pytestmark = pytest.mark.anyio
Call = Callable[..., Awaitable[dict[str, Any]]]
INGEST = 'historic_sql.ingest(connection="tpch")'


def shard(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((project / "_schema/tpch/tpch.main.yaml").read_text())
    return data["tables"]


def staged(project: Path, sync_id: str) -> dict[str, bytes]:
    root = project / "raw-sources/tpch/historic-sql" / sync_id
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.json"))
            if p.name != "manifest.json"}


def stamps(project: Path) -> dict[str, int]:
    return {p.relative_to(project).as_posix(): p.stat().st_mtime_ns
            for folder in ("_schema", "wiki", "semantic-layer", "raw-sources/tpch/historic-sql-digests")
            for p in (project / folder).rglob("*") if p.is_file()}


@pytest.fixture
async def scanned(call: Call) -> Call:
    assert "error" not in await call('scan.run(connection="tpch")')
    return call


async def test_usage_numbers_match_what_was_run(scanned: Call, project: Path) -> None:
    result = await scanned(INGEST)
    assert result["counts"] == {"templates": 4, "parsed": 4, "parseFailures": 0, "zeroTableTemplates": 0,
                                "tables": 4, "tableSets": 2}
    assert result["workUnits"] == 5 and result["digests"] == {"deterministic": 5} and result["pendingUnits"] == []
    orders = await scanned('historic_sql.usage(connection="tpch", table="orders")')
    # 3 x 4 revenue-by-nation + 3 x 5 status + 2 x 3 line-orders runs touch orders; bob, alice, carol and erin
    # ran them; the status query's fifth run (day 4 of write_log's calendar) is the newest
    assert orders["totals"] == {"executions": 12 + 15 + 6, "templates": 3, "distinctUsers": 4,
                                "lastSeen": "2026-11-24T10:00:00Z"}
    assert orders["stats"]["executionsBucket"] == "10-100"
    # 10-100 executions reads "mid" on the absolute scale; orders is the busiest table of this warehouse
    assert orders["stats"]["workloadTier"] == "high" and orders["usage"]["frequencyTier"] == "high"
    assert orders["stats"]["recencyBucket"] == "current"
    assert "o_orderdate" in orders["usage"]["commonFilters"]
    nation = await scanned('historic_sql.usage(connection="tpch", table="main.nation")')
    assert nation["totals"] == {"executions": 12, "templates": 1, "distinctUsers": 2,
                                "lastSeen": "2026-11-23T10:00:00Z"}
    assert nation["usage"]["commonGroupBys"] == ["n_name"]
    assert nation["stats"]["workloadTier"] == "mid" and nation["usage"]["frequencyTier"] == "mid"  # 12 of 33
    tables = shard(project)
    assert tables["orders"]["usage"]["narrative"] == orders["usage"]["narrative"]
    assert tables["orders"]["columns"][0]["name"] == "o_orderkey"  # the scan's keys are untouched


async def test_join_usage_lands_on_both_sides_with_unqualified_columns_resolved(scanned: Call, project: Path) -> None:
    await scanned(INGEST)
    tables = shard(project)
    customer_joins = {j["table"]: j["on"] for j in tables["customer"]["usage"]["commonJoins"]}
    assert customer_joins == {"main.nation": ["c_nationkey = n_nationkey"], "main.orders": ["c_custkey = o_custkey"]}
    assert {"table": "main.customer", "on": ["o_custkey = c_custkey"]} in tables["orders"]["usage"]["commonJoins"]
    # LINE_ORDERS names no table on its columns: the scan tells o_orderstatus is orders' and l_orderkey lineitem's
    assert {"table": "main.orders", "on": ["l_orderkey = o_orderkey"]} in tables["lineitem"]["usage"]["commonJoins"]
    customer = await scanned('historic_sql.usage(connection="tpch", table="customer")')
    assert ["c_mktsegment", "high"] in customer["columnsByClause"]["where"]  # unqualified in REVENUE_BY_NATION


async def test_second_run_is_idempotent(scanned: Call, project: Path, runtime: Runtime) -> None:
    runtime.index.refresh()
    first = await scanned(INGEST)
    after = runtime.index.refresh()
    assert (after.full, after.reindexed) == (False, 3)  # the shard and the two new pattern pages, nothing else
    before = stamps(project)
    second = await scanned(INGEST)
    assert second["workUnits"] == 0 and second["digests"] == {}
    assert second["projection"]["shards"] == [] and second["projection"]["patterns"]["written"] == []
    assert staged(project, first["syncId"]) == staged(project, second["syncId"])
    assert stamps(project) == before  # no file rewritten ...
    assert not runtime.index.refresh().changed  # ... so the index has nothing to re-read


async def test_an_unchanged_log_is_not_read_again_and_stages_what_a_cold_run_stages(scanned: Call,
                                                                                   project: Path) -> None:
    first = await scanned(INGEST)
    assert first["readStats"] == {"aggregateCache": "miss", "reason": "no stored aggregate", "stored": True}
    second = await scanned(INGEST)
    assert second["readStats"] == {"aggregateCache": "hit", "reason": "log unchanged"}
    assert second["normalizeStats"] == {}  # nothing to normalize: the log was not read
    assert gc.get_freeze_count() == 0  # what the ingest froze (parsed.frozen_until_exit) is back
    for derived in (project / ".khive").glob("historic-sql-*"):  # derived state, deletable any time:
        shutil.rmtree(derived) if derived.is_dir() else derived.unlink()  # the next run is cold
    cold = await scanned(INGEST)
    assert cold["readStats"]["aggregateCache"] == "miss" and cold["parseStats"]["cached"] == 0
    assert staged(project, second["syncId"]) == staged(project, cold["syncId"]) == staged(project, first["syncId"])
    assert cold["workUnits"] == 0 and cold["projection"]["shards"] == []
    write_log(project / "logs/queries.jsonl", workload(with_returns=False))
    changed = await scanned(INGEST)
    assert changed["readStats"]["reason"] == "log size changed" and changed["workUnits"] >= 1


async def test_each_store_of_caches_py_serves_the_run_it_is_for(scanned: Call, project: Path) -> None:
    first = await scanned(INGEST)
    assert first["parseStats"]["cached"] == 0 and first["normalizeStats"]["cached"] == 0
    second = await scanned(INGEST)  # unchanged: the log aggregate, the parse document, the projection memo
    assert second["readStats"]["aggregateCache"] == "hit"
    assert second["parseStats"]["cached"] == second["counts"]["templates"] == first["counts"]["templates"]
    assert second["projection"]["unchangedSkipped"] >= 1
    more = [(ORDER_STATUS.format(day="1995-09-01"), "carol", 2)]  # one new text of a known template
    write_log(project / "logs/queries.jsonl", [*workload(), *more])
    third = await scanned(INGEST)  # a changed log is read again: only its new text is normalized
    assert third["readStats"]["aggregateCache"] == "miss"
    assert third["normalizeStats"]["normalized"] == 1
    assert third["normalizeStats"]["cached"] == third["normalizeStats"]["texts"] - 1
    stores = sorted(p.name for p in (project / ".khive").glob("historic-sql-*"))
    assert stores == ["historic-sql-cache.sqlite", "historic-sql-logs"]


async def test_a_person_editing_a_projected_file_gets_a_full_merge_next_run(scanned: Call, project: Path) -> None:
    await scanned(INGEST)
    path = project / "_schema/tpch/tpch.main.yaml"
    narrative = shard(project)["orders"]["usage"]["narrative"]
    text = path.read_text()
    path.write_text(text.replace("narrative: orders is", "narrative: (edited) orders is").replace(
        "    usage:\n", "    owner: data-team  # added by a person\n    usage:\n", 1))
    assert shard(project)["orders"]["usage"]["narrative"] != narrative
    again = await scanned(INGEST)
    assert again["projection"]["shards"] == ["_schema/tpch/tpch.main.yaml"]  # the merge ran: the file changed
    tables = shard(project)
    assert tables["orders"]["usage"]["narrative"] == narrative  # managed keys are ours again ...
    assert "# added by a person" in path.read_text() and sum("owner" in entry for entry in tables.values()) == 1
    stamp = path.stat().st_mtime_ns
    assert (await scanned(INGEST))["projection"]["shards"] == [] and path.stat().st_mtime_ns == stamp  # ... and stay


async def test_a_table_that_disappears_goes_stale_and_comes_back(scanned: Call, project: Path) -> None:
    await scanned(INGEST)
    log = project / "logs/queries.jsonl"
    write_log(log, [run for run in workload() if "nation" not in run[0]])  # nobody asks about nations any more
    gone = await scanned(INGEST)
    assert gone["vanishedTables"] == ["main.customer", "main.nation"]
    nation = shard(project)["nation"]["usage"]
    assert nation["staleSince"] == "2026-11-23T10:00:00Z"  # the newest run of the query that read it
    assert set(nation) == {"staleSince"}  # a narrative and filters about a table nobody reads would mislead
    assert "staleSince" not in shard(project)["orders"]["usage"]
    again = await scanned(INGEST)
    assert again["projection"]["shards"] == []  # already stale: nothing to rewrite
    write_log(log, workload())
    back = await scanned(INGEST)
    assert back["workUnits"] >= 1
    assert "staleSince" not in shard(project)["nation"]["usage"]


async def test_usage_merges_into_sl_sources_and_keeps_other_keys(scanned: Call, project: Path) -> None:
    source = project / "semantic-layer/tpch/orders.yaml"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("name: orders  # hand-written\ntable: main.orders\ngrain: [o_orderkey]\ncolumns:\n"
                      "  - name: o_orderkey\n    type: number\n")
    await scanned(INGEST)
    text = source.read_text()
    assert "# hand-written" in text
    data = YAML(typ="safe").load(text)
    assert data["usage"]["commonJoins"] == [{"table": "main.customer", "on": ["o_custkey = c_custkey"]},
                                            {"table": "main.lineitem", "on": ["o_orderkey = l_orderkey"]}]
    assert data["usage"]["commonJoins"] == shard(project)["orders"]["usage"]["commonJoins"]  # one shape
    found = await scanned('sl.read(name="orders", connection="tpch")')
    assert "error" not in found, found
    page = (project / "wiki/global/historic-sql/customer-nation-orders.md").read_text()
    assert "- orders" in page.split("---")[1]  # sl_refs in the frontmatter


async def test_pattern_slugs_are_stable_and_unseen_patterns_go_stale(scanned: Call, project: Path) -> None:
    first = await scanned(INGEST)
    assert first["projection"]["patterns"]["slugs"] == ["customer-nation-orders", "lineitem-orders"]
    page = project / "wiki/global/historic-sql/customer-nation-orders.md"
    page.write_text(page.read_text().replace("customer-nation-orders", "x"))  # an LLM-named slug would differ
    renamed = project / "wiki/global/historic-sql/revenue-by-nation.md"
    page.rename(renamed)
    variant = REVENUE_BY_NATION.replace("SUM(o.o_totalprice) AS revenue", "COUNT(*) AS orders")
    write_log(project / "logs/queries.jsonl", [*workload(), (variant, "erin", 3)])
    second = await scanned(INGEST)  # tables the same, templates 1 -> 2: Jaccard 4/5 >= 60 %
    assert second["projection"]["patterns"]["slugs"] == ["revenue-by-nation", "lineitem-orders"]
    assert not page.exists()
    found = await scanned('wiki.search(query="customer nation orders together")')
    assert "historic-sql/revenue-by-nation" in [hit["key"] for hit in found["hits"]], found
    write_log(project / "logs/queries.jsonl", [r for r in workload() if "l_orderkey = o_orderkey" not in r[0]])
    third = await scanned(INGEST)
    assert third["projection"]["patterns"]["stale"] == ["lineitem-orders"]
    listed = await scanned('historic_sql.patterns(connection="tpch", include_stale=true)')
    stale = {p["slug"]: p["staleSince"] for p in listed["patterns"]}
    assert stale["lineitem-orders"] is not None and stale["revenue-by-nation"] is None
    text = (project / "wiki/global/historic-sql/lineitem-orders.md").read_text()
    assert "- stale" in text and "stale_since:" in text


async def test_bad_config_names_the_key_and_the_fix(call: Call, project: Path) -> None:
    # the pack checks its block when the runtime is built (khive_config_sections), not when an ingest runs
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace("minExecutions: 2", "minExecutions: 2\n      windowDay: 5"))
    from khive.bootstrap import open_runtime
    from khive.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        open_runtime(project, {})
    assert refused.value.code == "config_error"
    message = refused.value.message
    assert "connections.tpch.historicSql.windowDay" in message and "windowDays" in message


async def test_ingest_needs_a_scan_and_opt_in(call: Call) -> None:
    missing = await call(INGEST)
    assert missing["error"]["code"] == "scan_missing" and "khive scan tpch" in missing["error"]["message"]


def test_khive_ingest_cli(project: Path) -> None:
    khive = Path(sys.executable).parent / "khive"
    subprocess.run([khive, "--project", str(project), "scan", "tpch"], check=True, capture_output=True)
    done = subprocess.run([khive, "--project", str(project), "ingest", "tpch"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "4 tables, 5 work units" in done.stderr
    assert '"verb": "historic_sql.ingest"' in done.stdout
    assert (project / "wiki/global/historic-sql/lineitem-orders.md").is_file()


async def test_status_and_queries_the_log_does_not_parse(scanned: Call, project: Path) -> None:
    write_log(project / "logs/queries.jsonl", [*workload(), ("SELECT FROM WHERE (", "zed", 3),
                                               (ORDER_STATUS.format(day="x"), "carol", 1), (LINE_ORDERS, "x", 0)])
    result = await scanned(INGEST)
    assert len([w for w in result["warnings"] if w.startswith("parse_failed:")]) == 1
    status = await scanned('historic_sql.status(connection="tpch")')
    assert status["pendingUnits"] == [] and status["history"] == [result["syncId"]]


async def test_warm_task_and_probe_of_a_log_connection(runtime: Runtime, call: Call, project: Path) -> None:
    (tasks,) = [t for impl in runtime.plugins.hook.khive_warm.get_hookimpls()
                if impl.plugin_name == "historic_sql" for t in [impl.function(runtime=runtime)]]
    assert [task.name for task in tasks] == ["historic_sql.parser"]
    await tasks[0].run()
    probe = await call('historic_sql.probe(connection="tpch")')
    assert probe["status"] == "ok" and probe["findings"][0]["code"] == "query_log"
    (project / "logs/queries.jsonl").unlink()
    missing = await call('historic_sql.probe(connection="tpch")')
    assert missing["status"] == "error" and missing["findings"][0]["code"] == "query_log_missing"


async def test_the_catalog_comes_from_the_scan_run_not_only_the_shards(scanned: Call, project: Path) -> None:
    from packs.historic_sql.catalog import Catalog

    runs = sorted((project / "raw-sources/tpch/live-database").iterdir())
    assert (runs[-1] / "tables.json").is_file()  # the scan's one-file-per-run layout (scan ADR 0021)
    for path in (project / "_schema/tpch").glob("*.yaml"):
        path.unlink()  # without the shards only the run can answer
    orders = Catalog.from_project(project, "tpch").resolve("orders")
    assert orders is not None and orders.key == "main.orders"
    assert {"o_custkey", "o_orderstatus"} <= set(orders.columns)
