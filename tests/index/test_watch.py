"""The inotify ChangeWatcher and the stat-walk fallback, on real files in tmp_path."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from khive.index import watch
from khive.index.scanstat import diff_stamps, stat_walk
from khive.index.watch import EVENT, IN_Q_OVERFLOW, ChangeWatcher

needs_inotify = pytest.mark.skipif(watch._libc() is None, reason="needs Linux inotify")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    wiki = tmp_path / "wiki"
    (wiki / "sub").mkdir(parents=True)
    (wiki / "a.md").write_text("a")
    (wiki / "sub" / "b.md").write_text("b")
    return wiki


@pytest.fixture
def watcher(root: Path) -> Iterator[ChangeWatcher]:
    with ChangeWatcher([root]) as w:
        assert w.drain() == set()
        yield w


# --- the watcher -------------------------------------------------------------------------------

@needs_inotify
def test_nothing_changed_is_an_empty_set(watcher: ChangeWatcher) -> None:
    assert watcher.drain() == set()
    assert watcher.drain() == set()


@needs_inotify
def test_create_modify_in_place_and_delete(watcher: ChangeWatcher, root: Path) -> None:
    (root / "new.md").write_text("n")
    assert watcher.drain() == {root / "new.md"}
    with open(root / "a.md", "r+b") as handle:  # an editor saving in place: no rename
        handle.write(b"A")
    assert watcher.drain() == {root / "a.md"}
    (root / "sub" / "b.md").unlink()
    assert watcher.drain() == {root / "sub" / "b.md"}


@needs_inotify
def test_rename_reports_both_names(watcher: ChangeWatcher, root: Path) -> None:
    (root / "a.md").rename(root / "sub" / "c.md")
    assert watcher.drain() == {root / "a.md", root / "sub" / "c.md"}


@needs_inotify
def test_atomic_write_reports_the_target_not_the_temp(watcher: ChangeWatcher, root: Path) -> None:
    temp = root / ".a.md.0123456789ab.tmp"
    temp.write_text("new content")
    os.replace(temp, root / "a.md")
    assert watcher.drain() == {root / "a.md"}


@needs_inotify
def test_files_written_right_after_makedirs_are_all_reported(watcher: ChangeWatcher, root: Path) -> None:
    os.makedirs(root / "new" / "deep" / "deeper")
    expected = {root / "new" / "x.md", root / "new" / "deep" / "y.md", root / "new" / "deep" / "deeper" / "z.md"}
    for path in expected:
        path.write_text("x")
    assert watcher.drain() == expected
    (root / "new" / "deep" / "deeper" / "z.md").write_text("again")  # the new directories are watched
    assert watcher.drain() == {root / "new" / "deep" / "deeper" / "z.md"}


@needs_inotify
def test_rmtree_reports_the_directory(watcher: ChangeWatcher, root: Path) -> None:
    shutil.rmtree(root / "sub")
    changed = watcher.drain()
    assert changed is not None and root / "sub" in changed
    assert watcher.drain() == set()


@needs_inotify
def test_directory_moved_within_the_tree_is_tracked_under_its_new_name(watcher: ChangeWatcher,
                                                                       root: Path) -> None:
    (root / "sub").rename(root / "moved")
    assert watcher.drain() == {root / "sub", root / "moved" / "b.md"}
    (root / "moved" / "b.md").write_text("changed")
    assert watcher.drain() == {root / "moved" / "b.md"}


@needs_inotify
def test_directory_moved_out_is_reported_and_no_longer_watched(watcher: ChangeWatcher, root: Path,
                                                               tmp_path: Path) -> None:
    (root / "sub").rename(tmp_path / "outside")
    assert watcher.drain() == {root / "sub"}
    (tmp_path / "outside" / "b.md").write_text("changed")
    assert watcher.drain() == set()


@needs_inotify
def test_dot_directories_are_not_watched(watcher: ChangeWatcher, root: Path) -> None:
    (root / ".khive").mkdir()
    (root / ".khive" / "index.sqlite").write_text("x")
    assert watcher.drain() == set()


@needs_inotify
def test_a_missing_root_is_watched_once_it_appears(tmp_path: Path) -> None:
    layer = tmp_path / "project" / "semantic-layer"
    with ChangeWatcher([layer]) as w:
        assert w.drain() == set()  # no root, no files: nothing to miss
        (layer / "models").mkdir(parents=True)
        (layer / "models" / "orders.yaml").write_text("x")
        assert w.drain() == {layer / "models" / "orders.yaml"}
        (layer / "models" / "orders.yaml").write_text("y")
        assert w.drain() == {layer / "models" / "orders.yaml"}
        shutil.rmtree(layer)
        changed = w.drain()
        assert changed is not None and layer in changed
        assert w.drain() == set()


@needs_inotify
def test_a_replaced_root_is_reported_and_rewatched(tmp_path: Path, root: Path, watcher: ChangeWatcher) -> None:
    root.rename(tmp_path / "old-wiki")  # the watches follow the old inode; the path names nothing now
    (tmp_path / "new-wiki").mkdir()
    (tmp_path / "new-wiki" / "n.md").write_text("n")
    (tmp_path / "new-wiki").rename(root)
    changed = watcher.drain()
    assert changed is not None and {root, root / "n.md"} <= changed
    (tmp_path / "old-wiki" / "a.md").write_text("moved away")
    (root / "n.md").write_text("changed")
    assert watcher.drain() == {root / "n.md"}


@needs_inotify
def test_paths_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with ChangeWatcher([Path("wiki")]) as w:
        Path("wiki").mkdir()
        Path("wiki/p.md").write_text("p")
        assert w.drain() == {tmp_path / "wiki" / "p.md"}


@needs_inotify
def test_concurrent_drains_lose_nothing(watcher: ChangeWatcher, root: Path) -> None:
    seen: set[Path] = set()
    stop = threading.Event()

    def drain_loop() -> None:
        while not stop.is_set():
            changed = watcher.drain()
            assert changed is not None
            seen.update(changed)

    threads = [threading.Thread(target=drain_loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    expected = {root / f"f{i}.md" for i in range(200)}
    for path in expected:
        path.write_text("x")
    stop.set()
    for thread in threads:
        thread.join()
    final = watcher.drain()
    assert final is not None
    assert seen | final == expected


def test_drain_is_none_before_start_and_after_close(root: Path) -> None:
    w = ChangeWatcher([root])
    assert w.drain() is None
    w.start()
    w.close()
    assert w.drain() is None
    w.close()  # idempotent


@needs_inotify
def test_overflow_gives_none_once_then_exact_again(watcher: ChangeWatcher, root: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "lost.md").write_text("x")
    monkeypatch.setattr(watcher, "_read_pending", lambda: EVENT.pack(-1, IN_Q_OVERFLOW, 0, 0))
    assert watcher.drain() is None
    monkeypatch.undo()
    assert watcher.drain() == set()
    (root / "sub" / "b.md").write_text("changed")
    assert watcher.drain() == {root / "sub" / "b.md"}


def _max_queued_events() -> int:
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        return 1 << 30


@needs_inotify
@pytest.mark.skipif(_max_queued_events() > 50_000, reason="queue too long to overflow quickly")
def test_a_real_queue_overflow_gives_none_once(watcher: ChangeWatcher, root: Path) -> None:
    a, b = root / "a.md", root / "sub" / "b.md"
    for _ in range(_max_queued_events() // 2 + 100):  # alternate, or the kernel merges repeated events
        os.utime(a)
        os.utime(b)
    assert watcher.drain() is None
    assert watcher.drain() == set()
    (root / "sub" / "b.md").write_text("changed")
    assert watcher.drain() == {root / "sub" / "b.md"}


def test_without_inotify_drain_is_always_none(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "_libc", lambda: None)
    with ChangeWatcher([root]) as w:
        assert not w.available
        assert w.drain() is None


class _FailingLibc:
    """inotify that cannot start, or whose add_watch hits the watch limit (ENOSPC)."""

    def __init__(self, *, init_fails: bool) -> None:
        self.init_fails = init_fails
        self.fds: list[int] = []

    def inotify_init1(self, flags: int) -> int:
        if self.init_fails:
            return -1
        fd = os.open(os.devnull, os.O_RDONLY)
        self.fds.append(fd)
        return fd

    def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
        ctypes.set_errno(errno.ENOSPC)
        return -1

    def inotify_rm_watch(self, fd: int, wd: int) -> int:
        return 0


@pytest.mark.parametrize("init_fails", [True, False], ids=["init-fails", "watch-limit"])
def test_inotify_failures_give_up(root: Path, monkeypatch: pytest.MonkeyPatch, init_fails: bool) -> None:
    libc = _FailingLibc(init_fails=init_fails)
    monkeypatch.setattr(watch, "_libc", lambda: libc)
    with ChangeWatcher([root]) as w:
        assert not w.available
        assert w.drain() is None
        assert w.drain() is None
    for fd in libc.fds:  # the watcher closed the instance it gave up on
        with pytest.raises(OSError):
            os.fstat(fd)


# --- the stat-walk fallback --------------------------------------------------------------------

def test_stat_walk_stamps_files_and_skips_state_and_temp_files(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "sub" / ".b.md.0123456789ab.tmp").write_text("half-written")
    (root / "sub" / "c.yaml").write_text("c: 1")
    stamps = stat_walk([root, root.parent / "missing"])
    assert set(stamps) == {root / "a.md", root / "sub" / "b.md", root / "sub" / "c.yaml"}
    st = (root / "a.md").stat()
    assert stamps[root / "a.md"] == (st.st_mtime_ns, st.st_size)
    assert set(stat_walk([root], (".yaml", ".yml"))) == {root / "sub" / "c.yaml"}


def test_stat_walk_walks_deep_trees(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 120)
    deep.mkdir(parents=True)
    (deep / "leaf.md").write_text("x")
    assert set(stat_walk([tmp_path])) == {deep / "leaf.md"}


def test_diff_stamps(root: Path) -> None:
    before = stat_walk([root])
    (root / "new.md").write_text("n")
    (root / "a.md").write_text("a longer body")
    (root / "sub" / "b.md").unlink()
    added, changed, removed = diff_stamps(before, stat_walk([root]))
    assert (added, changed, removed) == ({root / "new.md"}, {root / "a.md"}, {root / "sub" / "b.md"})


@needs_inotify
def test_watcher_and_stat_walk_agree_on_a_new_tree(watcher: ChangeWatcher, root: Path) -> None:
    tree = root / "tree"
    for i in range(5):
        (tree / f"d{i}" / ".hidden").mkdir(parents=True)
        (tree / f"d{i}" / "f.md").write_text("x")
        (tree / f"d{i}" / ".hidden" / "g.md").write_text("x")
        (tree / f"d{i}" / ".f.md.0123456789ab.tmp").write_text("x")
    assert watcher.drain() == set(stat_walk([tree]))
