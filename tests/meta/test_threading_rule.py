"""Keep the threading rule (ADR 0027) honest.

1. Every ``async def`` handler of every installed pack is on the reviewed allow-list below (and every
   entry still is one): new verbs are plain functions, which the dispatcher runs in a worker thread.
2. A tour runs every verb of every pack through ``dispatch`` on a real project (a SQLite warehouse,
   scanned, with a semantic layer, query history and wiki pages in git) while a guard records each
   blocking call made on the event loop's thread: file, path and git I/O, SQLite connections, the
   index, YAML and SQL parsing, database drivers, sleeps. The tour must find none, and must cover
   every registered verb, so a new verb joins it.
"""

from __future__ import annotations

import functools
import json
import pathlib
import sqlite3
import subprocess
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlglot.parser
from pydantic import BaseModel
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.hookspecs import PackInfo, hookimpl
from khive.index.engine import RetrievalIndex
from khive.plugins import build_plugin_manager, collect_verbs
from khive.project.store import FileStore
from khive.runtime import Runtime
from khive.scaffold import init_project
from khive.verbs import Params, Verb

# Async handlers: each needs the event loop itself, and runs every blocking step through ctx.run_blocking.
ORCHESTRATORS = {
    "ping": "answered by the loop itself, so it never waits for a worker thread",
    "verbs": "reads the in-memory registry only",
    "audit.query": "awaits the AuditStore API, which is async (the PostgreSQL store awaits its driver)",
    "scan.run": "reports progress between its steps",
    "historic_sql.ingest": "reports progress and waits on the caller's MCP sampling",
    "historic_sql.digest": "waits on the caller's MCP sampling",
    "sql.execute": "awaits the database in a worker thread (the gate parses in one too)",
    "sl.query": "compiles in a worker, then runs as sql.execute does",
}


def test_async_handlers_are_exactly_the_reviewed_orchestrators() -> None:
    registry = collect_verbs(build_plugin_manager()[0])
    on_loop = {name for name, verb in registry.verbs.items() if verb.runs_on_loop}
    assert on_loop - ORCHESTRATORS.keys() == set(), (
        "these verbs have async handlers: make them plain `def` (the dispatcher runs them in a worker "
        "thread), or review them and add them to ORCHESTRATORS with the reason they need the loop")
    assert ORCHESTRATORS.keys() - on_loop == set(), "stale ORCHESTRATORS entries: these are not async any more"


# -- the guard ------------------------------------------------------------------------------------

