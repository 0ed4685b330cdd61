"""Every verb driven with hostile argument values: each answer is a typed error or a result, never
``internal_error`` (a pack bug) and never an envelope that cannot be encoded.

The project is real: an SQLite shop, scanned, with a bootstrapped semantic layer and a wiki page,
so handlers get past their first lookups and meet the values where they use them (paths, SQL, YAML).
Requests go through the parser in their JSON form, as a client sends them; values the parser
refuses (lone surrogates, integers beyond 64 bits) must be refused there.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import DslSyntaxError
from khive.runtime import Runtime
from khive.scaffold import init_project

TEXT = ["", " ", "\0", "a\0b", "..", "../x", "../../etc/passwd", "/etc/passwd", "/nonexistent/x", ".", "-",
        "x" * 10_000, "ü" * 300, "é∂🙂", "a/b/../c", "a\\b", "a\nb", "%s%n", "'", '"', "*", "[", "SELECT 1 ?",
        "SELECT '\0'", "\ud800", "x\udcff"]
NUMBERS = [-1, 0, -(2**63), 2**64 - 1, 2**64, 1e308, -1e308, 10**18]
BASE = {"connection": "shop", "key": "sales/orders", "id": "main.orders", "query": "orders", "sql": "SELECT 1",
        "table": "main.orders", "name": "orders", "path": "x", "unit": "u", "prompt": "p", "tag": "t",
        "measures": ["orders.count"], "yaml": "name: orders\n"}
SKIP = {"historic_sql.ingest"}  # needs a query history; its reader paths have their own tests
ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*\Z")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("hostile") / "proj"
    init_project(root, "ann")
    db = sqlite3.connect(root / "shop.sqlite")
    db.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                     "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),"
                     " status TEXT, total NUMERIC(10, 2));"
                     "INSERT INTO customers VALUES (1, 'a'), (2, 'b');"
                     "INSERT INTO orders VALUES (1, 1, 'paid', 9.5), (2, 2, 'open', 3);")
    db.commit()
    db.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  shop: {driver: sqlite, path: shop.sqlite}\n"))
    setup = ['scan.run(connection="shop")', 'sl.bootstrap(connection="shop")',
             'wiki.write(key="sales/orders", body="orders", refs=["sales/x"])']
    runtime = open_runtime(root, {})
    try:
        for text in setup:
            envelope = anyio.run(dispatch, parse(text), Context(runtime, "operator:ann", CLI))
            assert envelope["status"] == "success", envelope
    finally:
        anyio.run(runtime.aclose)
    yield root


def hostile_values(annotation: str) -> list[Any]:
    values: list[Any] = [*TEXT, None, True, {"k": "\0"}, ["\0", "..", "x" * 10_000]]
    if "int" in annotation or "float" in annotation:
        values += NUMBERS
    if "list" in annotation:
        values += [[value] for value in TEXT]
    if "dict" in annotation or "Relations" in annotation:
        values += [{value: 1} for value in TEXT] + [{"supersedes": [value]} for value in TEXT]
    return values


def verb_names() -> list[str]:
    runtime = open_runtime_for_listing()
    try:
        return sorted(set(runtime.registry.verbs) - SKIP)
    finally:
        anyio.run(runtime.aclose)


def open_runtime_for_listing() -> Runtime:
    from khive.project.config import KhiveConfig
    from khive.runtime import build_runtime

    return build_runtime(Path("/nonexistent-khive-project"), KhiveConfig(), {}, audit=_NoAudit())


class _NoAudit:
    async def append(self, events: Any) -> None: ...

    async def query(self, query: Any) -> list[Any]:
        return []

    async def aclose(self) -> None: ...


def request_text(verb: str, args: dict[str, Any]) -> str:
    return json.dumps({"verb": verb, "args": args}, ensure_ascii=False)


def carried(value: Any) -> bool:
    """Whether the parser must accept ``value`` (no lone surrogate, integers within 64 bits)."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("verb", verb_names())
def test_hostile_values_give_typed_errors(project: Path, verb: str) -> None:
    runtime = open_runtime(project, {})
    problems: list[str] = []

    async def run() -> None:
        fields = runtime.registry.verbs[verb].params.model_fields
        base = {name: BASE.get(name, "x") for name, info in fields.items() if info.is_required()}
        for name, info in fields.items():
            for value in hostile_values(str(info.annotation)):
                args = {**base, name: value}
                text = request_text(verb, args)
                try:
                    request = parse(text)
                except DslSyntaxError as exc:
                    if carried(args):
                        problems.append(f"{name}={value!r:.40}: refused by the parser ({exc.reason})")
                    continue
                if not carried(args):
                    problems.append(f"{name}={value!r:.40}: the parser let an uncarriable value through")
                    continue
                with anyio.fail_after(60):
                    envelope = await dispatch(request, Context(runtime, "operator:ann", CLI))
                orjson.dumps(envelope)  # the answer can travel
                result = envelope["results"][0]
                if not result["ok"]:
                    error = result["error"]
                    if error["code"] == "internal_error" or not ERROR_CODE.match(error["code"]):
                        problems.append(f"{name}={value!r:.40}: {error['code']}: {error['message'][:200]}")
                    if "Traceback" in error["message"]:
                        problems.append(f"{name}={value!r:.40}: a traceback in the message")

    try:
        anyio.run(run)
    finally:
        anyio.run(runtime.aclose)
    assert problems == []
