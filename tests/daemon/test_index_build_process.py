"""The daemon builds an index from nothing with a second process writing (ADR 0056) on the worker thread that runs
the search, reaps that process, and stores the rows the CLI's in-process build stores."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from daemon_helpers import Daemon

from khive.index.store import rows_digest

pytestmark = pytest.mark.slow

PACKS = {"KHIVE_PACKS": "core,wiki,discover"}
SEARCH = 'discover.search(query="tide tables for harbour 17")'


def pages(project: Path, count: int) -> None:
    folder = project / "wiki" / "global" / "harbours"
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"harbour-{n}.md").write_text(f"---\nsummary: Harbour {n}\ntags: [port{n % 7}]\n---\n"
                                                f"tide tables for harbour {n}, berths {n % 13}\n")


def configured(project: Path, *, build_process: bool) -> None:
    config = project / "khive.yaml"
    text = config.read_text().split("\nindex:")[0]
    config.write_text(f"{text}\nindex: {{build_process: {str(build_process).lower()}, build_process_min_mb: 0, "
                      f"build_process_max_load: 1000}}\n")


def digest(project: Path) -> str:
    db = sqlite3.connect(project / ".khive" / "index.sqlite")
    try:
        return rows_digest(db)
    finally:
        db.close()


def children_states(pid: int) -> list[str]:
    """The state letter of every child of ``pid`` (Z: a zombie nobody waited for)."""
    tasks = Path(f"/proc/{pid}/task")
    kids = {int(k) for task in tasks.iterdir() for k in (task / "children").read_text().split()}
    states = []
    for kid in kids:
        try:
            states.append(Path(f"/proc/{kid}/stat").read_text().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            continue
    return states


def test_the_daemon_builds_with_a_second_process_the_rows_the_cli_builds_in_process(daemon: Daemon,
                                                                                   project: Path) -> None:
    pages(project, 150)
    configured(project, build_process=True)
    done = daemon.khive("request", SEARCH, cwd=project, env=PACKS)
    assert done.returncode == 0, done.stderr
    refs = json.loads(done.stdout)["results"][0]["result"]["refs"]
    assert refs and "harbour-17" in refs[0]["id"]
    pid = daemon.pid()
    assert pid is not None
    assert "written by a second process" in daemon.log() and "building in this process" not in daemon.log()
    assert "Z" not in children_states(pid)
    by_daemon = digest(project)

    local = project.parent / "local"  # the same files (stamps kept), no index
    shutil.copytree(project / "wiki", local / "wiki")
    shutil.copy2(project / "khive.yaml", local / "khive.yaml")
    for built_with_child in (True, False):  # the CLI without the daemon, both ways
        configured(local, build_process=built_with_child)
        shutil.rmtree(local / ".khive", ignore_errors=True)
        done = daemon.khive("request", SEARCH, cwd=local, env={**PACKS, "KHIVE_NO_DAEMON": "1"})
        assert done.returncode == 0, done.stderr
        assert digest(local) == by_daemon
