"""discover.search on pages: hard filters (scopes, page_kind, relevance_phases), inferred scopes, capped relation
pulls, and the bodies of the best refs in one answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from discover_project import Call, write_page

pytestmark = pytest.mark.anyio


def wiki_ids(result: dict) -> list[str]:
    return [ref["id"] for ref in result["refs"] if ref["kind"] in ("wiki", "pattern")]


def pages(project: Path) -> None:
    write_page(project, "sales/margin-rules", "summary: margin rules for sales\ntags: [pricing]", "margin policy")
    write_page(project, "sales/emea/margin-notes", "summary: margin notes emea\nkind: warning", "margin policy")
    write_page(project, "ops/margin-ops", "summary: margin in operations\nrelevance: [planning]", "margin policy")
    write_page(project, "ops/margin-close", "summary: margin at month close\nrelevance: [closing]", "margin policy")
    write_page(project, "margin-house", "summary: margin house rules\nrelevance: always", "margin policy")
    write_page(project, "margin-mine", "summary: my margin notes", "margin policy", scope="ann")


async def test_scopes_filter_pages_by_tier_and_prefix(scanned: Call, project: Path) -> None:
    pages(project)
    everything = set(wiki_ids(await scanned('discover.search(query="margin policy", limit=50)')))
    assert everything == {"sales/margin-rules", "sales/emea/margin-notes", "ops/margin-ops", "ops/margin-close",
                          "margin-house", "margin-mine"}
    cases = {'["sales"]': {"sales/margin-rules", "sales/emea/margin-notes"},
             '["sales/emea/"]': {"sales/emea/margin-notes"},
             '["user"]': {"margin-mine"},
             '["wiki/global/ops", "user"]': {"ops/margin-ops", "ops/margin-close", "margin-mine"},
             '["wiki/users/ann"]': {"margin-mine"},
             '["global"]': everything - {"margin-mine"}}
    for scopes, expected in cases.items():
        result = await scanned(f'discover.search(query="margin policy orders", scopes={scopes}, limit=50)')
        assert set(wiki_ids(result)) == expected, scopes
        assert any(ref["kind"] == "table" for ref in result["refs"])  # tables are not pages: never filtered
        assert result["scopes"]["given"] and result["scopes"]["inferred"] == ["global"]
    floor = await scanned('discover.search(query="orders", scopes=["sales"])')
    assert floor["floor"] == []  # the always page is outside the scope
    assert [p["id"] for p in (await scanned('discover.search(query="orders")'))["floor"]] == ["margin-house"]


async def test_bad_scopes_name_the_field(scanned: Call) -> None:
    for scopes in ('["Sales Team"]', '["wiki/users/bob/x"]'):
        error = (await scanned(f'discover.search(query="margin", scopes={scopes})'))["error"]
        assert error["code"] == "invalid_args" and "scopes" in error["message"], scopes
    error = (await scanned('discover.search(query="margin", page_kind="table")'))["error"]
    assert error["code"] == "invalid_args" and "page_kind" in str(error)


async def test_page_kind_and_relevance_phases(scanned: Call, project: Path) -> None:
    pages(project)
    warnings = await scanned('discover.search(query="margin policy", page_kind="warning", limit=50)')
    assert wiki_ids(warnings) == ["sales/emea/margin-notes"]
    planning = await scanned('discover.search(query="margin policy", relevance_phases=["planning"], limit=50, '
                             'explain=true)')
    ids = wiki_ids(planning)
    assert "ops/margin-close" not in ids  # marked for another phase only
    assert {"ops/margin-ops", "sales/margin-rules", "margin-mine"} <= set(ids)  # the phase's page, unmarked pages
    assert ids[0] == "ops/margin-ops"
    lifted = {ref["id"]: ref["explain"]["bonuses"] for ref in planning["refs"] if ref["kind"] == "wiki"}
    assert lifted["ops/margin-ops"]["phase"] > 0 and "phase" not in lifted["sales/margin-rules"]


async def test_scopes_are_inferred_from_folder_names_and_tags(scanned: Call, project: Path) -> None:
    pages(project)
    named = await scanned('discover.search(query="ops margin policy", limit=50, explain=true)')
    assert named["scopes"]["inferred"] == ["ops"] and "ops" in named["scopes"]["why"]
    bonuses = {ref["id"]: ref["explain"]["bonuses"] for ref in named["refs"] if ref["kind"] == "wiki"}
    assert bonuses["ops/margin-ops"]["scope"] > 0 and "scope" not in bonuses["sales/margin-rules"]
    assert set(wiki_ids(named)) >= {"sales/margin-rules", "margin-mine"}  # inferred scopes lift, never filter
    tagged = await scanned('discover.search(query="margin pricing")')
    assert tagged["scopes"]["inferred"] == ["sales"] and "pricing" in tagged["scopes"]["why"]["sales"]
    plain = await scanned('discover.search(query="margin policy")')
    assert plain["scopes"] == {"given": None, "inferred": ["global"], "why": {}}


async def test_relation_pulls_of_every_kind_share_one_cap_per_source(call: Call, project: Path) -> None:
    others = ["alpha", "beta", "gamma", "delta"]
    write_page(project, "hub", "summary: quokka hub\nrelations: {contradicts: [alpha, beta], "
                               "related_to: [gamma, delta, epsilon]}", "quokka")
    for key in [*others, "epsilon"]:
        write_page(project, key, f"summary: page {key}", "unrelated")
    refs = {ref["id"]: ref for ref in (await call('discover.search(query="quokka")'))["refs"]}
    assert {"alpha", "beta", "gamma"} <= set(refs) and not {"delta", "epsilon"} & set(refs)
    assert refs["alpha"]["reached"] == "contradicts:hub" and refs["gamma"]["reached"] == "related_to:hub"
    assert "2 more related_to not expanded" in refs["hub"]["flags"]
    write_page(project, "hub", "summary: quokka hub\nrelations: {contradicts: [alpha, beta, gamma, delta]}", "quokka")
    refs = {ref["id"]: ref for ref in (await call('discover.search(query="quokka")'))["refs"]}
    assert "1 more contradicts not expanded" in refs["hub"]["flags"] and "delta" not in refs


async def test_render_bodies_delivers_the_best_pages_and_sources_verbatim(scanned: Call, project: Path) -> None:
    long = "\n".join(f"line {i}: orders are counted once they ship" for i in range(400))
    write_page(project, "sales/orders-long", "summary: orders everywhere\ntags: [orders]", long)
    write_page(project, "sales/orders-short", "summary: orders in short\ntags: [orders]", "Orders ship daily.\n")
    result = await scanned('discover.search(query="orders", render_bodies=true, limit=20)')
    delivered = {item["id"]: item for item in result["delivered"]}
    listed = [ref["id"] for ref in result["refs"] if ref["kind"] in ("wiki", "pattern", "sl_source")]
    assert list(delivered) == listed[:5] and len(delivered) <= 5
    short = delivered["sales/orders-short"]
    assert short["body"] == "Orders ship daily.\n" and short["truncated"] is False and short["format"] == "markdown"
    cut = delivered["sales/orders-long"]
    assert cut["truncated"] is True and len(cut["body"]) <= 6000
    assert cut["chars"] == len(long) + 1  # the file ends in a newline
    assert long.startswith(cut["body"]) and cut["body"].endswith("ship")
    source = delivered["orders"]
    assert source["format"] == "yaml" and source["body"] == (project / source["path"]).read_text()
    assert len(source["contentHash"]) == 64
    assert "delivered" not in await scanned('discover.search(query="orders")')
    text = (await scanned('discover.search(query="orders", render_bodies=true, format="text")'))["text"]
    assert "--- wiki sales/orders-short (wiki/global/sales/orders-short.md)\nOrders ship daily." in text
    tight = await scanned('discover.search(query="orders", render_bodies=true, budget_tokens=300)')
    assert "evidenceExcerpts" in tight["budget"]["dropped"] and tight["delivered"] == []


def test_page_kind_values_are_the_wikis() -> None:
    from typing import get_args

    from packs.discover.verbs import PageKind
    from packs.wiki.models import PageKind as WikiPageKind

    assert get_args(PageKind) == get_args(WikiPageKind)
