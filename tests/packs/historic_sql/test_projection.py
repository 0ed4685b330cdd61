"""The projection memo (``projmemo.py``): a skipped merge must be one that would have changed nothing.

Each step runs the pass with the memo and checks it against what the same pass does without one on a
copy of the project, so a skip that hides a change (the day moving an unseen page into the archive, a
person's edit, a new usage block) fails here.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from khive.project.store import FileStore
from packs.historic_sql import pages, projection
from packs.historic_sql.projmemo import ProjectionMemo

DAY = date(2026, 5, 11)
SHARD = """connection: shop
catalog: shop
schema: public
tables:
  orders:
    kind: table  # the scan's
  customers:
    kind: table
"""


def pattern(slug: str, tables: list[str], templates: list[str]) -> dict[str, Any]:
    return {"slug": slug, "title": slug.title(), "narrative": f"{slug} go together. Often.",
            "definitionSql": "SELECT 1", "tablesInvolved": tables, "constituentTemplateIds": templates}


A = pattern("orders-customers", ["public.customers", "public.orders"], ["t1", "t2"])
B = pattern("orders-items", ["public.items", "public.orders"], ["t3"])


def twin(root: Path, tmp_path: Path) -> FileStore:
    """A copy of the project without the memo: the reference."""
    copy = tmp_path / f"reference-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".khive"))
    return FileStore(copy)


def contents(files: FileStore, prefix: str) -> dict[str, str | None]:
    return {path: files.read_text(path) for path in files.list(prefix)}


def patterns_pass(root: Path, tmp_path: Path, found: list[dict[str, Any]], day: date, *,
                  skipped: bool = False) -> dict[str, Any]:
    reference = twin(root, tmp_path)
    expected = pages.project_patterns(reference, "shop", found, day, 3, author="operator:test")
    memo = ProjectionMemo.for_project(root, "shop")
    done = pages.project_patterns(FileStore(root), "shop", found, day, 3, author="operator:test", memo=memo)
    memo.save()
    assert memo.skipped == ([pages.MEMO_KEY] if skipped else [])
    assert done == expected
    assert contents(FileStore(root), pages.PREFIX) == contents(reference, pages.PREFIX)
    return done


def test_pattern_pages_are_skipped_only_while_nothing_can_change(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert patterns_pass(root, tmp_path, [A, B], DAY)["written"] == ["orders-customers", "orders-items"]
    assert patterns_pass(root, tmp_path, [A, B], DAY, skipped=True)["written"] == []  # same pages and patterns
    assert patterns_pass(root, tmp_path, [A, B], DAY + timedelta(days=9), skipped=True)["written"] == []
    assert patterns_pass(root, tmp_path, [A], DAY + timedelta(days=1))["stale"] == ["orders-items"]
    assert patterns_pass(root, tmp_path, [A], DAY + timedelta(days=2)) == {  # the day counts: merged, no change
        "slugs": ["orders-customers"], "written": [], "stale": [], "archived": []}
    # three days after it went stale the unseen page is archived, though neither pages nor patterns changed
    assert patterns_pass(root, tmp_path, [A], DAY + timedelta(days=4))["archived"] == ["orders-items"]
    assert patterns_pass(root, tmp_path, [A], DAY + timedelta(days=9), skipped=True)["archived"] == []
    page = root / pages.page_path("orders-customers")
    page.write_text(page.read_text().replace("go together", "are read together"))  # a person's edit
    assert patterns_pass(root, tmp_path, [A], DAY + timedelta(days=5))["written"] == ["orders-customers"]


def shards_pass(root: Path, tmp_path: Path, usages: dict[str, Any], present: set[str], day: date, *,
                skipped: bool = False) -> list[str]:
    reference = twin(root, tmp_path)
    stale = projection.Stale({}, fallback=day.isoformat())  # no last-seen times known
    expected = projection.project_shards(reference, "shop", usages, present, stale, author="operator:test")
    memo = ProjectionMemo.for_project(root, "shop")
    done = projection.project_shards(FileStore(root), "shop", usages, present, stale,
                                     author="operator:test", memo=memo)
    memo.save()
    assert memo.skipped == (["_schema/shop/shop.public.yaml"] if skipped else [])
    assert done == expected
    assert contents(FileStore(root), "_schema/") == contents(reference, "_schema/")
    return done


def test_shards_are_merged_again_when_a_table_of_theirs_changes(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "_schema/shop").mkdir(parents=True)
    (root / "_schema/shop/shop.public.yaml").write_text(SHARD)
    usage = {"narrative": "orders are read daily.", "frequencyTier": "high"}
    both = {"public.orders", "public.customers"}
    assert shards_pass(root, tmp_path, {"public.orders": usage}, both, DAY) == ["_schema/shop/shop.public.yaml"]
    assert shards_pass(root, tmp_path, {"public.orders": usage}, both, DAY + timedelta(days=1), skipped=True) == []
    # orders vanish from the run: stale from that day on, and staying stale is no change
    assert shards_pass(root, tmp_path, {}, {"public.customers"}, DAY + timedelta(days=2)) != []
    assert "staleSince: '2026-05-13'" in (root / "_schema/shop/shop.public.yaml").read_text()
    assert shards_pass(root, tmp_path, {}, {"public.customers"}, DAY + timedelta(days=3), skipped=True) == []
    assert shards_pass(root, tmp_path, {"public.orders": usage}, both, DAY + timedelta(days=4)) != []  # back
