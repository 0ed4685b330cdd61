"""Stat-walk fallback: the (mtime_ns, size) stamp of every project file, and the difference of two walks.

Used when the inotify watcher (``khive.index.watch``) cannot vouch for completeness: a cold process,
a queue overflow, the watch limit, or no inotify at all. It costs one ``stat`` and one ``Path`` per file
(about 150 ms for 20,000 files on the 2-core dev machine, half of it building the Paths), which is why a
warm process drains the watcher instead (``bench/freshness.py``).

The name rules here are shared with the watcher so that both see the same set of files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

Stamp = tuple[int, int]  # (st_mtime_ns, st_size)


def is_skipped_dir(name: str) -> bool:
    """Dot-directories (``.git``, ``.khive``) hold tool state, not project content."""
    return name.startswith(".")


def is_skipped_file(name: str) -> bool:
    """Atomic-write temp files (``.<name>.<hex>.tmp``) are never content; the rename target is."""
    return name.startswith(".") and name.endswith(".tmp")


def oldest_first(entry: tuple[tuple[str, str], Stamp]) -> tuple[int, str, str]:
    """Sort key of ((source, path), stamp): files in the order they were last written, then by path. When two
    hold one document id, the one written last is indexed last and wins, from nothing as after edits."""
    (source, path), (mtime_ns, _) = entry
    return mtime_ns, path, source


def stat_walk(roots: Iterable[Path], suffixes: tuple[str, ...] | None = None) -> dict[Path, Stamp]:
    """Stamp every regular file and file-named symlink under ``roots`` (links are stamped, never followed:
    the index reports them instead of reading them); missing roots are empty."""
    return {Path(path): stamp for path, stamp in stat_walk_paths(roots, suffixes).items()}


def stat_walk_paths(roots: Iterable[Path], suffixes: tuple[str, ...] | None = None) -> dict[str, Stamp]:
    """``stat_walk`` keyed by absolute path strings: building a Path per file is half the cost of a walk."""
    stamps: dict[str, Stamp] = {}
    stack = [os.path.abspath(root) for root in roots]
    while stack:  # an explicit stack: deep trees must not hit the recursion limit
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if not is_skipped_dir(name):
                            stack.append(entry.path)
                    elif ((entry.is_file(follow_symlinks=False) or entry.is_symlink()) and not is_skipped_file(name)
                          and (suffixes is None or name.endswith(suffixes))):  # a link: reported, never read
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:  # deleted between listing and stat
                            continue
                        stamps[entry.path] = (st.st_mtime_ns, st.st_size)
        except OSError:  # missing, vanished mid-walk, or unreadable: nothing to index there
            continue
    return stamps


def diff_stamps(old: Mapping[Path, Stamp], new: Mapping[Path, Stamp]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, changed, removed) between two walks; changed means the stamp differs."""
    added = new.keys() - old.keys()
    removed = old.keys() - new.keys()
    changed = {path for path in new.keys() & old.keys() if new[path] != old[path]}
    return added, changed, removed
