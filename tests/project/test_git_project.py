"""A khive project kept in git: re-runs write nothing, data churn leaves the shards alone, a schema change is a
small diff, runs are kept under the retention policy, usage lists stay put (ADR 0033)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fresh_runtime import op_in_fresh_runtime
from git_shop import commit_all, execute, git, khive, make_git_project, numstat, runs, status, workload, write_log

pytestmark = pytest.mark.anyio


async def op(root: Path, text: str) -> dict[str, Any]:
    """One op through the dispatcher on a fresh runtime (as a CLI call would), as the operator."""
    return await op_in_fresh_runtime(root, text)


@pytest.mark.slow
def test_rerunning_every_step_through_the_cli_leaves_git_clean(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj")
    for step in (("scan", "shop"), ("request", 'sl.bootstrap(connection="shop")'), ("ingest", "shop")):
        done = khive(*step, cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr
    commit_all(root, "scan, bootstrap, ingest")
    tracked = git(root, "ls-files").splitlines()
    assert {".gitignore", "khive.yaml", "_schema/shop/shop.main.yaml"} <= set(tracked)
    assert any(path.startswith("semantic-layer/shop/") for path in tracked)
    assert any(path.startswith("wiki/global/historic-sql/") for path in tracked)
    assert any(path.startswith("raw-sources/shop/historic-sql-digests/") for path in tracked)
    assert not any(path.startswith((".khive/", "raw-sources/shop/live-database/", "raw-sources/shop/historic-sql/"))
                   for path in tracked)  # the runs and the state stay on this machine
    scans, ingests = runs(root), runs(root, "historic-sql")

    scan = khive("scan", "shop", cwd=root)
    assert scan.returncode == 0 and f"unchanged since {scans[-1]}" in scan.stdout, scan.stdout
    assert khive("request", 'sl.bootstrap(connection="shop")', cwd=root).returncode == 0
    ingest = khive("ingest", "shop", cwd=root)
    assert ingest.returncode == 0 and f"unchanged since {ingests[-1]}" in ingest.stderr, ingest.stderr
    assert status(root) == []
    assert (runs(root), runs(root, "historic-sql")) == (scans, ingests)  # no new run, not even an ignored one


async def test_inserted_rows_leave_the_shard_alone_and_a_new_category_changes_one_line(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj")
    first = await op(root, 'scan.run(connection="shop")')
    commit_all(root, "first scan")
    execute(root, "INSERT INTO customers VALUES (61, 'Customer 61', 'smb', 'DE')",
            *(f"INSERT INTO orders VALUES ({i}, 42, 'shipped', 12, '2026-03-14')" for i in range(301, 305)),
            "INSERT INTO order_lines VALUES (301, 1, 9, 2)")
    again = await op(root, 'scan.run(connection="shop")')
    assert again["syncId"] != first["syncId"]  # the data moved: a new run records it
    assert status(root) == []  # ... and the reviewable shard did not move

    execute(root, *(f"INSERT INTO orders VALUES ({i}, 7, 'lost', 12, '2026-03-14')" for i in range(305, 309)))
    await op(root, 'scan.run(connection="shop")')
    assert numstat(root) == {"_schema/shop/shop.main.yaml": (1, 0)}  # the new status, in the status column's samples
    assert "+      - lost" in git(root, "diff")


async def test_a_view_whose_values_change_on_every_read_leaves_the_shard_alone(tmp_path: Path) -> None:
    # an unordered aggregate in a view (string_agg without ORDER BY) returns another text when the plan changes;
    # random() makes that happen on every read. A view is not sampled unless sample_values.views says so.
    root = make_git_project(tmp_path / "proj")
    execute(root, "CREATE VIEW order_draws AS SELECT id, random() AS draw FROM orders")
    first = await op(root, 'scan.run(connection="shop")')
    assert first["skippedColumns"]["view"] == 2
    shard = (root / "_schema/shop/shop.main.yaml").read_text(encoding="utf-8")
    assert "order_draws:" in shard
    commit_all(root, "first scan")
    again = await op(root, 'scan.run(connection="shop")')
    assert again["syncId"] == first["syncId"]  # nothing read moved: no new run
    assert status(root) == []


async def test_an_added_column_is_a_small_readable_diff(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj")
    await op(root, 'scan.run(connection="shop")')
    commit_all(root, "first scan")
    execute(root, "ALTER TABLE customers ADD COLUMN loyalty_tier TEXT")
    report = await op(root, 'scan.run(connection="shop")')
    assert report["diffSummary"]["columns"]["added"] == ["main.customers.loyalty_tier"]
    changed = numstat(root)
    assert list(changed) == ["_schema/shop/shop.main.yaml"]
    added, deleted = changed["_schema/shop/shop.main.yaml"]
    assert deleted == 0 and added <= 6, git(root, "diff")
    assert "- name: loyalty_tier" in git(root, "diff")


async def test_runs_are_kept_under_the_retention_policy(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj", extra="runs:\n  keep_last: 2\n")
    schema_changes = [(await op(root, 'scan.run(connection="shop")'))["syncId"]]  # a first scan adds every table
    data_runs = []
    for i in range(3):
        execute(root, f"INSERT INTO order_lines VALUES ({i + 1}, {900 + i}, 3, 1)")
        data_runs.append((await op(root, 'scan.run(connection="shop")'))["syncId"])
    assert runs(root) == [*schema_changes, *data_runs[-2:]]
    execute(root, "ALTER TABLE orders ADD COLUMN channel TEXT")
    schema_changes.append((await op(root, 'scan.run(connection="shop")'))["syncId"])
    later = []
    for i in range(2):
        execute(root, f"INSERT INTO order_lines VALUES ({i + 1}, {950 + i}, 3, 1)")
        later.append(await op(root, 'scan.run(connection="shop")'))
    assert later[0]["prunedRuns"] == [data_runs[-1]] and "prunedRuns" not in later[1]
    assert runs(root) == [*schema_changes, *(report["syncId"] for report in later)]
    history = (await op(root, 'scan.status(connection="shop")'))["history"]
    assert history == runs(root)


async def test_usage_lists_keep_their_order_when_frequencies_swap(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj")
    await op(root, 'scan.run(connection="shop")')
    await op(root, 'sl.bootstrap(connection="shop")')
    first = await op(root, 'historic_sql.ingest(connection="shop")')
    assert first["workUnits"] > 0
    commit_all(root, "ingest")
    # orders with customers was the frequent join and orders with lines the occasional one; now it is the other
    # way round. The bands of each list's members move, the lists (sorted by name) do not. What may move in the
    # projected files is a table's place in the workload (ADR 0041): its tier and the narrative's first sentence.
    write_log(root / "logs" / "queries.jsonl", workload(by_segment=14, lines=40, status=20))
    second = await op(root, 'historic_sql.ingest(connection="shop")')
    assert second["syncId"] != first["syncId"] and second["workUnits"] > 0
    changed = [line[3:] for line in status(root)]
    assert any(path.startswith("raw-sources/shop/historic-sql-digests/") for path in changed), changed
    projected = [path for path in changed if path.startswith(("_schema/", "semantic-layer/"))]
    assert all(path.startswith(("raw-sources/shop/historic-sql-digests/", "_schema/", "semantic-layer/"))
               for path in changed), changed
    diff = git(root, "diff", "-U0", "--", *projected).splitlines() if projected else []
    edits = [line[1:].strip() for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # a narrative wraps over lines; list items and any other key stay as they were
    others = [edit for edit in edits if edit.startswith("- ")
              or (re.match(r"\w+:", edit) and not edit.startswith(("narrative:", "frequencyTier:")))]
    assert not others, others


async def test_pattern_pages_hold_formatted_sql(tmp_path: Path) -> None:
    root = make_git_project(tmp_path / "proj")
    await op(root, 'scan.run(connection="shop")')
    await op(root, 'historic_sql.ingest(connection="shop")')
    pages = sorted((root / "wiki/global/historic-sql").glob("*.md"))
    assert pages
    for page in pages:
        sql = page.read_text().split("```sql\n", 1)[1].split("\n```", 1)[0]
        lines = sql.splitlines()
        assert lines[0] == "SELECT" and "FROM orders AS o" in lines and max(map(len, lines)) < 100, sql
