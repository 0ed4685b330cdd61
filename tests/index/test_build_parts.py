"""A file's rows are written a part at a time (ADR 0059): however its documents are cut into parts, the index
answers the same, and a file that fails after a part of it went to a writer process is built again in process."""

from __future__ import annotations

import logging
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
