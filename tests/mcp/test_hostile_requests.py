"""Hostile requests through the real stack: an MCP client talks to ``khive mcp`` over stdio, which
forwards every call to the warm daemon (``KHIVE_DAEMON_STRICT=1``: never a silent local run).

For random and hostile request texts, JSON forms and argument values, the properties are:
- every answer is a typed envelope (each failed op carries a lower_snake error code, never
  ``internal_error``) or a typed JSON-RPC error (``invalid_params`` with ``data.reason``);
- the daemon that answered the first call is still alive and answering after every example;
- every op of every envelope has its audit event, and every wiki page on disk was written by an op
  the audit records as ``ok``.

Bounded: ``KHIVE_FUZZ_EXAMPLES`` (default 120) examples, a hard time cap per call.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import duckdb
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import KHIVE, audit_events, clean_env

from khive.audit.events import AuditEvent
from khive.mcp_server import INVALID_PARAMS, TOOL_NAME
from khive.scaffold import init_project

pytestmark = [pytest.mark.slow]

EXAMPLES = int(os.environ.get("KHIVE_FUZZ_EXAMPLES", "120"))
CALL_TIMEOUT_S = 30.0
ERROR_CODE = re.compile(r"^[a-z][a-z0-9_]*$")

VERBS = ("ping", "verbs", "wiki.write", "wiki.read", "wiki.search", "wiki.list", "wiki.delete",
         "sl.list", "sl.search", "sl.read", "sl.write", "sl.validate", "sl.dictionary_search", "sl.compile",
         "sl.query", "sl.bootstrap", "scan.connections", "scan.run", "scan.status", "scan.tables", "scan.entity",
         "scan.diff", "sql.execute", "sql.validate", "discover.search", "discover.lookup", "discover.doctor",
         "historic_sql.status", "historic_sql.usage", "historic_sql.patterns", "historic_sql.probe",
         "historic_sql.units", "historic_sql.submit", "audit.query", "no.such_verb")
ARG_NAMES = ("connection", "sql", "query", "key", "id", "table", "body", "summary", "source", "name", "limit",
             "timeout_s", "measures", "dimensions", "kinds", "budget_tokens", "depth", "yaml", "value", "echo",
             "tags", "refs", "relations", "include", "help", "unit", "output", "scope", "column", "format")


# --- the project the daemon serves ----------------------------------------------------------------

def make_project(root: Path) -> Path:
    init_project(root, "fuzzer")
    data = root / "data"
    data.mkdir()
    with duckdb.connect(str(data / "shop.duckdb")) as db:
        db.execute("CREATE SCHEMA sales")
        db.execute("CREATE TABLE sales.customers (id INTEGER PRIMARY KEY, name VARCHAR, segment VARCHAR)")
        db.execute("CREATE TABLE sales.orders (id BIGINT PRIMARY KEY, customer_id INTEGER REFERENCES "
                   "sales.customers(id), amount DECIMAL(18, 4), big HUGEINT, raw BLOB, span INTERVAL, "
                   "tags VARCHAR[], placed TIMESTAMP)")
        db.execute("INSERT INTO sales.customers VALUES (1, 'Ada', 'smb'), (2, 'Grace', 'enterprise')")
        db.execute("INSERT INTO sales.orders VALUES (1, 1, 12.5000, 170141183460469231731687303715884105727, "
                   "'\\x00\\xff'::BLOB, INTERVAL '14 months 3 days', ['a', 'b'], 'infinity'), "
                   "(2, 2, 0.0001, -1, '', INTERVAL '1 microsecond', [], '2024-01-01 12:00:00')")
    with sqlite3.connect(data / "music.sqlite") as db:
        db.execute("CREATE TABLE tracks (id INTEGER PRIMARY KEY, title TEXT, cover BLOB, plays INTEGER)")
        db.execute("INSERT INTO tracks VALUES (1, 'Song', x'00ff', 9223372036854775807), (2, NULL, NULL, -1)")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", (
        "connections:\n"
        "  shop: {driver: duckdb, path: data/shop.duckdb}\n"
        "  music: {driver: sqlite, path: data/music.sqlite}\n")), encoding="utf-8")
    assert "shop:" in config.read_text(), "the starter khive.yaml no longer has 'connections: {}'"
    env = clean_env(KHIVE_NO_DAEMON="1")
    for ops in ('scan.run(connection="shop")', 'scan.run(connection="music")', 'sl.bootstrap(connection="shop")',
                'wiki.write(key="sales/orders", summary="How we count orders", body="Count paid orders.")'):
        done = subprocess.run([str(KHIVE), "--project", str(root), "request", ops], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return root


@dataclass
class Session:
    portal: BlockingPortal
    client: Client
    home: Path
    project: Path
    daemon_pid: int = 0
    answered: list[dict[str, Any]] = field(default_factory=list)  # every envelope we got back

    def call(self, ops: str) -> dict[str, Any] | MCPError:
        async def one() -> dict[str, Any] | MCPError:
            with anyio.fail_after(CALL_TIMEOUT_S):
                try:
                    result = await self.client.call_tool(TOOL_NAME, {"ops": ops})
                except MCPError as exc:
                    return exc
            envelope = result.structured_content
            assert isinstance(envelope, dict), f"no structured envelope for {ops!r}: {result.content!r}"
            return envelope

        return self.portal.call(one)

    def live_daemon_pid(self) -> int:
        try:
            pid = int((self.home / "khived.pid").read_text().strip())
        except (OSError, ValueError):
            return 0
        return pid if Path(f"/proc/{pid}").exists() else 0


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    import tempfile

    project = make_project(tmp_path_factory.mktemp("fuzz") / "project")
    home = Path(tempfile.mkdtemp(prefix="khive-fuzz-", dir="/tmp"))  # socket paths are short
    env = {key: value for key, value in clean_env().items() if key not in ("KHIVE_NO_DAEMON",)}
    env.update(KHIVE_HOME=str(home), KHIVE_SOCKET=str(home / "khived.sock"), KHIVE_DAEMON_STRICT="1",
               KHIVE_DAEMON_SPAWN_WAIT="20")
    params = StdioServerParameters(command=str(KHIVE), args=["--project", str(project), "mcp"], cwd=project, env=env)
    errlog = (home / "mcp-stderr.log").open("w")
    try:
        with start_blocking_portal() as portal:
            client = Client(stdio_client(params, errlog=errlog),
                            client_info=types.Implementation(name="fuzzer", version="0"))
            with portal.wrap_async_context_manager(client) as entered:
                state = Session(portal, entered, home, project)
                first = state.call("ping()")
                assert isinstance(first, dict) and first["status"] == "success", first
                state.daemon_pid = state.live_daemon_pid()
                assert state.daemon_pid, "khive mcp did not go through a daemon"
                yield state
    finally:
        errlog.close()
        subprocess.run([str(KHIVE), "daemon", "stop"], env=env, capture_output=True, timeout=30, check=False)


# --- strategies -------------------------------------------------------------------------------------

LONE_SURROGATES = ("\\ud800", "\\udfff", "a\\ud83d", "\\ud800\\udc00x\\udc00")
HOSTILE_TEXT = st.sampled_from([
    "", " ", "\x00", "a\x00b", "..", "../../etc/passwd", "/etc/hostname", "~root", "C:\\windows", "x" * 10_000,
    "SELECT 1 ?", "SELECT * FROM pg_stat_statements", "DROP TABLE sales.orders", "SELECT 1; SELECT 2",
    "sales.orders", "sales.orders.amount", "orders.order_count", "shop", "music", "table:shop:sales.orders",
    "a: &a [*a, *a]\nb: *a", "{{{{", "'; --", "\u202eevil", "名前", "😀" * 100, "\\", "\"", "$prev", "NaN",
    "-1", "9" * 400, "wiki/../../x", "sales/orders", "users/someone/page", "\\$prev.x[0]", "$previous",
])
REF_INDEXES = ("0", "9" * 19, "9" * 21, "9" * 5000)  # 5000 digits: more than Python converts to an int
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=2**63 - 2, max_value=2**70),
    st.integers(min_value=-(2**70), max_value=-(2**63) + 2),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -1e-308, 0.0, -0.0]),
    st.text(max_size=40), HOSTILE_TEXT,
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=6)),
                      max_leaves=20)


def deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def ops(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    verb = draw(st.sampled_from(VERBS))
    names = draw(st.lists(st.sampled_from(ARG_NAMES), max_size=4, unique=True))
    args = {name: draw(VALUES) for name in names}
    if draw(st.booleans()):
        args["help"] = True
    if draw(st.integers(0, 30)) == 0:
        args[draw(st.sampled_from(ARG_NAMES))] = deep(draw(st.integers(60, 140)))
    return verb, args


def render_dsl(verb: str, args: dict[str, Any]) -> str:
    """DSL arguments are JSON values; ASCII escapes keep the MCP client's own JSON valid."""
    rendered = (f"{name}={json.dumps(value, ensure_ascii=True)}" for name, value in args.items())
    return f"{verb}(" + ", ".join(rendered) + ")"


