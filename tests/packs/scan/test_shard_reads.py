"""Reading the latest scan (ADR 0021): untouched shards come from the run's JSON, edited ones are parsed,
re-scans leave unchanged shards alone, and the report on disk carries every timing."""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fresh_runtime import op_in_fresh_runtime

from khive.bootstrap import open_runtime
from khive.project.store import FileStore
from packs.scan import shardread

pytestmark = pytest.mark.anyio

SHARD = "_schema/shop/shop.main.yaml"
READS = ('scan.tables(connection="shop")', 'scan.entity(connection="shop", table="orders")',
         'scan.entity(connection="shop", table="orders", column="status")')


async def cold(project: Path, *ops: str) -> list[dict[str, Any]]:
    """Each op in a fresh runtime: nothing cached, as in a new CLI process."""
    return [await op_in_fresh_runtime(project, op, {"KHIVE_PACKS": "core,scan"}) for op in ops]


class YamlParses:
    """Counts YAML parses of shards."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = shardread.safe_yaml

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(shardread, "safe_yaml", counting)


async def test_untouched_shard_reads_equal_parsed_reads(call: Callable[..., Awaitable[dict[str, Any]]],
                                                        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await call('scan.run(connection="shop")')
    parses = YamlParses(monkeypatch)
    fast = await cold(project, *READS)
    assert parses.count == 0  # rebuilt from the run's tables.json
    shard = project / SHARD
    shard.write_text(shard.read_text() + "# reviewed by ann\n")  # same data, no longer the scan's text
    parsed = await cold(project, *READS)
    assert parses.count == 1  # parsed once per edit; the next cold reads take the kept JSON
    assert parsed == fast
    assert fast[0]["count"] == 6 and fast[2]["column"]["samples"]["values"][0] == "delivered"


async def test_a_human_edit_to_the_shard_is_seen(call: Callable[..., Awaitable[dict[str, Any]]],
                                                 project: Path) -> None:
    await call('scan.run(connection="shop")')
    assert (await call('scan.entity(connection="shop", table="orders")'))["description"] is None  # warm cache
    shard = project / SHARD
    text = shard.read_text()
    assert "  orders:\n" in text
    shard.write_text(text.replace("  orders:\n", "  orders:\n    description: One row per checkout.\n"))
    warm = await call('scan.entity(connection="shop", table="orders")')
    (fresh, listed) = await cold(project, 'scan.entity(connection="shop", table="orders")',
                                 'scan.tables(connection="shop")')
    assert warm["description"] == fresh["description"] == "One row per checkout."
    assert next(t for t in listed["tables"] if t["id"] == "main.orders")["comment"] == "One row per checkout."


async def test_entity_shows_usage_written_into_the_shard(call: Callable[..., Awaitable[dict[str, Any]]],
                                                         project: Path) -> None:
    await call('scan.run(connection="shop")')
    usage = {"narrative": "Read daily by the revenue dashboard.", "frequencyTier": "hot",
             "commonFilters": ["status"], "commonGroupBys": ["customer_id"],
             "commonJoins": ["main.customers"], "staleSince": None}
    block = ("    usage:\n      narrative: Read daily by the revenue dashboard.\n      frequencyTier: hot\n"
             "      commonFilters:\n      - status\n      commonGroupBys:\n      - customer_id\n"
             "      commonJoins:\n      - main.customers\n      staleSince:\n")
    shard = project / SHARD
    shard.write_text(shard.read_text().replace("  orders:\n", "  orders:\n" + block))
    table, column = await cold(project, 'scan.entity(connection="shop", table="orders")',
                               'scan.entity(connection="shop", table="orders", column="status")')
    assert table["usage"] == usage and column["usage"] == usage
    db = sqlite3.connect(project / "shop.sqlite")  # new data: a new run, and the re-scan keeps the key
    db.execute("INSERT INTO categories VALUES (99, 'category 99')")
    db.commit()
    db.close()
    again = await call('scan.run(connection="shop")')
    assert again["syncId"] != table["syncId"]
    (after,) = await cold(project, 'scan.entity(connection="shop", table="orders")')
    assert after["usage"] == usage and after["syncId"] == again["syncId"]


async def test_rescan_of_an_unchanged_schema_leaves_the_shard_alone(
        call: Callable[..., Awaitable[dict[str, Any]]], project: Path) -> None:
    await call('scan.run(connection="shop")')
    shard = project / SHARD
    before = shard.stat()
    second = await call('scan.run(connection="shop")')
    after = shard.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert "syncId" not in shard.read_text()
    fast = await cold(project, 'scan.entity(connection="shop", table="orders")')
    assert fast[0]["syncId"] == second["syncId"]
    db = sqlite3.connect(project / "shop.sqlite")
    db.executescript("ALTER TABLE orders ADD COLUMN channel TEXT;")
    db.close()
    await call('scan.run(connection="shop")')
    assert shard.stat().st_ino != before.st_ino and "channel" in shard.read_text()
    (entity,) = await cold(project, 'scan.entity(connection="shop", table="orders")')
    assert entity["columns"][-1]["name"] == "channel"


async def test_report_on_disk_carries_every_timing(call: Callable[..., Awaitable[dict[str, Any]]],
                                                   project: Path) -> None:
    report = await call('scan.run(connection="shop")')
    run = project / "raw-sources/shop/live-database" / report["syncId"]
    saved = json.loads((run / "scan-report.json").read_text())
    assert set(saved["timings"]) == {"catalogMs", "samplesMs", "redactMs", "inferenceMs", "writeMs",
                                      "totalMs"}
    assert saved == report
    assert saved["timings"]["totalMs"] >= saved["timings"]["writeMs"]
    assert sorted(p.name for p in run.iterdir()) == ["connection.json", "scan-report.json", "tables.json"]


async def test_a_run_in_the_old_layout_is_still_read(call: Callable[..., Awaitable[dict[str, Any]]],
                                                     project: Path) -> None:
    first = await call('scan.run(connection="shop")')
    run = project / "raw-sources/shop/live-database" / first["syncId"]
    listed = json.loads((run / "tables.json").read_text())["tables"]
    (run / "tables").mkdir()
    for table in listed:  # what scans wrote before ADR 0021: one file per table
        (run / "tables" / f"{table['db']}-{table['name']}.json").write_text(json.dumps(table))
    (run / "tables.json").unlink()
    second = await call('scan.run(connection="shop")')
    assert second["diffSummary"]["tables"]["unchanged"] == 6
    diff = await call(f'scan.diff(connection="shop", from="{first["syncId"]}")')
    assert diff["diffSummary"]["tables"]["unchanged"] == 6


async def test_the_collector_is_back_after_a_scan(call: Callable[..., Awaitable[dict[str, Any]]],
                                                  project: Path) -> None:
    assert gc.isenabled()
    await call('scan.run(connection="shop")')
    assert gc.isenabled()
    (project / "shop.sqlite").write_bytes(b"not a database" * 100)
    assert "error" in await call('scan.run(connection="shop")')
    assert gc.isenabled()
    gc.disable()
    try:  # someone else's pause stays theirs
        assert "error" in await call('scan.run(connection="shop")')
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_a_shard_json_cannot_hold_is_parsed_every_time(call: Callable[..., Awaitable[dict[str, Any]]],
                                                            project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime

    await call('scan.run(connection="shop")')
    shard = project / SHARD
    shard.write_text(shard.read_text().replace("  orders:\n", "  orders:\n    reviewed: 2026-11-30\n"))
    parses = YamlParses(monkeypatch)
    first, second = await cold(project, 'scan.entity(connection="shop", table="orders")',
                               'scan.tables(connection="shop")')
    assert parses.count == 2  # a date would come back from JSON as a string: not kept
    reader = shardread.ShardReader(FileStore(project), "shop", first["syncId"], dict)
    assert reader.document(SHARD, shard.read_bytes())["tables"]["orders"]["reviewed"] == datetime.date(2026, 11, 30)
    assert second["count"] == 6


async def test_the_index_reads_untouched_shards_from_the_run(call: Callable[..., Awaitable[dict[str, Any]]],
                                                            runtime: Any, project: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    parses = YamlParses(monkeypatch)
    await call('scan.run(connection="shop")')
    hits = runtime.index.search("customer segment", kinds=["column"], limit=5)
    assert hits[0].id == "column:shop:main.customers.segment" and parses.count == 0
    shard = project / SHARD
    shard.write_text(shard.read_text().replace("  orders:\n", "  orders:\n    description: zanzibar checkouts\n"))
    hits = runtime.index.search("zanzibar", kinds=["table"], limit=5)
    assert hits[0].id == "table:shop:main.orders" and parses.count == 1


def index_rows(project: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row of the retrieval index, table by table (FTS5's own tables included)."""
    db = sqlite3.connect(project / ".khive" / "index.sqlite")
    try:
        names = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: db.execute(f'SELECT * FROM "{name}" ORDER BY 1').fetchall() for name in names}
    finally:
        db.close()


