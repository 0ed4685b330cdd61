"""A file's rows are written a part at a time (ADR 0059): however its documents are cut into parts, the index
answers the same, and a file that fails after a part of it went to a writer process is built again in process.
A build from nothing commits its write-ahead log without copying it into the file; a thread copies it."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_build_from_nothing import many, project_files
from test_build_process import always, children, generated, reaped, refreshed_with_one_warning, wrapper
from test_index_oracle import RULES, answers, catalog, write

from khive.index import engine
from khive.index.documents import FileSource
from khive.index.embed import Cells, HashingEmbedder
from khive.index.engine import RetrievalIndex
from khive.index.store import rows_digest
from khive.sqlite_util import WAL_AUTOCHECKPOINT, checkpoint_in_thread, immediate, open_wal


class PoisonedEmbedder(HashingEmbedder):
    """Fails (as a source's bad value would) on a text holding ``poison``."""

    def cells(self, texts: Sequence[str]) -> Cells:
        if any("poison" in text for text in texts):
            raise ValueError("an embedding failed")
        return super().cells(texts)


def open_index(project: Path, python: Path | None = None) -> RetrievalIndex:
    """An index of ``project``'s catalog files; ``python``: its build from nothing through a second process."""
    return RetrievalIndex(project, [FileSource("cat", ("cat",), (".jsonl",), catalog)], embedder=PoisonedEmbedder(64),
                          edge_rules=RULES, watch=False, build_process=always(python) if python else None)


def built(project: Path) -> tuple[dict[str, object], str]:
    """(the answers, the rows' digest) of an in-process build of ``project`` (the index deleted after)."""
    index = open_index(project)
    try:
        index.refresh()
        return answers(index), rows_digest(index.db)
    finally:
        index.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{project / '.khive' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("part", [1, 2, 7])
def test_an_index_built_in_small_parts_answers_as_one_built_a_file_at_once(tmp_path: Path, part: int,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    project_files(tmp_path)  # ids in two files, a column before its table, a refused file, one that is no JSON
    whole = built(tmp_path)
    monkeypatch.setattr(engine, "PART_DOCS", part)
    assert built(tmp_path) == whole  # the same answers and the same rows, implied edges and lean rows included


def test_a_file_failing_after_its_first_part_leaves_a_second_process_for_this_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    generated(project)
    write(project, "e.jsonl", [*many("p", 20), {"table": "p.last", "comment": "poison", "columns": ["a"]}])
    monkeypatch.setattr(engine, "PART_DOCS", 16)  # the poisoned table comes parts after the file's first
    expected = built(project)[1]
    index = open_index(project, wrapper(tmp_path))
    said = refreshed_with_one_warning(index, caplog, expected)
    assert "a file failed after a part of it was written" in said and "an embedding failed" in said
    (child,) = children(tmp_path)
    assert reaped(child)
    check = open_index(project)
    try:
        assert check.item_errors() == {"cat/e.jsonl": "an embedding failed"}
        assert check.get("table:wh:p.t0", refresh=False) is None  # the file's first part did not stay
        assert check.count("table") == 360
    finally:
        check.close()


def test_a_file_failing_in_process_keeps_none_of_its_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, "a.jsonl", many("s", 10))
    write(tmp_path, "b.jsonl", [*many("p", 20), {"table": "p.last", "comment": "poison"}])
    monkeypatch.setattr(engine, "PART_DOCS", 4)
    index = open_index(tmp_path)
    try:
        with caplog.at_level(logging.WARNING):
            errors = index.refresh().errors
        assert errors == {"cat/b.jsonl": "an embedding failed"}
        assert index.count("table") == 10 and index.get("table:wh:p.t0", refresh=False) is None
    finally:
        index.close()


def test_a_build_from_nothing_leaves_its_log_to_a_thread_and_later_commits_copy_as_before(tmp_path: Path) -> None:
    write(tmp_path, "a.jsonl", many("s", 300))
    index = open_index(tmp_path)
    try:
        index.refresh()
        assert index.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_AUTOCHECKPOINT
        expected = rows_digest(index.db)
    finally:
        index.close()  # (waits for the copy)
    assert not Path(f"{tmp_path / '.khive' / 'index.sqlite'}-wal").exists()
    plain = sqlite3.connect(tmp_path / ".khive" / "index.sqlite")
    try:
        assert rows_digest(plain) == expected and plain.execute("SELECT count(*) FROM docs").fetchone()[0] > 300
    finally:
        plain.close()


def test_a_log_is_copied_into_its_file_by_a_thread_while_its_writer_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    writer = open_wal(path)
    reader = open_wal(path)  # a reader between the commits: the log is not deleted on the writer's close
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("CREATE TABLE t (x TEXT)")
        with immediate(writer):
            writer.executemany("INSERT INTO t VALUES (?)", [("x" * 200,) for _ in range(5000)])
        before = path.stat().st_size
        checkpoint_in_thread(path).join()
        assert before < 100_000 < path.stat().st_size  # the rows were in the log only, now in the file too
        assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 5000
    finally:
        writer.close()
        reader.close()