@st.composite
def requests(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["dsl", "json", "text", "mutated", "surrogate", "ref"]))
    batch = draw(st.lists(ops(), min_size=1, max_size=5))
    if kind == "json":
        shape = draw(st.sampled_from(["single", "parallel", "chain"]))
        items = [{"verb": verb, "args": args} for verb, args in batch]
        body: Any = items[0] if shape == "single" else items if shape == "parallel" else {"chain": items}
        return json.dumps(body)
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "ref":  # a reference, as DSL text or in the JSON form
        index = draw(st.sampled_from(REF_INDEXES))
        if draw(st.booleans()):
            return f"ping(echo=1) | ping(echo=$prev.echo[{index}])"
        return json.dumps({"chain": [{"verb": "ping", "args": {"echo": [1]}},
                                     {"verb": "ping", "args": {"echo": f"$prev.echo[{index}]"}}]})
    if kind == "surrogate":  # escapes in the text: the MCP client's own JSON must stay valid
        return 'ping(echo="' + draw(st.sampled_from(LONE_SURROGATES)) + '")'
    rendered = [render_dsl(verb, args) for verb, args in batch]
    shape = draw(st.sampled_from(["single", "parallel", "chain"]))
    text = rendered[0] if shape == "single" else ("[" + ", ".join(rendered) + "]" if shape == "parallel"
                                                   else " | ".join(rendered))
    if kind == "mutated" and text:
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + draw(st.text(min_size=1, max_size=3)) + text[at + 1:]
    return text


