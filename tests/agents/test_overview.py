"""``overview()``: the cheap first call (connections and what each holds, last scan and ingest, counts, what
is stale), and the MCP instructions that name the project's connections within their token budget."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from agent_helpers import khive, ok
from library_project import QUERIES
from mcp import Client

from khive.agent_brief import BRIEF_TOKENS, project_brief
from khive.bootstrap import open_runtime
from khive.budget import approx_tokens
from khive.mcp_server import build_server
from khive.scaffold import init_project


def overview(project: Path) -> dict[str, Any]:
    envelope = json.loads(ok(khive("request", "overview()", "--presentation", "verbose", cwd=project)).stdout)
    result: dict[str, Any] = envelope["results"][0]["result"]
    return result


def executions_by_table() -> Counter[str]:
    """What the library's query log says, counted from its SQL: every table a template names, times its runs."""
    counts: Counter[str] = Counter()
    for template, times in QUERIES:
        for table in set(re.findall(r"(?:FROM|JOIN) (\w+)", template)):
            counts[f"main.{table}"] += times
    return counts


def test_overview_says_what_is_here(library_project: Path) -> None:
    found = overview(library_project)
    (library,) = found["connections"]
    assert library["id"] == "library" and library["driver"] == "sqlite"
    assert library["description"] == "the branch library: books, members and loans"
    assert library["tables"] == 4 and library["schemas"] == {"main": 4} and library["sources"] == 4
    expected = executions_by_table()
    assert [(t["table"], t["executions"]) for t in library["topTables"]] == sorted(
        expected.items(), key=lambda item: (-item[1], item[0]))
    assert library["lastScan"] <= library["lastIngest"]
    pages = list((library_project / "wiki" / "global").rglob("*.md"))
    patterns = list((library_project / "wiki" / "global" / "historic-sql").glob("*.md"))
    assert found["counts"] == {"connections": 1, "tables": 4, "sources": 4, "pages": len(pages),
                               "personalPages": 0, "patterns": len(patterns)}
    assert {"topic": "lending", "pages": 1} in found["wiki"]["topics"]
    assert found["stale"] == [] and found["problems"] == []


def test_overview_names_what_is_stale_with_its_fix(library_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "library"
    shutil.copytree(library_project, project, ignore=shutil.ignore_patterns(".khive"))
    (project / ".khive").mkdir()
    config = project / "khive.yaml"
    added = "  archive:\n    driver: sqlite\n    path: data/old.sqlite\n"
    config.write_text(config.read_text(encoding="utf-8") + added, encoding="utf-8")
    db = sqlite3.connect(project / "data" / "library.sqlite")  # a schema change, so the scan writes a new run
    db.execute("CREATE TABLE branches (id INTEGER PRIMARY KEY, name TEXT)")
    db.commit()
    db.close()
    ok(khive("scan", "library", cwd=project))  # a scan newer than the ingest
    page = project / "wiki" / "global" / "lending" / "late-fees.md"
    page.write_text(page.read_text(encoding="utf-8").replace("---\n", "---\nstale_since: 2026-01-05\n", 1),
                    encoding="utf-8")
    stale = {item["what"]: item for item in overview(project)["stale"]}
    assert stale["connection archive"]["fix"] == "khive scan archive"
    assert stale["usage of library"]["fix"] == "khive ingest library"
    assert "2026-01-05" in stale["wiki page lending/late-fees"]["why"]


@pytest.mark.anyio
async def test_instructions_name_each_connection_within_the_budget(tmp_path: Path) -> None:
    project = tmp_path / "many"
    init_project(project, "ann")
    names = [f"warehouse_{index:02d}" for index in range(40)]
    (project / "khive.yaml").write_text("connections:\n" + "".join(
        f"  {name}: {{driver: sqlite, path: data/{name}.sqlite, description: \"region {name} sales mart\"}}\n"
        for name in names), encoding="utf-8")
    runtime = open_runtime(project, {})
    try:
        async with Client(build_server(runtime), client_info=types.Implementation(name="t", version="0")) as client:
            instructions = client.instructions or ""
            description = (await client.list_tools()).tools[0].description or ""
    finally:
        await runtime.aclose()
    brief = instructions[instructions.index("This project"):]
    assert approx_tokens(brief) <= BRIEF_TOKENS + 10  # the project part, as budgets count tokens
    listed = [name for name in names if f"{name} (sqlite)" in brief]
    assert listed == names[:len(listed)] and 0 < len(listed) < len(names)
    assert f"and {len(names) - len(listed)} more connection(s): overview() lists them" in brief
    assert brief in description and "overview()" in instructions


@pytest.mark.parametrize("connections", [0, 1, 3])
def test_the_brief_fits_its_budget_and_says_when_nothing_is_configured(connections: int) -> None:
    entries = [{"id": f"c{i}", "driver": "postgres", "description": "x" * 300, "lastScan": "2026-01-01T00:00:00Z",
                "tables": 12, "schemas": {f"s{j}": 1 for j in range(12)},
                "topTables": [{"table": f"s0.t{j}", "executions": 10 - j} for j in range(5)]}
               for i in range(connections)]
    brief = project_brief({"project": "p", "connections": entries})
    assert approx_tokens(brief) <= BRIEF_TOKENS
    if connections == 0:
        assert "no connections yet" in brief
    else:
        assert all(f"c{i} (postgres)" in brief for i in range(connections))
        assert "and 6 more" in brief and "most queried: s0.t0, s0.t1, s0.t2" in brief
