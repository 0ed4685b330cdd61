"""``khive site build`` on the demo project: every table, source and wiki page has a page, every link inside
the site resolves, the static search index ranks like ``discover.search``, and the folder is replaced whole."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

import pytest
from sitecheck import (
    Demo,
    broken_links,
    discover_top,
    expected_subjects,
    operator_results_sync,
    pages,
    static_answers,
    subjects,
)

from khive.cli import main

pytestmark = [pytest.mark.slow]


def build(project: Path, *target: Path) -> int:
    return main(["--project", str(project), "site", "build", *map(str, target)])


def test_the_demo_ends_by_printing_how_to_open_its_site(demo: Demo) -> None:
    last = demo.output.rstrip().splitlines()[-1]
    index = demo.site / "index.html"
    assert f"open file://{index}" in last
    assert index.is_file()


def test_every_table_source_and_wiki_page_has_a_page(demo: Demo, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out"
    assert build(demo.root, target) == 0
    printed = capsys.readouterr()
    assert f"open file://{target.resolve() / 'index.html'}" in printed.out
    assert printed.err == ""  # no verb failed
    expected = expected_subjects(demo.root)
    assert {s.split(":")[0] for s in expected} == {"table", "source", "wiki"}
    found = subjects(target)
    assert expected <= found.keys()
    failed = [path for path, content in pages(target).items() if "did not answer" in "".join(content.text)]
    assert failed == []


def test_every_link_inside_the_site_resolves(demo: Demo) -> None:
    assert len(pages(demo.site)) > 40
    assert broken_links(demo.site) == []


def test_static_search_lists_the_same_top_three_as_discover_search(demo: Demo) -> None:
    answers = static_answers(demo.site)
    suite = json.loads((demo.root / "bench" / "retrieval-suite.json").read_text())["cases"]
    questions = [case["query"] for case in suite][:6]
    for question in questions:
        key = " ".join(question.lower().split())
        assert key in answers, question
        top = discover_top(demo.root, question)
        assert len(top) == 3
        assert answers[key][:3] == top, question


def test_the_static_search_page_says_other_questions_need_serve(demo: Demo) -> None:
    text = (demo.site / "search.html").read_text(encoding="utf-8")
    assert "khive site serve" in text
    assert "khive site serve" in (demo.site / "assets" / "search.js").read_text(encoding="utf-8")


def test_a_rebuild_replaces_the_whole_site(demo: Demo, tmp_path: Path) -> None:
    target = tmp_path / "site"
    assert build(demo.root, target) == 0
    leftover = target / "tables" / "gone.html"
    leftover.write_text("from an older build")
    assert build(demo.root, target) == 0
    assert not leftover.exists()
    assert (target / "index.html").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no half-written sibling left behind


def test_a_folder_the_builder_did_not_write_is_left_alone(demo: Demo, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("keep me")
    assert build(demo.root, mine) == 2
    assert "is not a site khive built" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["todo.txt"]


def test_wiki_pages_show_their_relations(demo: Demo) -> None:
    (newer,) = operator_results_sync(demo.root, 'wiki.read(key="sales/revenue-definition-2025")')
    (older_key,) = newer["relations"]["supersedes"]
    found = subjects(demo.site)
    older_path = found[f"wiki:global:{older_key}"]
    older = pages(demo.site)[older_path]
    assert "Superseded by" in "".join(older.text)
    targets = {posixpath.normpath(posixpath.join(posixpath.dirname(older_path), link)) for link in older.links}
    assert found["wiki:global:sales/revenue-definition-2025"] in targets
