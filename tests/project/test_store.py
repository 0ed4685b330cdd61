"""The project file store: atomic writes, per-path locks across threads and processes, git commits."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from khive.errors import KhiveError
from khive.project import store as store_module
from khive.project.store import FileStore, parse_author

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# A child process bumping a counter file through update(); it waits for "go" so both children overlap.
INCREMENT_CHILD = """
import sys
from pathlib import Path
from khive.project.store import FileStore

store = FileStore(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    store.update("wiki/counter.txt", lambda old: str(int(old or "0") + 1))
"""

# A child process killed by SIGKILL after the temp file is written and fsynced, before the rename.
KILLED_CHILD = """
import os, sys
from pathlib import Path
from khive.project.store import FileStore

store = FileStore(Path(sys.argv[1]))
os.replace = lambda *args, **kwargs: os.kill(os.getpid(), 9)
store.write_text("wiki/page.md", "new content")
"""


def leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.name", "Test User")
    git(tmp_path, "config", "user.email", "test@example.com")
    return tmp_path


# -- basics --

def test_write_read_round_trip(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    result = store.write_text("wiki/global/orders.md", "# Orders\nnon-ascii: é\n")
    data = "# Orders\nnon-ascii: é\n".encode()
    assert result.path == "wiki/global/orders.md" and result.changed
    assert result.bytes == len(data) and result.commit is None and result.commit_error is None
    assert result.sha256 is not None and len(result.sha256) == 64
    assert store.read_text("wiki/global/orders.md") == "# Orders\nnon-ascii: é\n"
    assert store.read_bytes("wiki/global/orders.md") == data
    assert store.exists("wiki/global/orders.md")
    stat = store.stat("wiki/global/orders.md")
    assert stat is not None and stat.size == len(data)
    assert store.read_text("wiki/global/missing.md") is None
    assert store.stat("wiki/global/missing.md") is None and not store.exists("wiki/global/missing.md")
    assert store.stat("wiki/global") is None and not store.exists("wiki")


def test_unchanged_write_is_a_noop(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    first = store.write_text("wiki/a.md", "same")
    os.utime(tmp_path / "wiki/a.md", ns=(1_000_000_000, 1_000_000_000))  # a rewrite would surely move it
    again = store.write_text("wiki/a.md", "same")
    assert not again.changed and again.sha256 == first.sha256 and again.bytes == 4
    assert (tmp_path / "wiki/a.md").stat().st_mtime_ns == 1_000_000_000
    assert store.write_text("wiki/a.md", "other").changed


def test_paths_are_canonicalised(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    assert store.write_text("./wiki//a.md", "x").path == "wiki/a.md"
    assert store.read_text("wiki/a.md") == "x"


def test_list_with_prefix_and_suffix(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    for path in ("wiki/global/b.md", "wiki/global/a.md", "wiki/global/data.csv", "wiki/users/ann/n.md", "top.md"):
        store.write_text(path, path)
    (tmp_path / ".khive/index.sqlite").write_text("state")
    (tmp_path / "wiki/global/.a.md.0123456789ab.tmp").write_text("half")  # a crashed write's temp file
    assert store.list("wiki/global/") == ["wiki/global/a.md", "wiki/global/b.md", "wiki/global/data.csv"]
    assert store.list("wiki/", suffix=".md") == ["wiki/global/a.md", "wiki/global/b.md", "wiki/users/ann/n.md"]
    assert store.list("wiki/glo") == store.list("wiki/global/")
    assert store.list("wiki/global") == store.list("wiki/global/")
    assert store.list() == sorted(["top.md", *store.list("wiki/")])
    assert store.list("nothing/here/") == []


def test_delete(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.write_text("wiki/a.md", "x")
    assert store.delete("wiki/a.md") is True
    assert store.read_text("wiki/a.md") is None
    assert store.delete("wiki/a.md") is False


def test_update_sees_old_text_and_none_deletes(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    seen: list[str | None] = []

    def append(old: str | None) -> str:
        seen.append(old)
        return (old or "") + "line\n"

    store.update("wiki/log.md", append)
    result = store.update("wiki/log.md", append)
    assert seen == [None, "line\n"] and result.changed and store.read_text("wiki/log.md") == "line\nline\n"
    gone = store.update("wiki/log.md", lambda _old: None)
    assert gone.changed and gone.sha256 is None and gone.bytes == 0 and not store.exists("wiki/log.md")
    assert not store.update("wiki/log.md", lambda _old: None).changed


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.md", "wiki/../../outside.md", ".khive/index.sqlite",
                                  ".git/config", "sub/.git/HEAD", "", ".", "wiki\\a.md", "a\0b"])
def test_invalid_paths_are_rejected(tmp_path: Path, path: str) -> None:
    store = FileStore(tmp_path)
    for call in (lambda: store.write_text(path, "x"), lambda: store.read_text(path), lambda: store.delete(path)):
        with pytest.raises(KhiveError) as info:
            call()
        assert info.value.code == "invalid_path"
        assert repr(path) in info.value.message and "fix:" in info.value.message
        assert info.value.details["path"] == path
    with pytest.raises(KhiveError, match="invalid path"):
        store.list("../" if path == "" else path)


@pytest.mark.parametrize(("path", "why"), [
    ("wiki/" + "x" * 201 + ".md", "each file or directory name is at most 200 bytes"),
    ("wiki/" + "ü" * 101, "each file or directory name is at most 200 bytes"),
    ("wiki/" + "a/" * 600 + "b.md", "the limit is 1024"),
    ("wiki/" + "x" * 10_000, "is 10005 bytes long"),
    ("wiki/\udcff.md", "lone surrogate"),
])
def test_too_long_or_unencodable_paths_are_invalid_not_os_errors(tmp_path: Path, path: str, why: str) -> None:
    store = FileStore(tmp_path)
    for call in (lambda: store.write_text(path, "x"), lambda: store.read_text(path), lambda: store.delete(path),
                 lambda: store.exists(path), lambda: store.stat(path)):
        with pytest.raises(KhiveError) as info:
            call()
        assert info.value.code == "invalid_path" and why in info.value.message
        assert len(info.value.message) < 400  # a 10,000-character name is not echoed whole


def test_the_longest_allowed_name_can_be_written(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    path = "wiki/" + "x" * 197 + ".md"
    assert store.write_text(path, "x").changed and store.read_text(path) == "x"


def test_reading_a_directory_is_an_invalid_path(tmp_path: Path) -> None:
    (tmp_path / "wiki").mkdir()
    with pytest.raises(KhiveError, match="is a directory"):
        FileStore(tmp_path).read_text("wiki")


def test_author_forms() -> None:
    assert parse_author(None) == ("khive", "khive@localhost")
    assert parse_author("Ann Lee <ann@example.com>") == ("Ann Lee", "ann@example.com")
    assert parse_author("agent:ci-bot") == ("agent:ci-bot", "khive@localhost")
    for bad in ("", "a <b", "x\ny", "<only@mail>"):
        with pytest.raises(KhiveError) as info:
            parse_author(bad)
        assert info.value.code == "invalid_author"


# -- atomicity --

def test_failed_rename_keeps_old_content_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(tmp_path)
    store.write_text("wiki/page.md", "old content")

    def crash(*_args: object, **_kwargs: object) -> None:
        raise OSError("injected crash before rename")

    monkeypatch.setattr(store_module.os, "replace", crash)
    with pytest.raises(OSError, match="injected"):
        store.write_text("wiki/page.md", "new content")
    monkeypatch.undo()
    assert store.read_text("wiki/page.md") == "old content"
    assert leftovers(tmp_path / "wiki") == []


@pytest.mark.slow
def test_process_killed_before_rename_leaves_old_content(tmp_path: Path) -> None:
    FileStore(tmp_path).write_text("wiki/page.md", "old content")
    done = subprocess.run([sys.executable, "-c", KILLED_CHILD, str(tmp_path)], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    store = FileStore(tmp_path)
    assert store.read_text("wiki/page.md") == "old content"
    # The fsynced temp file survives a hard kill; listings ignore it.
    (temp,) = leftovers(tmp_path / "wiki")
    assert (tmp_path / "wiki" / temp).read_text() == "new content"
    assert store.list("wiki/") == ["wiki/page.md"]


def test_readers_never_see_half_a_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    contents = ("a" * 2_000_000, "b" * 1_000_000 + "c" * 1_000_000)
    store.write_text("wiki/big.md", contents[0])
    torn: list[int] = []

    def writer() -> None:
        for i in range(50):
            store.write_text("wiki/big.md", contents[(i + 1) % 2])

    def reader() -> None:
        for _ in range(200):
            text = store.read_text("wiki/big.md")
            if text not in contents:
                torn.append(len(text or ""))

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert torn == []
    assert leftovers(tmp_path / "wiki") == []


# -- locking --

def test_threads_never_lose_an_update(tmp_path: Path) -> None:
    stores = [FileStore(tmp_path), FileStore(tmp_path)]  # two instances share the per-path lock

    def bump(store: FileStore) -> None:
        for _ in range(50):
            store.update("wiki/counter.txt", lambda old: str(int(old or "0") + 1))

    threads = [threading.Thread(target=bump, args=(stores[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stores[0].read_text("wiki/counter.txt") == "400"


@pytest.mark.slow
def test_processes_never_lose_an_update(tmp_path: Path) -> None:
    children = [subprocess.Popen([sys.executable, "-c", INCREMENT_CHILD, str(tmp_path), "200"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.close()
    for child in children:
        assert child.wait(timeout=60) == 0
        assert child.stdout is not None
        child.stdout.close()
    assert FileStore(tmp_path).read_text("wiki/counter.txt") == "400"


# -- git --

@needs_git
def test_each_write_is_one_commit_with_its_author(repo: Path) -> None:
    store = FileStore(repo, git_commit=True)
    first = store.write_text("wiki/global/a.md", "a", author="Ann Lee <ann@example.com>", message="add a")
    second = store.write_text("wiki/global/b.md", "b", author="agent:ci-bot")
    assert first.commit_error is None and second.commit_error is None
    assert second.commit == git(repo, "rev-parse", "HEAD").strip()
    log = git(repo, "log", "--format=%an <%ae> | %cn | %s").splitlines()
    assert log == ["agent:ci-bot <khive@localhost> | khive | khive: write wiki/global/b.md",
                   "Ann Lee <ann@example.com> | khive | add a"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["wiki/global/b.md"]

    unchanged = store.write_text("wiki/global/a.md", "a", author="Ann Lee <ann@example.com>")
    assert not unchanged.changed and unchanged.commit is None
    assert len(git(repo, "log", "--format=%H").splitlines()) == 2


@needs_git
def test_delete_commits_the_removal(repo: Path) -> None:
    store = FileStore(repo, git_commit=True)
    store.write_text("wiki/a.md", "a")
    assert store.delete("wiki/a.md", author="Ann <ann@example.com>")
    assert git(repo, "log", "-1", "--format=%an %s").strip() == "Ann khive: delete wiki/a.md"
    assert git(repo, "ls-files").strip() == ""
    assert not store.delete("wiki/a.md")
    assert len(git(repo, "log", "--format=%H").splitlines()) == 2


@needs_git
def test_commit_takes_only_its_path_and_ignores_inherited_git_env(repo: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "staged.md").write_text("someone else's work")
    git(repo, "add", "staged.md")
    monkeypatch.setenv("GIT_DIR", str(repo / "not-a-repo"))  # as inside a git hook of another repo
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / "not-an-index"))
    result = FileStore(repo, git_commit=True).write_text("wiki/a.md", "a")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert result.commit_error is None and result.commit is not None
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["wiki/a.md"]
    assert git(repo, "diff", "--cached", "--name-only").split() == ["staged.md"]


@needs_git
def test_git_failure_is_reported_and_keeps_the_file(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho rejected by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    with caplog.at_level(logging.WARNING, logger="khive.project.store"):
        result = FileStore(repo, git_commit=True).write_text("wiki/a.md", "kept")
    assert result.changed and result.commit is None
    assert result.commit_error is not None and "rejected by hook" in result.commit_error
    assert (repo / "wiki/a.md").read_text() == "kept"
    assert "not committed" in caplog.text


@needs_git
def test_outside_a_git_repo_nothing_fails(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    probe = subprocess.run(["git", "-C", str(tmp_path), "rev-parse"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the temp directory is itself inside a git work tree")
    store = FileStore(tmp_path, git_commit=True)
    with caplog.at_level(logging.WARNING, logger="khive.project.store"):
        result = store.write_text("wiki/a.md", "a")
        assert store.delete("wiki/a.md")
    assert result.changed and result.commit is None and result.commit_error is None
    assert caplog.records == []


# --- symlinks (ADR 0032) ----------------------------------------------------------------------

@pytest.mark.parametrize(("link", "target", "inside"), [
    pytest.param("wiki/a.md", "b.md", True, id="sibling"),
    pytest.param("wiki/a.md", "../notes/b.md", True, id="up-and-back-in"),
    pytest.param("wiki/a.md", "chain.md", True, id="a-chain-that-stays"),
    pytest.param("wiki/a.md", "../../outside.md", False, id="up-and-out"),
    pytest.param("wiki/a.md", "/etc/hostname", False, id="absolute-out"),
    pytest.param("wiki/a.md", "escape.md", False, id="a-chain-that-leaves"),
    pytest.param("wiki/a.md", "../.git/config", False, id="into-git"),
])
def test_a_symlink_is_followed_only_while_it_stays_inside(tmp_path: Path, link: str, target: str,
                                                         inside: bool) -> None:
    root = tmp_path / "proj"
    for folder in ("wiki", "notes", ".git"):
        (root / folder).mkdir(parents=True)
    (root / "wiki/b.md").write_text("b")
    (root / "notes/b.md").write_text("notes b")
    (root / ".git/config").write_text("[core]")
    (tmp_path / "outside.md").write_text("outside")
    (root / "wiki/chain.md").symlink_to("b.md")
    (root / "wiki/escape.md").symlink_to(tmp_path / "outside.md")
    (root / link).symlink_to(target)
    store = FileStore(root)
    if inside:
        assert store.read_text(link) in ("b", "notes b")
        assert store.write_text(link, "new").changed and (root / link).is_symlink()
    else:
        with pytest.raises(KhiveError) as info:
            store.read_text(link)
        assert info.value.code == "path_outside_project"
        with pytest.raises(KhiveError):
            store.write_text(link, "new")
        assert store.exists(link) is False
        assert link not in store.list("wiki/")


def test_a_symlink_loop_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki/a.md").symlink_to("b.md")
    (tmp_path / "wiki/b.md").symlink_to("a.md")
    with pytest.raises(KhiveError) as info:
        FileStore(tmp_path).read_text("wiki/a.md")
    assert info.value.code == "invalid_path" and "loop" in info.value.message
