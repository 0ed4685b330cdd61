"""The scan pack end to end on real SQLite files: artifacts, diffs, shards, entity details, index, SQL."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from khive.progress import ProgressRecorder

pytestmark = pytest.mark.anyio


def run_table(run: Path, key: str) -> dict[str, Any]:
    """One table artifact of a run's tables.json, by ``db.name``."""
    listed = json.loads((run / "tables.json").read_text())["tables"]
    (found,) = [t for t in listed if f"{t['db']}.{t['name']}" == key]
    return dict(found)


def runs(project: Path) -> list[str]:
    root = project / "raw-sources/shop/live-database"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


async def test_first_scan_writes_artifacts_and_report(call: Any, project: Path) -> None:
    report = await call('scan.run(connection="shop")')
    assert report["counts"] == {"tables": 5, "views": 1, "columns": 20, "foreignKeys": 4,
                                "sampledColumns": report["counts"]["sampledColumns"],
                                "skippedColumns": report["counts"]["skippedColumns"]}
    assert report["counts"]["skippedColumns"] >= 1  # email is sensitive
    assert report["diffSummary"]["tables"]["added"] == ["main.categories", "main.customers", "main.order_items",
                                                        "main.order_totals", "main.orders", "main.products"]
    run = project / "raw-sources/shop/live-database" / report["syncId"]
    assert json.loads((run / "connection.json").read_text())["driver"] == "sqlite"
    orders = run_table(run, "main.orders")
    assert {"catalog", "db", "name", "kind", "comment", "estimatedRows", "descriptions", "columns",
            "foreignKeys"} <= set(orders)
    assert orders["foreignKeys"][0]["refTable"] == "customers"
    status = next(c for c in orders["columns"] if c["name"] == "status")
    assert "delivered" in status["samples"]["values"]
    email = next(c for c in run_table(run, "main.customers")["columns"]
                 if c["name"] == "email")
    assert email["samples"]["skipped"] == "sensitive-name"
    saved = json.loads((run / "scan-report.json").read_text())
    assert saved["syncId"] == report["syncId"] and saved["trigger"] == "cli"
    assert {"catalogMs", "samplesMs", "inferenceMs"} <= set(saved["timings"])


async def test_rescan_after_ddl_reports_the_diff(call: Any, project: Path) -> None:
    first = await call('scan.run(connection="shop")')
    db = sqlite3.connect(project / "shop.sqlite")
    db.executescript("ALTER TABLE customers ADD COLUMN country TEXT; DROP VIEW order_totals; "
                     "CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id));")
    db.close()
    second = await call('scan.run(connection="shop")')
    diff = second["diffSummary"]
    assert diff["tables"]["added"] == ["main.refunds"]
    assert diff["tables"]["deleted"] == ["main.order_totals"]
    assert diff["tables"]["modified"] == ["main.customers"]
    assert diff["tables"]["unchanged"] == 4
    assert "main.customers.country" in diff["columns"]["added"]
    assert second["previousSyncId"] == first["syncId"]
    explicit = await call(f'scan.diff(connection="shop", from="{first["syncId"]}", to="{second["syncId"]}")')
    assert explicit["diffSummary"] == diff
    assert (await call('scan.status(connection="shop")'))["history"] == [first["syncId"], second["syncId"]]


async def test_failed_scan_leaves_previous_intact(call: Any, project: Path) -> None:
    first = await call('scan.run(connection="shop")')
    (project / "shop.sqlite").write_bytes(b"this is not a database" * 100)
    failed = await call('scan.run(connection="shop")')
    assert "error" in failed
    assert runs(project) == [first["syncId"]]
    assert (await call('scan.status(connection="shop")'))["latest"]["syncId"] == first["syncId"]


