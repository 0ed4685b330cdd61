"""Files written after the answer: a search that made something worth keeping (the lexicon) does not wait for
its file. Each write runs in a thread of its own, not a daemon thread, so a process never exits with a file
half made; ``finish`` (the pack's close hook) is the point after which a project's files are known to be there.
Writes of one file run one at a time, and a write that a newer one overtook is dropped, so an older content
never replaces a newer one. Kept free of heavy imports: the close hook runs in every process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

_lock = threading.Lock()
_newest: dict[Path, object] = {}  # file -> the token of the newest write asked for
_file_locks: dict[Path, threading.Lock] = {}
_running: dict[Path, list[threading.Thread]] = {}  # project -> its writes not yet waited for


def write(project: Path, target: Path, fill: Callable[[], None]) -> None:
    """Run ``fill`` (which writes ``target``, atomically) in a thread, unless a newer write of ``target`` is
    asked for before it starts."""
    token = object()
    with _lock:
        _newest[target] = token
        file_lock = _file_locks.setdefault(target, threading.Lock())
        running = _running.setdefault(project, [])
        running[:] = [thread for thread in running if thread.is_alive()]

    def run() -> None:
        with file_lock:
            with _lock:
                if _newest.get(target) is not token:
                    return
            fill()

    thread = threading.Thread(target=run, name=f"discover-write-{target.name}")
    with _lock:
        running.append(thread)
    thread.start()


def finish(project: Path) -> None:
    """Wait until every write of ``project`` asked for so far has ended."""
    with _lock:
        running = _running.pop(project, [])
    for thread in running:
        thread.join()