class LoopGuard:
    """Records blocking calls made on the event loop's thread while ``watching``."""

    TARGETS: tuple[tuple[Any, tuple[str, ...]], ...] = (
        (pathlib.Path, ("read_text", "read_bytes", "write_text", "write_bytes", "open", "iterdir", "glob",
                        "rglob", "exists", "is_file", "is_dir", "stat", "mkdir", "unlink")),
        (FileStore, ("read_text", "write_text", "update", "delete", "exists", "list")),
        (RetrievalIndex, ("refresh", "search", "edges", "get", "rows", "documents", "existing", "incoming",
                          "edge_problems", "fields", "covered_terms", "item_errors", "count")),
        (Runtime, ("open_driver", "index")),
        (YAML, ("load", "load_all", "dump")),
        (sqlglot.parser.Parser, ("parse",)),
        (sqlite3, ("connect",)),
        (subprocess, ("run", "Popen")),
        (time, ("sleep",)),
    )

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loop_thread = threading.get_ident()  # the async test runs on the loop's thread
        self.active = False
        self.calls: list[str] = []
        for owner, names in self.TARGETS:
            for name in names:
                if hasattr(owner, name):
                    self._wrap(monkeypatch, owner, name)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
        original = owner.__dict__.get(name, getattr(owner, name)) if isinstance(owner, type) else getattr(owner, name)
        label = f"{getattr(owner, '__name__', owner)}.{name}"
        if isinstance(original, property):
            assert original.fget is not None
            monkeypatch.setattr(owner, name, property(self._watched(original.fget, label)))
        else:
            monkeypatch.setattr(owner, name, self._watched(original, label))

    def _watched(self, function: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def watched(*args: Any, **kwargs: Any) -> Any:
            if self.active and threading.get_ident() == self.loop_thread:
                callers = [f"{frame.filename.rsplit('/', 2)[-1]}:{frame.lineno} {frame.name}"
                           for frame in traceback.extract_stack()[:-1]
                           if "/khive/" in frame.filename or "/packs/" in frame.filename]
                self.calls.append(f"{label} on the loop, from {' <- '.join(reversed(callers[-4:]))}")
            return function(*args, **kwargs)

        return watched

    @contextmanager
    def watching(self) -> Iterator[None]:
        self.active = True
        try:
            yield
        finally:
            self.active = False


# -- the guard can fail ------------------------------------------------------------------------------

class PeekParams(Params):
    path: str


async def blocking_peek(params: PeekParams, ctx: Context) -> dict[str, Any]:
    """An async handler that breaks the rule: it reads a file on the loop."""
    return {"size": len(Path(params.path).read_text())}


def plain_peek(params: PeekParams, ctx: Context) -> dict[str, Any]:
    return {"size": len(Path(params.path).read_text())}


class PeekPack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="peek", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("peek.async", PeekParams, blocking_peek, "Reads a file on the loop."),
                Verb("peek.plain", PeekParams, plain_peek, "Reads a file in a worker.")]


@pytest.mark.anyio
async def test_the_guard_sees_a_blocking_async_handler_and_not_a_plain_one(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    init_project(root, "ann")
    runtime = open_runtime(root, {"KHIVE_PACKS": "core"}, extra_plugins=[PeekPack()])
    guard = LoopGuard(monkeypatch)
    target = root / "khive.yaml"
    try:
        for verb, seen in (("peek.plain", False), ("peek.async", True)):
            guard.calls.clear()
            request = parse(f'{verb}(path="{target}")')
            with guard.watching():
                envelope = await dispatch(request, Context(runtime, "operator:ann", CLI))
            assert envelope["status"] == "success", envelope
            assert any("read_text" in call for call in guard.calls) is seen, (verb, guard.calls)
    finally:
        await runtime.aclose()


# -- the tour ------------------------------------------------------------------------------------

SHOP = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, segment TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), status TEXT,
                     total NUMERIC, created_at TEXT);
INSERT INTO customers VALUES (1, 'Acme Corp', 'enterprise'), (2, 'Bobs Bikes', 'smb');
INSERT INTO orders VALUES (1, 1, 'shipped', 10.5, '2026-01-02'), (2, 2, 'refunded', 20.0, '2026-02-03'),
                          (3, 1, 'shipped', 7.25, '2026-03-04');
"""
CONFIG = """wiki:
  git_commit: true
connections:
  shop:
    driver: sqlite
    path: shop.sqlite
    historicSql: {enabled: true, queryLog: logs/queries.jsonl, minExecutions: 1, windowDays: 3650,
                  provider: agent}
