"""The generated docs stay in step with the code: the verb reference and the ADR index."""

from __future__ import annotations

import re
from pathlib import Path

from khive.docgen import DOCS, adr_files, adr_index, generate, main

FIX = "run `.venv/bin/python -m khive.docgen` and commit docs/"


def test_verb_reference_is_current() -> None:
    assert (DOCS / "verbs.md").read_text(encoding="utf-8") == generate(), f"docs/verbs.md is stale: {FIX}"


def test_every_verb_has_a_section() -> None:
    from khive.plugins import build_plugin_manager, collect_verbs

    text = generate()
    pm, _ = build_plugin_manager()
    for name in collect_verbs(pm).verbs:
        assert f"\n### {name}\n" in text


def test_every_adr_is_in_the_index() -> None:
    index = (DOCS / "adr" / "README.md").read_text(encoding="utf-8")
    missing = [path.name for path in adr_files(DOCS / "adr") if f"]({path.name})" not in index]
    assert not missing, f"docs/adr/README.md lacks {missing}: {FIX}"
    assert index == adr_index(DOCS / "adr"), f"docs/adr/README.md is stale: {FIX}"


def test_adr_numbers_are_unique() -> None:
    numbers = [path.name[:4] for path in adr_files(DOCS / "adr")]
    assert len(numbers) == len(set(numbers))


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    (tmp_path / "adr").mkdir()
    (tmp_path / "adr" / "0001-a-decision.md").write_text("# 1. A decision\n\n- Status: accepted\n", encoding="utf-8")
    assert main(["--docs", str(tmp_path), "--check"]) == 1
    assert main(["--docs", str(tmp_path)]) == 0
    assert main(["--docs", str(tmp_path), "--check"]) == 0
    assert re.search(r"\| 0001 \| \[A decision\]\(0001-a-decision\.md\) \| accepted \|",
                     (tmp_path / "adr" / "README.md").read_text(encoding="utf-8"))


def test_docs_link_to_files_that_exist() -> None:
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).is_file(), f"{page.name} links to missing {target}"
