"""The guide setup-agents writes is this project's: every example in it runs as written through a real MCP
client (``khive mcp`` started as ``.mcp.json`` says), and every budget it recommends fits.

Two differently shaped projects: the demo (DuckDB, 5 schemas) and a SQLite lending library."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_helpers import budget_reports, failures, guide_examples, khive, launch_params, mcp_entry, ok, run_requests

from khive.agent_guide import BEGIN, END, SKILL_PATH

pytestmark = pytest.mark.slow

# What each project holds, and the other project's names that must not leak into its guide.
SHAPES = {
    "demo_project": ("shop", "sales.orders", ("library", "main.books")),
    "library_project": ("library", "main.", ("shop", "sales.orders", "support tickets")),
}


@pytest.mark.parametrize("fixture", sorted(SHAPES))
def test_every_example_in_the_generated_guide_runs_and_every_budget_fits(
        fixture: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    project: Path = request.getfixturevalue(fixture)
    connection, table, foreign = SHAPES[fixture]
    written = ok(khive("setup-agents", cwd=project))
    assert "left out" not in written.stdout, written.stdout  # every candidate example ran on this project
    examples = guide_examples(project)
    verbs = {re.match(r"\[?([a-z_.]+)\(", text).group(1) for text in examples}  # type: ignore[union-attr]
    assert {"overview", "discover.search", "discover.lookup", "scan.entity", "sql.execute", "sl.query"} <= verbs
    assert any(text.startswith("[") for text in examples) and any("\n  | " in text for text in examples)
    guide = (project / SKILL_PATH).read_text(encoding="utf-8")
    assert f"`{connection}`" in guide and table in guide
    assert not [name for name in foreign if name in guide], "the guide names another project's data"

    params = launch_params(mcp_entry(project), {}, cwd=tmp_path)  # no variables needed: file-based databases
    description, envelopes = run_requests(params, examples, tmp_path / "server.log")
    assert connection in description  # the request tool's description names the project's connections
    for text, envelope in zip(examples, envelopes, strict=True):
        assert envelope.get("status") == "success", (text, failures(envelope))
        if "budget_tokens=" in text:
            reports = budget_reports(envelope)
            assert reports and all(report["fits"] for report in reports), (text, reports)


def test_a_hand_edited_section_survives_regeneration(library_project: Path) -> None:
    skill = library_project / SKILL_PATH
    ok(khive("setup-agents", cwd=library_project))
    text = skill.read_text(encoding="utf-8")
    mine = "Loans before 2020 were migrated by hand: ignore their late_fee."
    edited = text.replace("## Our notes\n", f"## Our notes\n\n{mine}\n").replace(
        BEGIN, f"Ask the branch manager before writing wiki pages.\n\n{BEGIN}")
    inside = edited.index(BEGIN) + len(BEGIN)
    edited = edited[:inside] + "\nAN EDIT INSIDE THE GENERATED PART\n" + edited[inside:]
    skill.write_text(edited, encoding="utf-8")

    again = ok(khive("setup-agents", cwd=library_project))
    regenerated = skill.read_text(encoding="utf-8")
    assert mine in regenerated and "Ask the branch manager before writing wiki pages." in regenerated
    assert "AN EDIT INSIDE THE GENERATED PART" not in regenerated  # the generated part is rewritten
    assert regenerated.count(BEGIN) == 1 and regenerated.count(END) == 1
    assert list(skill.parent.glob("SKILL.md.bak-*")) and "updated" in again.stdout