"""
QUERIES = ["SELECT c.segment, SUM(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1",
           "SELECT status, COUNT(*) FROM orders WHERE created_at >= '2026-01-01' GROUP BY status"]
USAGE = {"narrative": "Orders are summed by segment.", "frequencyTier": "high", "commonFilters": ["created_at"],
         "commonGroupBys": ["status"], "commonJoins": []}

# Every verb of every pack, in an order where each finds what it needs. {unit} is filled in on the way.
TOUR = [
    'ping(echo=1)', 'verbs()', 'scan.connections()', 'scan.run(connection="shop")', 'scan.status(connection="shop")',
    'scan.tables(connection="shop", query="orders")', 'scan.entity(connection="shop", table="orders")',
    'scan.run(connection="shop")', 'scan.diff(connection="shop")',
    'sql.validate(sql="SELECT 1", dialect="sqlite")', 'sql.execute(connection="shop", sql="SELECT * FROM orders")',
    'sl.bootstrap(connection="shop")', 'sl.list()', 'sl.search(query="orders total")',
    'sl.read(name="orders", format="json")', 'sl.validate(connection="shop", yaml="name: extra\\ntable: orders\\n")',
    'sl.write(connection="shop", yaml="name: extra\\ntable: orders\\n")', 'sl.dictionary_search(query="Acme Corp")',
    'sl.compile(connection="shop", measures=["orders.orders_count"])',
    'sl.query(connection="shop", measures=["orders.orders_count"])',
    'wiki.write(key="sales/orders", summary="How we count orders", body="Count shipped orders.", '
    'sl_refs=["orders"])',
    'wiki.read(key="sales/orders")', 'wiki.search(query="count orders")', 'wiki.list()',
    'historic_sql.probe(connection="shop")', 'historic_sql.ingest(connection="shop")',
    'historic_sql.status(connection="shop")', 'historic_sql.units(connection="shop")',
    'historic_sql.submit(unit="{unit}", output={usage})', 'historic_sql.digest(connection="shop")',
    'historic_sql.usage(connection="shop", table="orders")', 'historic_sql.patterns()',
    'discover.search(query="orders by segment")', 'discover.lookup(id="main.orders")', 'discover.doctor()',
    'overview()',
    'sl.import_dbt(path="dbt", connection="shop", dry_run=true)', 'wiki.delete(key="sales/orders")',
    'audit.query(limit=5)',
]


@pytest.fixture
def tour_project(tmp_path: Path) -> Path:
    root = tmp_path / "tour"
    init_project(root, "ann")
    db = sqlite3.connect(root / "shop.sqlite")
    db.executescript(SHOP)
    db.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", "") + CONFIG)
    log = root / "logs" / "queries.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps({"sql": sql, "user": "ann", "started_at": f"2026-11-2{n}T10:00:00Z",
                                       "duration_ms": 40, "rows": 2}) + "\n" for sql in QUERIES for n in range(3)))
    models = root / "dbt" / "models"
    models.mkdir(parents=True)
    (root / "dbt" / "dbt_project.yml").write_text("name: shop\nversion: '1'\n")
    (models / "semantic.yml").write_text(
        "semantic_models:\n  - name: payments\n    model: ref('orders')\n    entities: [{name: id, type: primary}]\n"
        "    measures: [{name: paid, agg: sum, expr: total}]\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
async def tour_runtime(tour_project: Path) -> AsyncIterator[Runtime]:
    runtime = open_runtime(tour_project, {})
    yield runtime
    await runtime.aclose()


@pytest.mark.anyio
async def test_no_verb_blocks_the_event_loop(tour_runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = LoopGuard(monkeypatch)
    ctx = Context(tour_runtime, "operator:ann", CLI, presentation="verbose")
    ran: set[str] = set()
    unit = ""
    for text in TOUR:
        request = parse(text.format(unit=unit, usage=json.dumps(USAGE)))
        with guard.watching():
            envelope = await dispatch(request, ctx)
        [result] = envelope["results"]
        assert result["ok"], (text, result)
        ran.add(result["verb"])
        if result["verb"] == "historic_sql.units":
            unit = next(u["unit"] for u in result["result"]["units"] if u["target"] == "main.orders")
    assert guard.calls == [], "blocking calls on the event loop:\n" + "\n".join(dict.fromkeys(guard.calls))
    assert set(tour_runtime.registry.verbs) - ran == set(), "add these verbs to the tour"


def test_tour_results_are_plain_data() -> None:
    """The guard wraps classes the tour's answers never contain (a BaseModel would hide a lazy load)."""
    assert not issubclass(FileStore, BaseModel) and not issubclass(RetrievalIndex, BaseModel)
