"""A build from nothing written by a second process (ADR 0056) stores the rows an in-process build stores, and every
way it can stop (no child, the child killed, the parent killed, an id in two files, an index built meanwhile) leaves
the index whole: built in process instead, or as it was and built by the next refresh. The child is always reaped.

The child is started through a wrapper script (``BuildProcess.python``) that notes its pid: that a child ran, and
which process to kill, are known without looking inside the index.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from test_build_from_nothing import many, project_files
from test_index_oracle import RULES, answers, catalog, write

from khive.index.buildprocess import BuildProcess
from khive.index.documents import FileSource, Item
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex
from khive.index.store import rows_digest

FILES = ("a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl")
SPLIT_LOG = "khive.index.engine"


def generated(project: Path) -> None:
    """A few hundred tables with their columns and fks over four files, no id twice."""
    for n, name in enumerate(FILES):
        write(project, name, many(f"s{n}", 90))
    for n, name in enumerate(FILES):  # a second apart, in this order
        os.utime(project / "cat" / name, ns=(1_700_000_000_000_000_000 + n * 10**9,) * 2)


def wrapper(folder: Path, before: str = "") -> Path:
    """A ``python`` that appends its pid to ``folder/children``, runs ``before``, then becomes this interpreter."""
    script = folder / "python"
    script.write_text(f'#!/bin/sh\necho $$ >> "{folder}/children"\n{before}\nexec "{sys.executable}" "$@"\n')
    script.chmod(0o755)
    return script


def always(python: Path | str = sys.executable) -> BuildProcess:
    """A second process for any project and at any load."""
    return BuildProcess(min_bytes=0, max_load=math.inf, python=str(python))


def children(folder: Path) -> list[int]:
    noted = folder / "children"
    return [int(line) for line in noted.read_text().split()] if noted.exists() else []


def open_index(project: Path, process: BuildProcess | None,
               on_parse: Callable[[str], None] = lambda path: None) -> RetrievalIndex:
    def parse(path: str, text: str) -> Sequence[Item]:
        on_parse(path)
        return catalog(path, text)

    return RetrievalIndex(project, [FileSource("cat", ("cat",), (".jsonl",), parse)], embedder=HashingEmbedder(64),
                          edge_rules=RULES, watch=False, build_process=process)


def built_in_process(project: Path) -> str:
    """The digest of every row an in-process build of ``project`` stores (the index deleted before and after)."""
    _delete_index(project)
    index = open_index(project, None)
    try:
        index.refresh()
        return rows_digest(index.db)
    finally:
        index.close()
        _delete_index(project)


def _delete_index(project: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{project / '.khive' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)


def reaped(pid: int) -> bool:
    """Whether ``pid``, a child of this process, was waited for already (not left a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def split_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The log lines of a build that left a second process for this one (not those of files that fail)."""
    return [record.getMessage() for record in caplog.records
            if record.name == SPLIT_LOG and "building in this process" in record.getMessage()]


def refreshed_with_one_warning(index: RetrievalIndex, caplog: pytest.LogCaptureFixture, expected: str) -> str:
    """Refresh ``index`` (then close it), check its rows against the in-process build's, return the one warning."""
    try:
        with caplog.at_level(logging.WARNING, SPLIT_LOG):
            index.refresh()
        assert rows_digest(index.db) == expected
    finally:
        index.close()
    (said,) = split_warnings(caplog)
    return said


def test_a_build_in_a_second_process_stores_the_rows_of_one_in_process(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    project = tmp_path / "project"
    generated(project)
    expected = built_in_process(project)
    index = open_index(project, always(wrapper(tmp_path)))
    try:
        outcome: list[object] = []  # refreshed by a worker thread, as the daemon's are
        worker = threading.Thread(target=lambda: outcome.append(index.refresh()))
        worker.start()
        worker.join()
        assert rows_digest(index.db) == expected
        assert index.count("table") == 360 and index.search("table 17", limit=3)
        assert not index.refresh().changed  # the next refresh finds it fresh
    finally:
        index.close()
    (child,) = children(tmp_path)  # one child ran, committed (no warning) and was waited for
    assert split_warnings(caplog) == [] and reaped(child)


def test_a_small_project_a_loaded_machine_or_the_switch_off_build_in_process(tmp_path: Path) -> None:
    project = tmp_path / "project"
    generated(project)
    script = str(wrapper(tmp_path))  # a few KB, under the default minimum; a machine whose cores are taken; off
    for process in (BuildProcess(python=script), BuildProcess(min_bytes=0, max_load=-1.0, python=script), None):
        _delete_index(project)
        index = open_index(project, process)
        try:
            assert index.refresh().reindexed == len(FILES)
        finally:
            index.close()
    assert children(tmp_path) == []


@pytest.mark.parametrize("python", ["/nonexistent/python", "/bin/false"], ids=["cannot-start", "exits-at-once"])
def test_a_child_that_does_not_run_leaves_the_build_to_this_process(tmp_path: Path, python: str,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    project = tmp_path / "project"
    generated(project)
    expected = built_in_process(project)
    index = open_index(project, always(python))
    said = refreshed_with_one_warning(index, caplog, expected)
    assert "did not start" in said or "did not finish" in said


def test_a_child_killed_mid_build_leaves_the_build_to_this_process(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    project = tmp_path / "project"
    generated(project)
    expected = built_in_process(project)

    killed: list[int] = []

    def kill_the_child(path: str) -> None:
        if path == "cat/c.jsonl" and not killed:  # two files' rows sent, two to go (then read again, in process)
            killed.append(children(tmp_path)[0])
            os.kill(killed[0], signal.SIGKILL)

    index = open_index(project, always(wrapper(tmp_path)), kill_the_child)
    said = refreshed_with_one_warning(index, caplog, expected)
    assert "did not finish" in said and killed
    assert reaped(killed[0])


def test_an_id_in_two_files_leaves_the_build_to_this_process(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    project = tmp_path / "project"
    project_files(project)  # ids two files share, refused edges, a file that is not JSON
    expected = built_in_process(project)
    index = open_index(project, always(wrapper(tmp_path)))
    said = refreshed_with_one_warning(index, caplog, expected)
    assert "an id in two files" in said
    assert reaped(children(tmp_path)[0])


def test_a_file_that_fails_in_a_build_in_a_second_process_is_recorded_as_in_process(tmp_path: Path) -> None:
    project = tmp_path / "project"
    generated(project)
    (project / "cat" / "e.jsonl").write_text("not json")
    write(project, "f.jsonl", [{"column": "table:wh:odd"}, {"table": "v.t", "columns": ["a"], "fk": ["odd"]}])
    expected = built_in_process(project)
    index = open_index(project, always(wrapper(tmp_path)))
    try:
        errors = index.refresh().errors
        assert rows_digest(index.db) == expected
    finally:
        index.close()
    assert set(errors) == {"cat/e.jsonl", "cat/f.jsonl"} and len(children(tmp_path)) == 1


_KILLED_PARENT = """
import math, os, signal, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from test_build_process import open_index
from khive.index.buildprocess import BuildProcess

def die(path):
    if path == "cat/c.jsonl":
        os.kill(os.getpid(), signal.SIGKILL)

open_index(Path(sys.argv[2]), BuildProcess(min_bytes=0, max_load=math.inf, python=sys.argv[3]), die).refresh()
"""


def test_a_parent_killed_mid_build_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    project = tmp_path / "project"
    generated(project)
    expected = built_in_process(project)
    done = subprocess.run([sys.executable, "-c", _KILLED_PARENT, str(Path(__file__).parent), str(project),
                           str(wrapper(tmp_path))], capture_output=True, text=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (child,) = children(tmp_path)
    db = sqlite3.connect(project / ".khive" / "index.sqlite", timeout=60)
    try:
        db.execute("BEGIN IMMEDIATE")  # waits for the orphaned child's lock: it read EOF and rolled back
        assert db.execute("SELECT count(*) FROM docs").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0
        db.execute("ROLLBACK")
    finally:
        db.close()
    deadline = time.monotonic() + 60
    while _running(child) and time.monotonic() < deadline:  # it exits on its own (the lock is not proof)
        time.sleep(0.05)
    assert not _running(child)
    index = open_index(project, always())
    try:
        index.refresh()  # the next refresh builds it again, whole
        assert rows_digest(index.db) == expected
    finally:
        index.close()


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # an orphan's zombie waits for whoever adopted it


def test_an_index_built_while_the_lock_moved_to_the_child_is_not_built_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    project = tmp_path / "project"
    generated(project)
    expected = built_in_process(project)
    other = sqlite3.connect(project / ".khive" / "index.sqlite", isolation_level=None)  # another process's
    index = open_index(project, always(wrapper(tmp_path)))
    try:
        other.execute("BEGIN IMMEDIATE")  # the index still holds nothing when the parent looks
        worker = threading.Thread(target=index.refresh)
        with caplog.at_level(logging.WARNING, SPLIT_LOG):
            worker.start()
            deadline = time.monotonic() + 60
            while not children(tmp_path) and time.monotonic() < deadline:  # the parent looked and started it
                time.sleep(0.02)
            other.execute("INSERT INTO items VALUES ('cat', 'cat/gone.jsonl', 1, 1, '', NULL)")
            other.execute("COMMIT")  # what the child finds once it holds the lock
            worker.join()
        assert rows_digest(index.db) == expected  # built in process over what the other wrote
    finally:
        index.close()
        other.close()
    (said,) = split_warnings(caplog)
    assert "not empty" in said
    assert reaped(children(tmp_path)[0])


def test_answers_after_a_build_in_a_second_process_are_the_in_process_ones(tmp_path: Path) -> None:
    project = tmp_path / "project"
    generated(project)
    built = []
    for process in (None, always()):
        _delete_index(project)
        index = open_index(project, process)
        try:
            index.refresh()
            built.append(answers(index))
        finally:
            index.close()
    assert built[0] == built[1]