async def test_shards_keep_what_people_and_tools_added(call: Any, project: Path) -> None:
    await call('scan.run(connection="shop")')
    shard = project / "_schema/shop/shop.main.yaml"
    yaml = YAML(typ="rt")
    data = yaml.load(shard.read_text())
    data["tables"]["orders"]["description"] = "One row per checkout."
    data["tables"]["orders"]["usage"] = {"frequencyTier": "hot"}
    data["tables"]["orders"]["columns"][2]["description"] = "placed, shipped, delivered or refunded"
    with shard.open("w") as handle:
        yaml.dump(data, handle)
    db = sqlite3.connect(project / "shop.sqlite")
    db.executescript("ALTER TABLE orders ADD COLUMN channel TEXT;")
    db.close()
    await call('scan.run(connection="shop")')
    merged = YAML(typ="safe").load(shard.read_text())["tables"]["orders"]
    assert merged["description"] == "One row per checkout."
    assert merged["usage"] == {"frequencyTier": "hot"}
    status = next(c for c in merged["columns"] if c["name"] == "status")
    assert status["description"] == "placed, shipped, delivered or refunded"
    assert [c["name"] for c in merged["columns"]][-1] == "channel"
    assert merged["foreignKeys"] == [{"columns": ["customer_id"], "refDb": "main", "refTable": "customers",
                                      "refColumns": ["id"]}]


async def test_scan_and_another_writer_never_lose_a_key(call: Any, runtime: Any, project: Path) -> None:
    await call('scan.run(connection="shop")')
    shard = "_schema/shop/shop.main.yaml"
    stop = threading.Event()
    written: list[int] = []

    def other_tool() -> None:  # what historic_sql does: add usage keys with a locked read-modify-write
        count = 0
        while not stop.is_set() and count < 200:
            count += 1

            def add(text: str | None, count: int = count) -> str:
                data = YAML(typ="safe").load(text or "") or {}
                data.setdefault("tables", {}).setdefault("orders", {})[f"note{count}"] = count
                import io

                out = io.StringIO()
                YAML(typ="safe").dump(data, out)
                return out.getvalue()

            runtime.files.update(shard, add)
            written.append(count)

    worker = threading.Thread(target=other_tool)
    worker.start()
    for _ in range(3):
        await call('scan.run(connection="shop")')
    stop.set()
    worker.join()
    orders = YAML(typ="safe").load((project / shard).read_text())["tables"]["orders"]
    assert all(orders.get(f"note{n}") == n for n in written)
    assert orders["columns"] and "syncId" not in orders


async def test_entity_details_and_tables(call: Any) -> None:
    await call('scan.run(connection="shop")')
    orders = await call('scan.entity(connection="shop", table="orders")')
    assert orders["primaryKey"] == ["id"]
    assert orders["foreignKeys"]["out"][0]["refTable"] == "customers"
    assert {ref["from"] for ref in orders["foreignKeys"]["in"]} == {"main.order_items"}
    column = await call('scan.entity(connection="shop", table="main.orders", column="status")')
    assert column["column"]["name"] == "status" and column["column"]["samples"]["values"][0] == "delivered"
    missing = await call('scan.entity(connection="shop", table="ordrs")')
    assert missing["error"]["code"] == "table_not_found" and "main.orders" in missing["error"]["message"]
    listed = await call('scan.tables(connection="shop")')
    assert [t["id"] for t in listed["tables"]][:2] == ["main.categories", "main.customers"]
    ranked = await call('scan.tables(connection="shop", query="order items quantity")')
    assert ranked["tables"][0]["id"] == "main.order_items"
    connections = (await call("scan.connections()"))["connections"]
    assert connections[0]["id"] == "shop" and connections[0]["tables"] == 6


async def test_unscanned_and_unknown_connections(call: Any) -> None:
    assert (await call('scan.status(connection="shop")'))["error"]["code"] == "scan_missing"
    assert (await call('scan.run(connection="nope")'))["error"]["code"] == "connection_not_found"


async def test_scan_feeds_the_index_with_tables_columns_and_fk_edges(call: Any, runtime: Any) -> None:
    await call('scan.run(connection="shop")')
    hits = runtime.index.search("customer segment", kinds=["column"], limit=5)
    assert hits[0].id == "column:shop:main.customers.segment"
    assert hits[0].metadata["tableRef"] == {"catalog": "shop", "db": "main", "name": "customers"}
    edges = runtime.index.edges("table:shop:main.orders")
    assert {"id": "table:shop:main.customers", "relation": "fk"} in edges
    assert {"id": "column:shop:main.orders.status", "relation": "contains"} in edges


