"""A build from nothing writes its rows on a writer thread, a part at a time (ADR 0052): the index it leaves is
the one a build of each file in one go leaves, row for row; a write that fails leaves the index as it was."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_index_oracle import CUSTOMERS, answers, open_index, orders, write

from khive.index import build, newrows

TABLES = ("docs", "docs_fts", "edges", "vectors", "items", "sources", "shadowed", "meta")


def stored(database: Path) -> dict[str, str]:
    """Every row of every table (rowids included, in rowid order) hashed per table, and the index names."""
    db = sqlite3.connect(database)
    try:
        out = {}
        for table in TABLES:
            digest = hashlib.sha256()
            for row in db.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid" if table not in ("shadowed",)
                                  else f"SELECT * FROM {table} ORDER BY 1, 2, 3"):
                digest.update(repr(row).encode())
            out[table] = digest.hexdigest()
        out["indexes"] = repr(sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")))
        return out
    finally:
        db.close()


def many(prefix: str, count: int, **extra: Any) -> list[dict[str, Any]]:
    """``count`` tables, each with columns and an fk to the one after it (a target later in the file)."""
    return [{"table": f"{prefix}.t{n}", "comment": f"table {n}", "columns": [f"c{k}" for k in range(n % 4)],
             "fk": [f"{prefix}.t{n + 1}", "public.orders"], **extra} for n in range(count)]


def project_files(project: Path) -> None:
    """Files of many parts: forward and backward fk edges, tables without columns, a column before its table,
    ids two files share (the newest wins), and a file whose fk points at a column (an edge rule broken)."""
    write(project, "a.jsonl", [orders(), CUSTOMERS, *many("s", 30)])
    write(project, "b.jsonl", [{"column": "column:wh:s.t3.c0"}, *many("s", 5, comment="again"), *many("u", 12)])
    write(project, "c.jsonl", [{"column": "table:wh:odd"}, {"table": "public.bad", "fk": ["x"]}])
    write(project, "d.jsonl", [{"table": "v.t", "columns": ["a"], "fk": ["odd"]}])  # an fk to a column: refused
    (project / "cat" / "e.jsonl").write_text("not json")  # a file the source cannot read
    for n, name in enumerate("abcde"):  # written in this order, a second apart: the newest wins a shared id
        os.utime(project / "cat" / f"{name}.jsonl", ns=(1_700_000_000_000_000_000 + n * 10**9,) * 2)


def build_from_nothing(project: Path) -> tuple[dict[str, str], dict[str, Any], dict[str, str]]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{project / '.khive' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)
    index = open_index(project)
    try:
        errors = index.refresh().errors
        return stored(project / ".khive" / "index.sqlite"), answers(index), errors
    finally:
        index.close()


@pytest.mark.parametrize("part", [1, 2, 7])
def test_a_build_in_parts_stores_what_one_part_per_file_stores(tmp_path: Path, part: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project_files(project)
    whole = build_from_nothing(project)  # every file one part (the default is thousands of documents)
    assert set(whole[2]) == {"cat/d.jsonl", "cat/e.jsonl"} and "not allowed" in whole[2]["cat/d.jsonl"]
    assert whole[1]["get"]["column:wh:s.t3.c0"][0]["path"] == "cat/b.jsonl"  # b's loose column won the id
    monkeypatch.setattr(build, "PART_DOCUMENTS", part)
    assert build_from_nothing(project) == whole


def test_a_write_that_fails_leaves_the_index_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread's error reaches the caller, the build's transaction rolls back, the next refresh builds
    every file."""
    project = tmp_path / "project"
    project_files(project)
    expected = build_from_nothing(project)
    monkeypatch.setattr(build, "PART_DOCUMENTS", 3)
    calls = []
    write_rows = newrows.Rows.write

    def failing(rows: newrows.Rows, db: sqlite3.Connection) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise sqlite3.OperationalError("disk I/O error (made up)")
        write_rows(rows, db)

    monkeypatch.setattr(newrows.Rows, "write", failing)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{project / '.khive' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)
    index = open_index(project)
    try:
        with pytest.raises(sqlite3.OperationalError, match="made up"):
            index.refresh()
        assert index.count() == 0 and not index.item_hashes()
        monkeypatch.setattr(newrows.Rows, "write", write_rows)
        report = index.refresh()
        assert report.full and set(report.errors) == {"cat/d.jsonl", "cat/e.jsonl"}
        assert answers(index) == expected[1]
    finally:
        index.close()
