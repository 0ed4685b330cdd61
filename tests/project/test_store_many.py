"""``FileStore.replace_many``: many files written with their data synced before any rename, each folder synced
once, the first file changed meanwhile stopping the batch there (ADR 0054)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from khive.errors import WriteConflict
from khive.project import store as store_module
from khive.project.store import FileStore


def _leftovers(root: Path) -> list[str]:
    return sorted(name for _, _, names in os.walk(root) for name in names if name.endswith(".tmp"))


def _stale(path: str) -> WriteConflict:
    return WriteConflict(f"{path} changed meanwhile", details={"path": path})


def _message(path: str) -> str:
    return f"test: {path}"


def test_each_file_written_and_each_folder_synced_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(tmp_path)
    store.write_text("sl/a/one.yaml", "old one")
    synced: list[Path] = []
    monkeypatch.setattr(store_module, "fsync_dir", synced.append)
    results = store.replace_many([("sl/a/one.yaml", "old one", "new one"), ("sl/a/two.yaml", None, "two"),
                                  ("sl/b/three.yaml", None, "three"), ("sl/b/same.yaml", None, "same")],
                                 message=_message, stale=_stale)
    assert [(r.path, r.changed) for r in results] == [("sl/a/one.yaml", True), ("sl/a/two.yaml", True),
                                                      ("sl/b/three.yaml", True), ("sl/b/same.yaml", True)]
    assert [store.read_text(p) for p in ("sl/a/one.yaml", "sl/a/two.yaml", "sl/b/three.yaml")] == [
        "new one", "two", "three"]
    assert sorted(synced) == [tmp_path / "sl" / "a", tmp_path / "sl" / "b"]
    assert _leftovers(tmp_path) == []


def test_a_file_changed_meanwhile_stops_the_batch_there(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.write_text("sl/b.yaml", "someone's edit")
    writes = [("sl/a.yaml", None, "a"), ("sl/b.yaml", "what bootstrap read", "b"), ("sl/c.yaml", None, "c")]
    with pytest.raises(WriteConflict) as info:
        store.replace_many(writes, message=_message, stale=_stale)
    assert info.value.details == {"path": "sl/b.yaml"}
    assert store.read_text("sl/a.yaml") == "a"
    assert store.read_text("sl/b.yaml") == "someone's edit"
    assert store.read_text("sl/c.yaml") is None
    assert _leftovers(tmp_path) == []


def test_a_failed_rename_keeps_every_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(tmp_path)
    store.write_text("sl/a.yaml", "old a")

    def crash(*_args: object, **_kwargs: object) -> None:
        raise OSError("injected crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="injected"):
        store.replace_many([("sl/a.yaml", "old a", "new a"), ("sl/b.yaml", None, "b")], message=_message,
                           stale=_stale)
    monkeypatch.undo()
    assert store.read_text("sl/a.yaml") == "old a" and store.read_text("sl/b.yaml") is None
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_each_file_is_one_commit_when_the_store_commits(tmp_path: Path) -> None:
    for args in (("init", "-q", "-b", "main"), ("config", "user.name", "T"), ("config", "user.email", "t@x")):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True)
    store = FileStore(tmp_path, git_commit=True)
    results = store.replace_many([("sl/a.yaml", None, "a"), ("sl/b.yaml", None, "b")], author="Ann <ann@x>",
                                 message=_message, stale=_stale)
    assert all(r.commit and r.commit_error is None for r in results)
    log = subprocess.run(["git", "-C", str(tmp_path), "log", "--format=%an | %s"], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert log == ["Ann | test: sl/b.yaml", "Ann | test: sl/a.yaml"]
