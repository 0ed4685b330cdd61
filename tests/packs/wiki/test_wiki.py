"""The wiki pack through the dispatcher: pages on disk, strict links, relations, scopes, freshness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from packs.wiki.page import parse_page

pytestmark = pytest.mark.anyio


def keys(result: dict[str, Any]) -> list[str]:
    return [hit["key"] for hit in result["hits"]]


async def test_write_read_round_trip(call: Any, project: Path) -> None:
    written = await call('wiki.write(key="sales/orders-playbook", summary="How to count orders", '
                         'body="Use **order_count**; refunds are excluded.", tags=["orders", "kpi"], '
                         'kind="rule", relevance=["always"])')
    assert written["path"] == "wiki/global/sales/orders-playbook.md" and written["changed"] is True
    text = (project / written["path"]).read_text()
    assert text.startswith("---\n") and "summary: How to count orders" in text
    page = await call('wiki.read(key="sales/orders-playbook")')
    assert page["summary"] == "How to count orders" and page["kind"] == "rule"
    assert page["tags"] == ["orders", "kpi"] and page["relevance"] == ["always"]
    assert page["body"].strip() == "Use **order_count**; refunds are excluded."
    again = await call('wiki.write(key="sales/orders-playbook", summary="How to count orders", '
                       'body="Use **order_count**; refunds are excluded.", tags=["orders", "kpi"], '
                       'kind="rule", relevance=["always"])')
    assert again["changed"] is False


async def test_validation_errors_name_the_field(call: Any) -> None:
    assert "needs a date" in (await call('wiki.write(key="weekly", kind="recap")'))["error"]["message"]
    bad_key = await call('wiki.write(key="Bad Key!")')
    assert bad_key["error"]["code"] == "invalid_args" and "path-like" in bad_key["error"]["message"]
    bad_kind = await call('wiki.write(key="a", kind="essay")')
    assert bad_kind["error"]["code"] == "invalid_args" and "'kind'" in bad_kind["error"]["message"]
    recap = await call('wiki.write(key="weekly", kind="recap", date="2026-11-27", summary="week 48")')
    assert recap["changed"] is True


async def test_search_returns_key_summary_score_snippet(call: Any) -> None:
    await call('wiki.write(key="churn", summary="Monthly churn definition", body="Churn counts cancelled '
               'subscriptions per month.", tags=["retention"])')
    await call('wiki.write(key="revenue", summary="Revenue recognition", body="Recognise at shipment.")')
    result = await call('wiki.search(query="cancelled subscriptions")')
    assert keys(result) == ["churn"]
    hit = result["hits"][0]
    assert hit["summary"] == "Monthly churn definition" and 0 < hit["score"] <= 1
    assert "**cancelled**" in hit["snippet"]
    assert keys(await call('wiki.search(query="churn revenue", tags=["retention"])')) == ["churn"]
    assert (await call('wiki.search(query="churn", kind="warning")'))["hits"] == []


async def test_external_edit_is_visible_on_next_search(call: Any, project: Path) -> None:
    await call('wiki.write(key="ops", summary="Operations", body="nothing about tides")')
    assert (await call('wiki.search(query="tides")'))["count"] == 1
    # an editor rewrites the page in place, and another page appears by hand
    (project / "wiki/global/ops.md").write_text("---\nsummary: Operations\n---\nall about moons\n")
    (project / "wiki/global/hand.md").write_text("---\nsummary: Hand written\n---\nmore tides here\n")
    assert keys(await call('wiki.search(query="moons")')) == ["ops"]
    assert keys(await call('wiki.search(query="tides")')) == ["hand"]


async def test_deletion_removes_page_from_results(call: Any, project: Path) -> None:
    await call('wiki.write(key="gone", summary="Soon gone", body="ephemeral zebra")')
    await call('wiki.write(key="also-gone", summary="Also", body="ephemeral zebra too")')
    assert len(keys(await call('wiki.search(query="zebra")'))) == 2
    assert (await call('wiki.delete(key="gone")'))["deleted"] == "wiki/global/gone.md"
    (project / "wiki/global/also-gone.md").unlink()
    assert (await call('wiki.search(query="zebra")'))["hits"] == []
    assert (await call('wiki.read(key="gone")'))["error"]["code"] == "page_not_found"
    assert (await call('wiki.delete(key="gone")'))["error"]["code"] == "page_not_found"


async def test_strict_links_reported_then_resolved(call: Any) -> None:
    first = await call('wiki.write(key="a", summary="A", refs=["b"], relations={"supports": ["c"]})')
    assert first["unresolvedRefs"] == ["b", "c"]
    assert (await call('wiki.read(key="a")'))["unresolvedRefs"] == ["b", "c"]
    await call('wiki.write(key="b", summary="B")')
    page = await call('wiki.read(key="a")')
    assert page["unresolvedRefs"] == ["c"]
    backlinks = (await call('wiki.read(key="b")'))["backlinks"]
    assert backlinks == [{"id": "wiki:a", "relation": "refs"}]
    unresolved_sl = await call('wiki.write(key="d", sl_refs=["orders.order_count"])')
    assert unresolved_sl["unresolvedSlRefs"] == ["orders.order_count"]


async def test_superseded_page_hidden_unless_asked(call: Any) -> None:
    await call('wiki.write(key="orders-v1", summary="Old orders rule", body="count orders by created_at")')
    await call('wiki.write(key="orders-v2", summary="New orders rule", body="count orders by paid_at", '
               'relations={"supersedes": ["orders-v1"]})')
    assert keys(await call('wiki.search(query="count orders")')) == ["orders-v2"]
    both = await call('wiki.search(query="count orders", include_superseded=true)')
    assert sorted(keys(both)) == ["orders-v1", "orders-v2"]
    old = await call('wiki.read(key="orders-v1")')
    assert old["supersededBy"] == ["wiki:orders-v2"]


async def test_archived_pages_hidden_unless_asked(call: Any) -> None:
    await call('wiki.write(key="legacy", summary="Legacy", body="mainframe batch", archived=true)')
    assert (await call('wiki.search(query="mainframe")'))["hits"] == []
    assert keys(await call('wiki.search(query="mainframe", include_archived=true)')) == ["legacy"]


async def test_user_page_shadows_global_for_that_user_only(call: Any) -> None:
    await call('wiki.write(key="fiscal-year", summary="Global: starts in January", body="fiscal year")')
    mine = await call('wiki.write(key="fiscal-year", scope="user", summary="Mine: starts in April", '
                      'body="fiscal year")')
    assert mine["path"] == "wiki/users/ann/fiscal-year.md"
    ann = await call('wiki.search(query="fiscal year")')
    assert [(h["key"], h["scope"]) for h in ann["hits"]] == [("fiscal-year", "ann")]
    bob = await call('wiki.search(query="fiscal year")', principal="operator:bob")
    assert [(h["key"], h["scope"]) for h in bob["hits"]] == [("fiscal-year", "global")]
    assert (await call('wiki.read(key="fiscal-year")'))["summary"] == "Mine: starts in April"
    assert (await call('wiki.read(key="fiscal-year")'))["shadowsGlobal"] is True
    assert (await call('wiki.read(key="fiscal-year", scope="global")'))["summary"].startswith("Global")
    assert (await call('wiki.read(key="fiscal-year")', principal="operator:bob"))["scope"] == "global"


async def test_list_filters(call: Any) -> None:
    await call('wiki.write(key="historic-sql/orders", summary="p", kind="pattern", tags=["historic-sql"])')
    await call('wiki.write(key="notes/x", summary="n")')
    listed = await call('wiki.list(prefix="historic-sql/")')
    assert [page["key"] for page in listed["pages"]] == ["historic-sql/orders"]
    assert [p["key"] for p in (await call('wiki.list(kind="note")'))["pages"]] == ["notes/x"]
    assert listed["count"] == 1


async def test_bad_page_on_disk_is_reported_not_fatal(call: Any, project: Path) -> None:
    (project / "wiki/global/broken.md").write_text("---\nsummary: [unclosed\n---\nbody\n")
    (project / "wiki/global/typo.md").write_text("---\nsumary: typo\n---\nbody\n")
    await call('wiki.write(key="fine", summary="Fine page", body="works")')
    listed = await call("wiki.list()")
    assert [page["key"] for page in listed["pages"]] == ["fine"]
    assert "invalid frontmatter YAML" in listed["errors"]["wiki/global/broken.md"]
    assert "sumary" in listed["errors"]["wiki/global/typo.md"]


async def test_two_agents_editing_what_they_read_lose_no_edit(call: Any, project: Path) -> None:
    """Found over MCP HTTP on realworld-pg: two agents appending to one page kept 10 of their 20 lines."""
    created = await call('wiki.write(key="team/log", body="log", base_sha256="")')
    assert created["changed"] is True
    ann, bob = await call('wiki.read(key="team/log")'), await call('wiki.read(key="team/log")')
    assert ann["sha256"] == bob["sha256"] == created["sha256"]
    written = await call(f'wiki.write(key="team/log", body="log\\n- ann", base_sha256="{ann["sha256"]}")')
    assert written["changed"] is True
    refused = await call(f'wiki.write(key="team/log", body="log\\n- bob", base_sha256="{bob["sha256"]}")')
    assert refused["error"]["code"] == "write_conflict"
    assert refused["error"]["details"]["sha256"] == written["sha256"]
    assert (await call('wiki.read(key="team/log")'))["body"].strip() == "log\n- ann"
    again = await call('wiki.write(key="team/log", body="mine", base_sha256="")')
    assert again["error"]["code"] == "write_conflict"  # "" writes only a page that does not exist yet
    page = await call('wiki.read(key="team/log")')
    rebased = await call(f'wiki.write(key="team/log", body="{page["body"].strip()}\\n- bob", '
                         f'base_sha256="{page["sha256"]}")')
    assert rebased["changed"] is True
    assert (project / "wiki/global/team/log.md").read_text().endswith("log\n- ann\n- bob\n")


async def test_write_conflict_on_same_page_in_a_batch(runtime: Any) -> None:
    from khive.context import CLI, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    envelope = await dispatch(parse('[wiki.write(key="k", summary="1"), wiki.write(key="k", summary="2")]'),
                              Context(runtime, "operator:ann", CLI))
    assert [r["ok"] for r in envelope["results"]] == [True, False]
    assert envelope["results"][1]["error"]["code"] == "write_conflict"


async def test_embedding_lane_on_and_off(project: Path) -> None:
    from khive.bootstrap import open_runtime

    # near-identical text: the hashing embedder only votes above its floor (shared exact tokens)
    (project / "wiki/global/warehouse-lanes.md").write_text("---\nsummary: warehouse lanes\n---\nwarehouse lanes\n")
    on = open_runtime(project, {"KHIVE_PACKS": "core,wiki"})
    try:
        hits = on.index.search("warehouse lanes")
        assert hits and set(hits[0].lanes) == {"fts", "vector"}
        assert on.index.db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 1
    finally:
        await on.aclose()
    config = project / "khive.yaml"
    config.write_text(config.read_text() + "\nindex:\n  vector: false\n")
    off = open_runtime(project, {"KHIVE_PACKS": "core,wiki"})
    try:
        hits = off.index.search("warehouse lanes")
        assert hits and set(hits[0].lanes) == {"fts"}
        # switching the embedder re-indexes the source, so stale vectors are dropped
        assert off.index.db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0
    finally:
        await off.aclose()


@pytest.mark.slow
def test_two_processes_writing_the_same_page(project: Path) -> None:
    khive = str(Path(sys.executable).parent / "khive")
    env = {**os.environ, "KHIVE_PROJECT": str(project), "KHIVE_NO_DAEMON": "1"}
    script = ("import subprocess, sys\n"
              "for i in range(15):\n"
              "    text = f'wiki.write(key=\"shared\", summary=\"{sys.argv[2]}-{i}\", body=\"' + 'x' * 20000 + '\")'\n"
              "    done = subprocess.run([sys.argv[1], 'request', text], capture_output=True, text=True)\n"
              "    if done.returncode:\n"
              "        sys.exit(f'write {i} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}')\n")
    workers = [subprocess.Popen([sys.executable, "-c", script, khive, name], env=env) for name in ("p", "q")]
    assert [worker.wait(timeout=240) for worker in workers] == [0, 0]
    page = parse_page("wiki/global/shared.md", (project / "wiki/global/shared.md").read_text())
    assert page.meta.summary in {f"{name}-14" for name in ("p", "q")}
    assert page.body.strip() == "x" * 20000
    leftovers = [p.name for p in (project / "wiki/global").iterdir() if p.name != "shared.md"]
    assert leftovers == []
    audit = subprocess.run([khive, "audit", "--json", "--verb", "wiki.write", "--limit", "100"], env=env,
                           capture_output=True, text=True, check=True)
    outcomes = [json.loads(line)["outcome"] for line in audit.stdout.splitlines()]
    assert outcomes == ["ok"] * 30