async def test_progress_is_reported(runtime: Any) -> None:
    from khive.context import CLI, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    recorder = ProgressRecorder()
    envelope = await dispatch(parse('scan.run(connection="shop")'),
                              Context(runtime, "operator:ann", CLI, progress=recorder))
    assert envelope["status"] == "success"
    assert recorder.events[0][0] == 0 and recorder.events[-1][0] == 4
    assert any("sampled" in (message or "") for _, _, message in recorder.events)


async def test_scan_is_an_operator_verb(runtime: Any) -> None:
    from khive.context import MCP_STDIO, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    denied = await dispatch(parse('scan.run(connection="shop")'), Context(runtime, "agent:x", MCP_STDIO))
    assert denied["results"][0]["error"]["code"] == "permission_denied"


async def test_sql_execute_limits_and_refuses(call: Any) -> None:
    ok = await call('sql.execute(connection="shop", sql="SELECT status, COUNT(*) AS n FROM orders '
                    'GROUP BY status ORDER BY n DESC", limit=2)')
    assert [c["name"] for c in ok["columns"]] == ["status", "n"]
    assert len(ok["rows"]) == 2 and ok["truncated"] is True and ok["rows"][0][0] == "delivered"
    refused = await call('sql.execute(connection="shop", sql="DELETE FROM orders")')
    assert refused["error"]["code"] == "sql_refused"
    assert (await call('sql.validate(sql="SELECT 1; DROP TABLE orders", dialect="sqlite")'))["allowed"] is False


async def test_session_layer_refuses_a_write_past_a_disabled_parser(call: Any, project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from khive.connections import readonly, sqlgate

    def allow_everything(sql: str, dialect: str, **_: Any) -> Any:
        return sqlgate.GateDecision(True, "parser layer disabled by the test", "delete", "ok", (), ())

    monkeypatch.setattr(readonly, "check_sql", allow_everything)
    monkeypatch.setattr(readonly, "wrap_with_limit", lambda sql, dialect, limit: sql)
    result = await call('sql.execute(connection="shop", sql="DELETE FROM orders")')
    assert result["error"]["code"] == "read_only_violation"
    count = sqlite3.connect(project / "shop.sqlite").execute("SELECT count(*) FROM orders").fetchone()[0]
    assert count == 500


async def test_equal_columns_of_two_tables_keep_their_own_samples(call: Any, project: Path) -> None:
    """Equal columns share one artifact in a scan (the same name, position and type); their samples never do."""
    db = sqlite3.connect(project / "shop.sqlite")
    db.executescript("CREATE TABLE north (id INTEGER PRIMARY KEY, code TEXT); "
                     "CREATE TABLE south (id INTEGER PRIMARY KEY, code TEXT); "
                     "INSERT INTO north (code) VALUES ('alpha'), ('alpha'), ('beta'); "
                     "INSERT INTO south (code) VALUES ('gamma'), ('delta'), ('delta');")
    db.close()
    report = await call('scan.run(connection="shop")')
    run = project / "raw-sources/shop/live-database" / report["syncId"]
    assert (run / "tables.json").read_bytes().count(b"\n") == 1  # one line: programs read it, people use jq
    codes = {name: next(c for c in run_table(run, f"main.{name}")["columns"] if c["name"] == "code")
             for name in ("north", "south")}
    assert sorted(codes["north"]["samples"]["values"]) == ["alpha", "beta"]
    assert sorted(codes["south"]["samples"]["values"]) == ["delta", "gamma"]
    shard = YAML(typ="safe").load((project / "_schema/shop/shop.main.yaml").read_text())["tables"]
    shown = {name: next(c for c in shard[name]["columns"] if c["name"] == "code")["samples"]
             for name in ("north", "south")}
    assert shown == {"north": ["alpha", "beta"], "south": ["delta", "gamma"]}
    ids = [next(c for c in shard[name]["columns"] if c["name"] == "id") for name in ("north", "south")]
    assert ids[0] == ids[1] and ids[0]["primaryKey"] is True
    entity = await call('scan.entity(connection="shop", table="south", column="code")')
    assert "gamma" in str(entity)