# --- the properties ---------------------------------------------------------------------------------

def check_answer(ops: str, answer: dict[str, Any] | MCPError) -> None:
    if isinstance(answer, MCPError):
        assert answer.code == INVALID_PARAMS, f"{ops!r}: JSON-RPC error {answer.code}: {answer}"
        assert isinstance(answer.data, dict) and answer.data.get("reason"), f"{ops!r}: untyped error {answer.data}"
        return
    assert set(answer) >= {"results", "summary", "status", "requestId"}, answer
    assert answer["status"] in ("success", "partial", "failed")
    for entry in answer["results"]:
        assert isinstance(entry.get("verb"), str) and isinstance(entry.get("ok"), bool), entry
        if entry["ok"] or entry.get("aborted"):
            continue
        code = entry["error"]["code"]
        assert ERROR_CODE.match(code), f"{ops!r}: error code {code!r} is not lower_snake"
        assert code != "internal_error", f"{ops!r}: {entry['error']['message']}"
        assert "Traceback" not in entry["error"]["message"], entry["error"]


def test_hostile_requests_never_hurt_the_daemon_or_skip_the_audit(session: Session) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(text=requests())
    def one(text: str) -> None:
        answer = session.call(text)
        check_answer(text, answer)
        if isinstance(answer, dict):
            session.answered.append(answer)
        assert session.live_daemon_pid() == session.daemon_pid, f"the daemon died or was replaced after {text!r}"

    one()
    alive = session.call("ping(echo=\"still here\")")
    assert isinstance(alive, dict) and alive["results"][0]["ok"], alive
    assert session.live_daemon_pid() == session.daemon_pid

    events = anyio.run(lambda: audit_events(session.project, limit=1_000_000))
    by_op = {(event.request_id, event.op_index): event for event in events}
    for envelope in session.answered:
        for index, entry in enumerate(envelope["results"]):
            event = by_op.get((envelope["requestId"], index))
            assert event is not None, f"no audit event for op {index} ({entry['verb']}) of {envelope['requestId']}"
            assert event.verb == entry["verb"]
            if entry["ok"]:
                assert event.outcome == "ok", (event, entry)
    pages_on_disk = wiki_pages(session.project)
    written = {str(event.args_redacted.get("key")) for event in events if verb_wrote(event)}
    assert pages_on_disk <= written, f"pages without an ok audit event: {pages_on_disk - written}"


def verb_wrote(event: AuditEvent) -> bool:
    return event.verb == "wiki.write" and event.outcome == "ok"


def wiki_pages(project: Path) -> set[str]:
    root = project / "wiki" / "global"
    return {str(path.relative_to(root).with_suffix("")) for path in root.rglob("*.md")}
