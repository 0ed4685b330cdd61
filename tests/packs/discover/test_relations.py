"""Wiki relations at query time: supersedes, contradicts, supports, related_to, warnings, floor, recaps."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from discover_project import Call, write_page

pytestmark = pytest.mark.anyio


def wiki_ids(result: dict) -> list[str]:
    return [ref["id"] for ref in result["refs"] if ref["kind"] == "wiki"]


async def test_superseded_page_is_hidden_unless_named(call: Call, project: Path) -> None:
    write_page(project, "refunds-v1", "summary: refund rules, old", "Refunds are netted monthly.")
    write_page(project, "refunds-v2", "summary: refund rules\nrelations: {supersedes: [refunds-v1]}",
               "Refunds are netted daily.")
    assert wiki_ids(await call('discover.search(query="refund rules")')) == ["refunds-v2"]
    assert "refunds-v1" in wiki_ids(await call('discover.search(query="refunds-v1 refund rules")'))


async def test_contradicting_partner_is_pulled_in_and_both_flagged(call: Call, project: Path) -> None:
    write_page(project, "churn-monthly", "summary: churn is monthly\nrelations: {contradicts: [churn-def]}",
               "Churn counts cancellations per month.")
    write_page(project, "churn-def", "summary: lapsed accounts", "An account lapsing for 90 days.")
    refs = {ref["id"]: ref for ref in (await call('discover.search(query="cancellations")'))["refs"]}
    assert "contradicts:churn-def" in refs["churn-monthly"]["flags"]
    assert "contradicts:churn-monthly" in refs["churn-def"]["flags"]
    assert refs["churn-def"]["reached"] == "contradicts:churn-monthly"


async def test_supports_bumps_a_present_page_but_pulls_nothing(call: Call, project: Path) -> None:
    write_page(project, "margin-a", "summary: margin policy alpha", "margin policy text")
    write_page(project, "margin-b", "summary: margin policy beta", "margin policy text")
    write_page(project, "evidence", "summary: margin evidence\nrelations: {supports: [margin-b, lonely]}",
               "margin study")
    write_page(project, "lonely", "summary: unrelated page", "nothing in common")
    result = await call('discover.search(query="margin policy", explain=true)')
    refs = {ref["id"]: ref for ref in result["refs"]}
    assert refs["margin-b"]["explain"]["bonuses"]["supports"] > 0 and "lonely" not in refs
    assert wiki_ids(result).index("margin-b") < wiki_ids(result).index("margin-a")


async def test_related_to_pulls_one_hop_at_most_three(call: Call, project: Path) -> None:
    targets = [f"topic-{i}" for i in range(5)]
    write_page(project, "hub-page", f"summary: quokka overview\nrelations: {{related_to: [{', '.join(targets)}]}}",
               "quokka")
    for target in targets:
        write_page(project, target, f"summary: page {target}\nrelations: {{related_to: [far-away]}}", "other")
    write_page(project, "far-away", "summary: two hops away", "other")
    refs = {ref["id"]: ref for ref in (await call('discover.search(query="quokka")'))["refs"]}
    assert sorted(k for k in refs if k.startswith("topic-")) == targets[:3]
    assert all("related_to:hub-page" in refs[t]["flags"] for t in targets[:3])
    assert "far-away" not in refs and "2 more related_to not expanded" in refs["hub-page"]["flags"]


async def test_matching_warning_ranks_first_among_wiki_refs(call: Call, project: Path) -> None:
    write_page(project, "revenue-guide", "summary: revenue revenue guide\ntitle: Revenue", "revenue revenue revenue")
    write_page(project, "revenue-trap", "summary: a trap\nkind: warning", "revenue excludes tax")
    result = await call('discover.search(query="revenue")')
    assert wiki_ids(result)[0] == "revenue-trap"
    assert "warning" in result["refs"][[r["id"] for r in result["refs"]].index("revenue-trap")]["flags"]


async def test_always_pages_are_the_floor(call: Call, project: Path) -> None:
    write_page(project, "house-rules", "summary: read before querying\nrelevance: always", "Use UTC.")
    result = await call('discover.search(query="carrier")')
    assert [page["id"] for page in result["floor"]] == ["house-rules"]
    assert "house-rules" not in wiki_ids(result)


async def test_recaps_are_opt_in_and_recent_ones_rank_higher(call: Call, project: Path) -> None:
    today = dt.date.today()
    for key, age in (("recap-new", 2), ("recap-month", 20), ("recap-old", 90)):
        write_page(project, f"sessions/{key}", f"summary: pricing session\nkind: recap\n"
                   f"date: {(today - dt.timedelta(days=age)).isoformat()}", "pricing pricing")
    assert wiki_ids(await call('discover.search(query="pricing session")')) == []
    ids = wiki_ids(await call('discover.search(query="pricing session", include_recaps=true)'))
    assert ids == ["sessions/recap-new", "sessions/recap-month"]
    named = wiki_ids(await call('discover.search(query="pricing session recap old", include_recaps=true)'))
    assert "sessions/recap-old" in named


async def test_the_callers_own_page_shadows_the_global_one(call: Call, project: Path) -> None:
    write_page(project, "pricing", "summary: pricing for everyone", "list prices")
    write_page(project, "pricing", "summary: my pricing notes", "list prices, my way", scope="ann")
    write_page(project, "pricing", "summary: bob's pricing notes", "list prices, bob's way", scope="bob")
    refs = [ref for ref in (await call('discover.search(query="list prices")'))["refs"] if ref["kind"] == "wiki"]
    assert [(ref["id"], ref["docId"]) for ref in refs] == [("pricing", "wiki:@ann/pricing")]
