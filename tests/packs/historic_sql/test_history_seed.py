"""Seed 002's query-history behaviours through ``historic_sql.ingest`` and the verbs that read its output:
who makes a pattern, where archived patterns go, what a vanished table keeps, recency and workload tiers,
the manifest's and ``patterns-input.json``'s contents, monthly grouping written as ``GROUP BY 1``."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hsql_project import REVENUE_BY_NATION, Workload, workload, write_log
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse

pytestmark = pytest.mark.anyio
Call = Callable[..., Awaitable[dict[str, Any]]]
INGEST = 'historic_sql.ingest(connection="tpch")'
PAGES = "wiki/global/historic-sql"
# customer and nation read together by one analyst only
ONE_PERSONS_JOIN = ("SELECT n_name, COUNT(*) FROM customer JOIN nation ON n_nationkey = c_nationkey "
                    "WHERE c_acctbal > {amount} GROUP BY n_name")
MONTHLY = ("SELECT date_trunc('month', o_orderdate), SUM(o_totalprice) FROM orders "
           "WHERE o_orderstatus = '{status}' GROUP BY 1 ORDER BY 1")


@pytest.fixture
async def scanned(call: Call) -> Call:
    assert "error" not in await call('scan.run(connection="tpch")')
    return call


def shard(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((project / "_schema/tpch/tpch.main.yaml").read_text())
    tables: dict[str, Any] = data["tables"]
    return tables


def run_dir(project: Path, sync_id: str) -> Path:
    return project / "raw-sources/tpch/historic-sql" / sync_id


async def fresh_runtime_call(project: Path, text: str) -> dict[str, Any]:
    """One op on a runtime opened now: it reads khive.yaml as the test left it."""
    runtime = open_runtime(project, {})
    try:
        envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI))
    finally:
        await runtime.aclose()
    (result,) = envelope["results"]
    assert result["ok"], result
    return dict(result["result"])


def write_dated_log(path: Path, runs: Workload, day: str) -> None:
    """Like ``write_log``, every execution on ``day`` (YYYY-MM-DD)."""
    with path.open("a", encoding="utf-8") as out:
        for sql, user, times in runs:
            for n in range(times):
                out.write(json.dumps({"sql": sql, "user": user, "started_at": f"{day}T0{n % 9}:00:00Z",
                                      "duration_ms": 40, "rows": 1}) + "\n")


async def test_a_pattern_needs_two_distinct_users_unless_configured(scanned: Call, project: Path) -> None:
    lone = [(ONE_PERSONS_JOIN.format(amount=n), "zoe", 4) for n in (5, 15)]
    write_log(project / "logs/queries.jsonl", [*workload(), *lone])
    first = await scanned(INGEST)
    assert first["projection"]["patterns"]["slugs"] == ["customer-nation-orders", "lineitem-orders"]
    assert not (project / PAGES / "customer-nation.md").exists()
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace("windowDays: 3650", "windowDays: 3650\n      patternMinUsers: 1"))
    second = await fresh_runtime_call(project, INGEST)
    assert "customer-nation" in second["projection"]["patterns"]["slugs"]
    assert (project / PAGES / "customer-nation.md").is_file()


async def test_an_archived_pattern_page_moves_under_archived_and_back(scanned: Call, project: Path) -> None:
    await scanned(INGEST)
    log = project / "logs/queries.jsonl"
    write_log(log, [r for r in workload() if "l_orderkey = o_orderkey" not in r[0]])  # lineitem-orders unseen
    assert (await scanned(INGEST))["projection"]["patterns"]["stale"] == ["lineitem-orders"]
    live = project / PAGES / "lineitem-orders.md"
    long_ago = (date.today() - timedelta(days=200)).isoformat()  # as if the page had gone stale months ago
    live.write_text(re.sub(r"stale_since: '?[0-9-]+'?", f"stale_since: '{long_ago}'", live.read_text()))
    third = await scanned(INGEST)
    assert third["projection"]["patterns"]["archived"] == ["lineitem-orders"]
    archived = project / PAGES / "_archived/lineitem-orders.md"
    assert archived.is_file() and not live.exists()
    assert "archived: true" in archived.read_text()
    read = await scanned('wiki.read(key="historic-sql/_archived/lineitem-orders")')
    assert "error" not in read, read
    listed = await scanned('historic_sql.patterns(connection="tpch")')
    assert [p["slug"] for p in listed["patterns"]] == ["customer-nation-orders"]
    everything = await scanned('historic_sql.patterns(connection="tpch", include_stale=true)')
    old = {p["slug"]: p for p in everything["patterns"]}["lineitem-orders"]
    assert old["archived"] is True and old["page"] == "historic-sql/_archived/lineitem-orders"
    write_log(log, workload())  # the analysts read lineitem with orders again
    back = await scanned(INGEST)
    assert back["projection"]["patterns"]["slugs"] == ["customer-nation-orders", "lineitem-orders"]
    assert live.is_file() and not archived.exists()
    assert "stale_since" not in live.read_text() and "archived: true" not in live.read_text()


async def test_a_vanished_table_keeps_only_when_it_was_last_seen(scanned: Call, project: Path) -> None:
    source = project / "semantic-layer/tpch/nation.yaml"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("name: nation\ntable: main.nation\ngrain: [n_nationkey]\ncolumns:\n"
                      "  - name: n_nationkey\n    type: number\nusage:\n  ownerNote: ask the geo team\n")
    await scanned(INGEST)
    assert shard(project)["nation"]["usage"]["commonGroupBys"] == ["n_name"]
    log = project / "logs/queries.jsonl"
    write_log(log, [r for r in workload() if "nation" not in r[0]])
    gone = await scanned(INGEST)
    assert gone["vanishedTables"] == ["main.customer", "main.nation"]
    # the revenue query's four runs fall on days 0-3 of write_log's calendar: the last one is when nation was seen
    assert shard(project)["nation"]["usage"] == {"staleSince": "2026-11-23T10:00:00Z"}
    usage = YAML(typ="safe").load(source.read_text())["usage"]
    assert usage == {"ownerNote": "ask the geo team", "staleSince": "2026-11-23T10:00:00Z"}  # a person's key stays
    manifest = orjson.loads((run_dir(project, gone["syncId"]) / "manifest.json").read_bytes())
    assert manifest["staleTables"] == {"main.customer": "2026-11-23T10:00:00Z", "main.nation": "2026-11-23T10:00:00Z"}
    later = await scanned(INGEST)  # still gone: the time it was last seen does not move
    manifest = orjson.loads((run_dir(project, later["syncId"]) / "manifest.json").read_bytes())
    assert manifest["staleTables"]["main.nation"] == "2026-11-23T10:00:00Z"
    assert shard(project)["nation"]["usage"] == {"staleSince": "2026-11-23T10:00:00Z"}


async def test_recency_and_workload_tiers(scanned: Call, project: Path) -> None:
    log = project / "logs/queries.jsonl"
    write_log(log, [r for r in workload() if "nation" not in r[0]])  # everything else in late November
    revenue = [(REVENUE_BY_NATION.format(segment=s), user, 4) for s, user in (("BUILDING", "bob"), ("X", "alice"))]
    write_dated_log(log, revenue, "2026-09-15")  # the nation report was last run in September
    await scanned(INGEST)
    nation = await scanned('historic_sql.usage(connection="tpch", table="nation")')
    assert nation["stats"]["recencyBucket"] == "older"
    assert "more than a month before the newest query" in nation["usage"]["narrative"]
    usages = {name: await scanned(f'historic_sql.usage(connection="tpch", table="{name}")')
              for name in ("orders", "lineitem", "customer", "nation")}
    assert usages["orders"]["stats"]["recencyBucket"] == "current"
    # absolute: 10-100 executions reads "mid" for every table here; within the workload the busiest is "high"
    busiest = max(u["totals"]["executions"] for u in usages.values())
    assert usages["orders"]["totals"]["executions"] == busiest
    assert usages["orders"]["stats"]["workloadTier"] == "high" and usages["orders"]["usage"]["frequencyTier"] == "high"
    for name, found in usages.items():
        share = found["totals"]["executions"] / busiest
        assert found["stats"]["workloadTier"] == ("high" if share >= 0.5 else "mid" if share >= 0.1 else "low"), name


async def test_the_patterns_verb_lists_the_most_used_first(scanned: Call, project: Path) -> None:
    await scanned(INGEST)
    listed = (await scanned('historic_sql.patterns(connection="tpch")'))["patterns"]
    # revenue by nation: 3 x 4 runs by bob and alice; lineitem with orders: 2 x 3 runs by alice and erin
    assert [(p["slug"], p["executions"], p["distinctUsers"]) for p in listed] == [
        ("customer-nation-orders", 12, 2), ("lineitem-orders", 6, 2)]
    assert all(p["frequencyTier"] in ("high", "mid", "low") for p in listed)


async def test_manifest_and_pattern_input(scanned: Call, project: Path) -> None:
    log = project / "logs/queries.jsonl"
    write_log(log, workload())
    with log.open("a", encoding="utf-8") as out:
        out.write("{not json\n")
    before = date.today().isoformat()
    result = await scanned(INGEST)
    run = run_dir(project, result["syncId"])
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert manifest["fetchedAt"][:10] >= before and manifest["fetchedAt"].endswith("Z")
    assert any(w.startswith("malformed_lines:") for w in manifest["probeWarnings"]), manifest["probeWarnings"]
    doc = orjson.loads((run / "patterns-input.json").read_bytes())
    assert len(doc["templates"]) == result["counts"]["templates"] == 4  # single-table templates too
    assert {t["id"] for t in doc["templates"]} >= {t["id"] for s in doc["tableSets"] for t in s["templates"]}
    touched = sorted(tuple(t["tablesTouched"]) for t in doc["templates"])
    assert touched == [("main.customer", "main.nation", "main.orders"), ("main.lineitem",),
                       ("main.lineitem", "main.orders"), ("main.orders",)]
    assert all(t["canonicalSql"] and t["dialect"] == "sqlite" for t in doc["templates"])


async def test_group_by_position_over_an_expression_is_grouping_by_its_column(scanned: Call, project: Path) -> None:
    monthly = [(MONTHLY.format(status=s), user, 10) for s, user in (("O", "carol"), ("F", "dave"))]
    write_log(project / "logs/queries.jsonl", [*workload(), *monthly])
    await scanned(INGEST)
    orders = await scanned('historic_sql.usage(connection="tpch", table="orders")')
    assert "o_orderdate" in [column for column, _ in orders["columnsByClause"]["groupBy"]]
    assert "o_orderdate" in orders["usage"]["commonGroupBys"]
