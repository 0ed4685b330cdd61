"""Which project files changed since the last look, at a cost proportional to the change (Linux inotify).

Contract with the caller:

* ``start()``, then one full ``scanstat.stat_walk``; from then on every ``drain()`` returns each absolute
  path that may have changed since the previous drain. A path is a hint, so check the disk: a file that
  is gone is dropped; a directory path (deleted, moved out, or a root that vanished or was replaced) means
  "reconcile everything indexed under it". Paths come in the form the roots were given in (not resolved).
* ``drain()`` returns ``None`` when it cannot vouch for completeness; the caller then stat-walks.
  Not started or closed, or inotify unavailable: always ``None``. Queue overflow: ``None`` once, and the
  watches are rebuilt so the next drain is exact again. Watch limit (``max_user_watches``) hit: the
  watcher gives up for good (``available`` turns False, its watches are released).
* Missing roots: every drain stats each root (one syscall apiece). A root that does not exist has no
  files, so there is nothing to report; when it appears, or the path now names another directory
  (an ancestor renamed or replaced), it is watched afresh and all its files are reported.

Each directory is watched before it is listed, so a file created in a brand-new directory is seen either
in the listing or as an event. Dot-directories are not watched and ``.*.tmp`` names are not reported,
but the rename onto the target is (IN_MOVED_TO). Symlinked directories are not followed.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from khive.index.scanstat import is_skipped_dir, is_skipped_file

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000

WATCH_MASK = (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
              | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name
_READ_SIZE = 64 * 1024  # far above one event (16 + NAME_MAX + 1), so a read never fails with EINVAL
_GIVE_UP = frozenset({errno.ENOSPC, errno.ENOMEM})  # watch limit or kernel memory: no point retrying


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """libc with the three inotify calls typed, or None off Linux or without them."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add, rm = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
    except (OSError, AttributeError):
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    rm.argtypes, rm.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return libc


class ChangeWatcher:
    """Recursive inotify watches over ``roots``; ``drain()`` says what changed (see the module docstring)."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self._roots = list(dict.fromkeys(os.path.abspath(root) for root in roots))
        self._libc = _libc()
        self._lock = threading.Lock()
        self._fd = -1
        self._gave_up = False
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory path
        self._idents: dict[str, tuple[int, int] | None] = {}  # root -> (st_dev, st_ino) being watched

    @property
    def available(self) -> bool:
        return self._libc is not None and not self._gave_up

    def start(self) -> None:
        with self._lock:
            if self._fd < 0 and self.available:
                self._open()

    def drain(self) -> set[Path] | None:
        with self._lock:
            if self._fd < 0:
                return None
            changed: set[str] = set()
            exact = self._apply(self._read_pending(), changed)
            if exact:
                self._sync_roots(changed)
            if not exact or self._gave_up:
                self._close_fd()
                if not self._gave_up:
                    self._open()  # overflow: fresh watches, so the next drain is exact again
                return None
            return {Path(path) for path in changed}

    def close(self) -> None:
        with self._lock:
            self._close_fd()

    def __enter__(self) -> ChangeWatcher:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # internals: all called with the lock held ---------------------------------------------------
    def _open(self) -> None:
        assert self._libc is not None
        fd = int(self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        if fd < 0:  # e.g. EMFILE: max_user_instances reached
            self._gave_up = True
            return
        self._fd = fd
        self._idents = dict.fromkeys(self._roots)
        self._sync_roots(set())  # the caller walks after start(); these files need not be reported
        if self._gave_up:
            self._close_fd()

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases every watch at once
            self._fd = -1
        self._dirs.clear()

    def _read_pending(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _apply(self, data: bytes, changed: set[str]) -> bool:
        """Fold events into ``changed``; False when events were lost (overflow, unmount)."""
        offset = 0
        while offset + EVENT.size <= len(data):
            wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
            raw = data[offset + EVENT.size:offset + EVENT.size + length].split(b"\0", 1)[0]
            offset += EVENT.size + length
            if mask & (IN_Q_OVERFLOW | IN_UNMOUNT):
                return False
            directory = self._dirs.get(wd)
            if directory is None:  # a dropped watch: its directory was reported or walked again
                continue
            if mask & IN_IGNORED:
                del self._dirs[wd]
            elif not raw:  # about the watched directory itself; a parent's event covers non-roots
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF) and directory in self._idents:
                    self._drop_root(directory, changed)
            elif mask & IN_ISDIR:
                name = os.fsdecode(raw)
                path = os.path.join(directory, name)
                if is_skipped_dir(name):
                    continue
                if mask & (IN_CREATE | IN_MOVED_TO):
                    self._watch_tree(path, changed)
                elif mask & (IN_DELETE | IN_MOVED_FROM):
                    self._drop_tree(path)
                    changed.add(path)
            else:
                name = os.fsdecode(raw)
                if not is_skipped_file(name):
                    changed.add(os.path.join(directory, name))
        return True

    def _sync_roots(self, changed: set[str]) -> None:
        """Watch roots that appeared; drop roots that vanished or now name another directory."""
        for root in self._roots:
            try:
                st = os.stat(root)
                ident = (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
            except OSError:
                ident = None
            if ident == self._idents[root]:
                continue
            if self._idents[root] is not None:
                self._drop_root(root, changed)
            if ident is not None and self._watch_tree(root, changed):
                self._idents[root] = ident

    def _drop_root(self, root: str, changed: set[str]) -> None:
        self._drop_tree(root)
        changed.add(root)
        self._idents[root] = None  # the next _sync_roots watches it again if it is (still) there

    def _watch_tree(self, top: str, changed: set[str]) -> bool:
        """Watch ``top`` and every directory under it, adding each file found; False if ``top`` failed."""
        stack = [top]
        while stack:
            directory = stack.pop()
            if not self._add_watch(directory):
                if self._gave_up or directory == top:
                    return False
                continue  # vanished meanwhile: its parent's event reports it
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            if not is_skipped_dir(entry.name):
                                stack.append(entry.path)
                        elif ((entry.is_file(follow_symlinks=False) or entry.is_symlink())
                              and not is_skipped_file(entry.name)):
                            changed.add(entry.path)
            except OSError:
                continue
        return True

    def _add_watch(self, directory: str) -> bool:
        assert self._libc is not None
        wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(directory), WATCH_MASK))
        if wd < 0:
            if ctypes.get_errno() in _GIVE_UP:
                self._gave_up = True
            return False
        self._dirs[wd] = directory  # an inode already watched keeps its wd: the path is refreshed
        return True

    def _drop_tree(self, top: str) -> None:
        """Forget (and remove) the watches on ``top`` and below; costs one pass over the watch table."""
        assert self._libc is not None
        prefix = top.rstrip("/") + "/"
        for wd, directory in list(self._dirs.items()):
            if directory == top or directory.startswith(prefix):
                del self._dirs[wd]
                self._libc.inotify_rm_watch(self._fd, wd)  # EINVAL if the kernel dropped it already