async def built_index(project: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The index built from nothing in a fresh runtime, as a first search after a scan builds it."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{project / '.khive' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)
    runtime = open_runtime(project, {"KHIVE_PACKS": "core,scan"})
    try:
        runtime.index.refresh()
    finally:
        await runtime.aclose()
    return index_rows(project)


async def test_untouched_shard_indexes_as_its_parsed_entries(call: Callable[..., Awaitable[dict[str, Any]]],
                                                            project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index reads an untouched shard's tables straight from the run: the rows equal the parsed shard's."""
    await call('scan.run(connection="shop")')
    parses = YamlParses(monkeypatch)
    from_run = await built_index(project)
    assert parses.count == 0
    shard = project / SHARD
    shard.write_text(shard.read_text() + "# reviewed by ann\n")  # same entries, no longer the scan's text
    parsed = await built_index(project)
    assert parses.count == 1
    assert parsed.pop("items") != from_run.pop("items")  # the file's stamp and digest: its text changed
    assert parsed == from_run
    assert len(from_run["docs"]) > 6  # six tables and their columns


async def test_an_edit_to_one_shard_reaches_the_built_index(call: Callable[..., Awaitable[dict[str, Any]]],
                                                            project: Path) -> None:
    """An index built from the run, then one shard edited: the next refresh reads that shard parsed, and
    its table's document says what the person wrote while the other tables' stay as built."""
    await call('scan.run(connection="shop")')
    await built_index(project)
    shard = project / SHARD
    text = shard.read_text()
    edited = text.replace("  orders:\n", "  orders:\n    description: every purchase a shopper placed\n", 1)
    assert edited != text
    shard.write_text(edited)
    runtime = open_runtime(project, {"KHIVE_PACKS": "core,scan"})
    try:
        before = {doc_id: runtime.index.get(doc_id) for doc_id in ("table:shop:main.customers",
                                                                    "column:shop:main.orders.status")}
        runtime.index.refresh()
        orders = runtime.index.get("table:shop:main.orders")
        assert orders is not None and orders["metadata"]["description"] == "every purchase a shopper placed"
        assert [hit.id for hit in runtime.index.search("purchase shopper", limit=1)] == ["table:shop:main.orders"]
        after = {doc_id: runtime.index.get(doc_id) for doc_id in before}
    finally:
        await runtime.aclose()
    assert after == before and all(before.values())
