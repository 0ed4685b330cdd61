"""Exclusive locks that hold across threads and processes: a ``threading.Lock`` plus ``fcntl.flock``.

Lock files are created on demand and never deleted: unlinking a lock file while another process
waits on it would let two holders lock two different inodes.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from weakref import WeakValueDictionary

_thread_locks: WeakValueDictionary[str, threading.Lock] = WeakValueDictionary()
_registry_guard = threading.Lock()


def _thread_lock(key: str) -> threading.Lock:
    # One Lock per lock file for the whole process, so two FileStores on one root share it;
    # weak values let locks of paths nobody touches any more be collected.
    with _registry_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = threading.Lock()
            _thread_locks[key] = lock
        return lock


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold ``lock_file`` exclusively against other threads and other processes."""
    lock = _thread_lock(str(lock_file))
    with lock:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock
