"""Query history passes the core redaction service (ADR 0035): templates, digests whoever wrote them, pattern
pages, and a project's own patterns; ordinary analytics SQL (TPC-H, TPC-DS) comes through unchanged."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hsql_project import make_project, workload, write_log
from ruamel.yaml import YAML

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.redact import BUILTIN
from packs.historic_sql.normalize import Normalizer, template_id

pytestmark = pytest.mark.anyio
Call = Callable[..., Awaitable[dict[str, Any]]]
AWS = "AKIA" + "FAKEQWERTY234567"
WORKLOADS = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "workloads"


def staged_sql(project: Path) -> list[str]:
    """Every canonical SQL text the latest ingest staged."""
    runs = sorted((project / "raw-sources/tpch/historic-sql").iterdir())
    texts = []
    for path in (runs[-1] / "tables").glob("*.json"):
        texts += [entry["canonicalSql"] for entry in json.loads(path.read_text())["topTemplates"]
                  if "canonicalSql" in entry]
    return texts


async def test_an_agents_digest_is_stored_and_projected_redacted(call: Call, project: Path) -> None:
    assert "error" not in await call('scan.run(connection="tpch")')
    await call('historic_sql.ingest(connection="tpch", provider="agent")')
    units = await call('historic_sql.units(connection="tpch")')
    unit = next(u for u in units["units"] if u["target"] == "main.orders")["unit"]
    narrative = f"Orders by status; the loader signs in with aws key {AWS} and password=hunter2x."
    output = json.dumps({"narrative": narrative, "frequencyTier": "high", "commonFilters": [], "commonJoins": []})
    done = await call(f'historic_sql.submit(unit="{unit}", output={output})')
    assert done["stored"], done
    usage = YAML(typ="safe").load((project / "_schema/tpch/tpch.main.yaml").read_text())["tables"]["orders"]["usage"]
    assert usage["narrative"] == ("Orders by status; the loader signs in with aws key [redacted: aws-access-key] and "
                                  "password=[redacted: secret-assignment]")
    files = [p for p in project.rglob("*") if p.is_file() and p.suffix in (".json", ".yaml", ".md")]
    assert not any(AWS in p.read_text() or "hunter2x" in p.read_text() for p in files)


async def test_project_patterns_redact_history_without_renumbering_templates(tmp_path: Path) -> None:
    plain = make_project(tmp_path / "plain")
    named = make_project(tmp_path / "named", extra="redaction:\n  patterns: ['c_mktsegment']\n")
    seen: dict[str, list[str]] = {}
    counted: dict[str, dict[str, int]] = {}
    for root in (plain, named):
        runtime = open_runtime(root, {})
        try:
            for text in ('scan.run(connection="tpch")', 'historic_sql.ingest(connection="tpch")'):
                envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI, presentation="verbose"))
                assert envelope["status"] == "success", envelope
            counted[root.name] = envelope["results"][0]["result"]["redactions"]
        finally:
            await runtime.aclose()
        seen[root.name] = staged_sql(root)
    assert any("c_mktsegment" in sql for sql in seen["plain"])
    assert not any("c_mktsegment" in sql for sql in seen["named"])
    assert any("__redacted_custom__" in sql for sql in seen["named"])
    assert counted["named"]["custom"] >= 1 and "custom" not in counted["plain"]  # the ingest counts per kind
    ids = {root: sorted(json.loads(p.read_text())["topTemplates"][0]["id"] for p in sorted(
        (sorted((tmp_path / root / "raw-sources/tpch/historic-sql").iterdir())[-1] / "tables").glob("*.json")))
        for root in ("plain", "named")}
    assert ids["plain"] == ids["named"]  # redaction never renumbers a template


async def test_secrets_in_a_query_log_never_reach_the_project(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    leaky = [("/* deploy token=ghp_FAKEabcdefghijklmnopqrstuvwxyz012345 */ SELECT o_orderstatus FROM orders "
              "WHERE o_orderkey = 1 AND o_custkey = 2", "etl", 3),
             ("SELECT o_orderstatus FROM orders WHERE o_comment = 'key AKIAFAKEQWERTY234567'", "etl", 3),
             ("ALTER ROLE etl PASSWORD 'FAKE-pw-123'", "dba", 3)]
    write_log(root / "logs" / "queries.jsonl", [*workload(), *leaky])
    runtime = open_runtime(root, {})
    try:
        for text in ('scan.run(connection="tpch")', 'historic_sql.ingest(connection="tpch")'):
            envelope = await dispatch(parse(text), Context(runtime, "operator:ann", CLI))
            assert envelope["status"] == "success", envelope
    finally:
        await runtime.aclose()
    secrets = ("ghp_FAKEabcdefghijklmnopqrstuvwxyz012345", "AKIAFAKEQWERTY234567", "FAKE-pw-123")
    files = [p for p in root.rglob("*") if p.is_file() and p.name != "tpch.sqlite" and "logs" not in p.parts]
    assert [str(p.relative_to(root)) for p in files if any(s.encode() in p.read_bytes() for s in secrets)] == []


def tpc_queries() -> list[Any]:
    if not WORKLOADS.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no workloads at {WORKLOADS}"), id="none")]
    return [pytest.param(path, "duckdb" if path.parts[-2] == "duckdb_queries" else "postgres",
                         id=f"{path.parts[-3]}-{path.parts[-2]}-{path.stem}")
            for path in sorted([*WORKLOADS.glob("tpch/*/*.sql"), *WORKLOADS.glob("tpcds/*/*.sql")])]


@pytest.mark.data
@pytest.mark.parametrize(("path", "dialect"), tpc_queries())
def test_tpc_queries_come_through_history_unchanged(path: Path, dialect: str) -> None:
    sql = path.read_text(encoding="utf-8")
    assert BUILTIN.text(sql) == sql and BUILTIN.sql(sql) == sql  # as a sample, an error echo or an argument
    normalized = Normalizer(dialect).normalize(sql)  # every history reader stores this text
    assert template_id(normalized.canonical_sql) == normalized.template_id  # the stored text is the unredacted one
    assert "__redacted" not in normalized.canonical_sql
