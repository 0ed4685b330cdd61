"""A build from nothing keeps what it wrote in memory and makes the ``docs.id`` index once at its end (ADR 0052):
it answers what the same files indexed one at a time answer, clashes, refused edges and unreadable files included."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from test_index_oracle import CUSTOMERS, answers, open_index, orders, write

from khive.index.store import PAGE_SIZE


def many(prefix: str, count: int, **extra: Any) -> list[dict[str, Any]]:
    """``count`` tables, each with columns and an fk to the one after it (a target later in the file)."""
    return [{"table": f"{prefix}.t{n}", "comment": f"table {n}", "columns": [f"c{k}" for k in range(n % 4)],
             "fk": [f"{prefix}.t{n + 1}", "public.orders"], **extra} for n in range(count)]


def project_files(project: Path) -> list[str]:
    """Files, oldest first: ids two files share (the newest wins), a column before its table, a document of kind
    column under a table's id and a later file's fk to it (the rules refuse that file), a file that is not JSON."""
    files: dict[str, list[dict[str, Any]]] = {"a.jsonl": [orders(), CUSTOMERS, *many("s", 30)],
             "b.jsonl": [{"column": "column:wh:s.t3.c0"}, *many("s", 5, comment="again"), *many("u", 12)],
             "c.jsonl": [{"column": "table:wh:odd"}, {"table": "public.bad", "fk": ["x"]}],
             "d.jsonl": [{"table": "v.t", "columns": ["a"], "fk": ["odd", "s.t2"]}]}
    for name, specs in files.items():
        write(project, name, specs)
    (project / "cat" / "e.jsonl").write_text("not json")
    names = [*files, "e.jsonl"]
    for n, name in enumerate(names):  # a second apart, in this order
        os.utime(project / "cat" / name, ns=(1_700_000_000_000_000_000 + n * 10**9,) * 2)
    return names


def test_a_build_from_nothing_answers_as_the_same_files_indexed_one_at_a_time(tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    names = project_files(staged)
    built = open_index(staged)
    one_by_one = open_index(tmp_path / "project")
    try:
        errors = built.refresh().errors
        assert set(errors) == {"cat/d.jsonl", "cat/e.jsonl"} and "not allowed" in errors["cat/d.jsonl"]
        assert (built.get("column:wh:s.t3.c0", refresh=False) or {})["path"] == "cat/b.jsonl"  # the newer file's
        assert (built.get("table:wh:s.t3", refresh=False) or {})["metadata"]["comment"] == "again"
        assert (built.get("table:wh:s.t9", refresh=False) or {})["metadata"]["comment"] == "table 9"  # a's alone
        later: dict[str, str] = {}
        for name in names:  # each file added to an index that holds the ones before (not from nothing)
            (tmp_path / "project" / "cat").mkdir(parents=True, exist_ok=True)
            shutil.copy2(staged / "cat" / name, tmp_path / "project" / "cat" / name)
            later |= one_by_one.refresh().errors
        assert later == errors
        assert answers(one_by_one) == answers(built)
        unique = {row[1]: row[2] for row in built.db.execute("PRAGMA index_list(docs)")}
        assert unique["docs_id"] == 1
    finally:
        built.close()
        one_by_one.close()



def page_size(index_file: Path) -> int:
    db = sqlite3.connect(index_file)
    try:
        return int(db.execute("PRAGMA page_size").fetchone()[0])
    finally:
        db.close()


def test_a_new_index_file_gets_large_pages_and_one_made_before_keeps_its_own(tmp_path: Path) -> None:
    """ADR 0055: a new index file is made with 16 KiB pages; a file made with SQLite's default 4 KiB (every index
    before) is opened as it is, builds and answers the same."""
    for name in ("new", "old"):
        project_files(tmp_path / name)
    old_file = tmp_path / "old" / ".khive" / "index.sqlite"
    old_file.parent.mkdir(parents=True)
    made = sqlite3.connect(old_file)
    made.execute("PRAGMA page_size = 4096")
    made.execute("PRAGMA journal_mode = WAL")  # writes the header, and with it the page size
    made.close()
    new, old = open_index(tmp_path / "new"), open_index(tmp_path / "old")
    try:
        assert new.refresh().errors == old.refresh().errors
        assert answers(new) == answers(old)
    finally:
        new.close()
        old.close()
    assert page_size(tmp_path / "new" / ".khive" / "index.sqlite") == PAGE_SIZE != 4096
    assert page_size(old_file) == 4096
