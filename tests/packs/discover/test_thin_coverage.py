"""discover.search says thin coverage: a low-confidence possiblyRelevant tier and clarifying questions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from discover_project import Call, write_page

pytestmark = pytest.mark.anyio

HANDOVER = ("summary: weekly handover notes", "Late parcels: the quokka escalation goes to whoever owns the carrier "
            "that week. " + "Other notes. " * 40)


async def test_thin_coverage_brings_a_low_confidence_tier_and_questions(scanned: Call, project: Path) -> None:
    write_page(project, "ops/handover", *HANDOVER)
    result = await scanned('discover.search(query="quokka escalation carrier zyzzyva", limit=2)')
    assert result["refs"][0]["id"] == "main.shipments" and "ops/handover" not in [r["id"] for r in result["refs"]]
    coverage = result["coverage"]
    assert coverage == {"covered": ["carrier"], "missing": ["quokka", "escalation", "zyzzyva"], "share": 0.25,
                        "thin": True}
    (possible,) = result["possiblyRelevant"]
    assert (possible["id"], possible["confidence"], possible["matchedOn"]) == ("ops/handover", "low", "body")
    assert possible["matchedTerms"] == ["quokka", "escalation", "carrier"] and "quokka" in possible["snippet"]
    assert result["uncovered"] == ["zyzzyva"]
    questions = result["questions"]
    assert [q["why"] for q in questions] == ["uncovered", "weakly_covered"]
    assert questions[0]["about"] == ["zyzzyva"] and "'zyzzyva'" in questions[0]["question"]
    assert questions[1]["about"] == ["quokka", "escalation"] and questions[1]["options"] == ["ops/handover"]
    assert "ops/handover" in questions[1]["question"]
    text = (await scanned('discover.search(query="quokka escalation carrier zyzzyva", limit=2, format="text")'))
    assert "Possibly relevant (low confidence" in text["text"] and "Ask first:" in text["text"]


async def test_full_coverage_has_no_tier_and_no_questions(scanned: Call, project: Path) -> None:
    write_page(project, "ops/handover", *HANDOVER)
    result = await scanned('discover.search(query="monthly number of orders by status", limit=5)')
    assert result["coverage"]["thin"] is False and result["coverage"]["missing"] == []
    assert result["coverage"]["covered"] == ["orders", "status"]  # how to count and bucket is not a subject
    assert result["possiblyRelevant"] == [] and result["questions"] == []


async def test_the_tier_respects_kinds_and_is_shed_with_related_under_a_budget(scanned: Call, project: Path) -> None:
    write_page(project, "ops/handover", *HANDOVER)
    tables = await scanned('discover.search(query="quokka escalation carrier", kinds=["table"], limit=1)')
    assert tables["coverage"]["thin"] and tables["possiblyRelevant"] == []
    full = await scanned('discover.search(query="quokka escalation carrier", limit=2, budget_tokens=100000)')
    assert full["possiblyRelevant"] and "related" in full["budget"]["tokens"]["sections"]
    tight = full["budget"]["tokens"]["total"] - full["budget"]["tokens"]["sections"]["evidenceExcerpts"] \
        - full["budget"]["tokens"]["sections"]["related"] // 2
    shed = await scanned(f'discover.search(query="quokka escalation carrier", limit=2, budget_tokens={tight})')
    assert shed["budget"]["dropped"] == ["evidenceExcerpts", "related"] and shed["possiblyRelevant"] == []
    assert shed["questions"] == full["questions"] and shed["coverage"] == full["coverage"]  # core: never shed


async def test_a_table_name_in_two_connections_is_asked_about(scanned: Call, project: Path) -> None:
    db = sqlite3.connect(project / "billing.sqlite")
    db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT)")
    db.commit()
    db.close()
    assert "error" not in await scanned('scan.run(connection="billing")')
    result = await scanned('discover.search(query="customers email", kinds=["table"], limit=5)')
    (question,) = [q for q in result["questions"] if q["why"] == "same_name"]
    assert set(question["options"]) == {"table:shop:main.customers", "table:billing:main.customers"}
    assert "shop" in question["question"] and "billing" in question["question"]
    scoped = await scanned('discover.search(query="customers email", connection="billing", limit=5)')
    assert not [q for q in scoped["questions"] if q["why"] == "same_name"]  # the connection was said


async def test_a_term_naming_a_measure_and_a_column_is_asked_about(scanned: Call, project: Path) -> None:
    (project / "semantic-layer" / "billing").mkdir(parents=True, exist_ok=True)
    (project / "semantic-layer" / "billing" / "invoices.yaml").write_text(
        "name: invoices\ntable: main.invoices\ncolumns:\n  - name: id\nmeasures:\n"
        "  - name: billed_amount\n    expr: sum(amount)\n")
    result = await scanned('discover.search(query="invoice amount", limit=15)')
    (question,) = [q for q in result["questions"] if q["why"] == "measure_or_column"]
    assert question["about"] == ["amount"]
    assert question["options"] == ["sl:invoices.billed_amount", "column:billing:main.invoices.amount"]


async def test_contradicting_pages_are_asked_about(call: Call, project: Path) -> None:
    write_page(project, "churn-monthly", "summary: churn is monthly\nrelations: {contradicts: [churn-def]}",
               "Churn counts cancellations per month.")
    write_page(project, "churn-def", "summary: churn is lapsed accounts", "An account lapsing for 90 days.")
    result = await call('discover.search(query="churn")')
    (question,) = [q for q in result["questions"] if q["why"] == "contradiction"]
    assert question["about"] == ["churn-def", "churn-monthly"]
    assert set(question["options"]) == {"wiki:churn-def", "wiki:churn-monthly"}


async def test_at_most_three_questions(scanned: Call, project: Path) -> None:
    write_page(project, "ops/handover", *HANDOVER)
    write_page(project, "carrier-a", "summary: carrier rules\nrelations: {contradicts: [carrier-b, carrier-c]}", "x")
    write_page(project, "carrier-b", "summary: carrier rules b", "y")
    write_page(project, "carrier-c", "summary: carrier rules c", "z")
    result = await scanned('discover.search(query="quokka escalation carrier zyzzyva", limit=15)')
    assert len(result["questions"]) == 3
    assert [q["why"] for q in result["questions"]] == ["uncovered", "weakly_covered", "contradiction"]
