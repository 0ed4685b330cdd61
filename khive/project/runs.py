"""Immutable run directories (``raw-sources/<connection>/<kind>/<syncId>/``) written all at once.

A run is written into a hidden temporary directory, every file is fsynced, then the directory is
renamed into place: readers see a whole run or none, and a failed run leaves the previous ones intact.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from khive.atomicfile import fsync_all, fsync_dir


def new_sync_id(now: datetime | None = None) -> str:
    """A UTC timestamp with microseconds: sync ids sort by time."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")


def sync_time(sync_id: str) -> str:
    """A sync id as an ISO UTC time to the second (``20261201T154616560276Z`` -> ``2026-12-01T15:46:16Z``)."""
    try:
        return datetime.strptime(sync_id, "%Y%m%dT%H%M%S%fZ").strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return sync_id


def completed_runs(root: Path) -> list[str]:
    """Sync ids of the completed runs under ``root``, oldest first."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def prune_runs(root: Path, keep_last: int, keep: Callable[[str], bool] = lambda sync_id: False) -> list[str]:
    """Remove completed runs under ``root`` beyond the newest ``keep_last``, except those ``keep`` holds on to.

    Each goes in one rename out of sight (readers never see half a run), then its files; the sync ids removed."""
    removed = []
    for sync_id in completed_runs(root)[:-keep_last] if keep_last > 0 else []:
        if keep(sync_id):
            continue
        hidden = root / f".{sync_id}.{uuid.uuid4().hex[:8]}.pruned"
        try:
            os.rename(root / sync_id, hidden)
        except FileNotFoundError:  # another process pruned it first
            continue
        shutil.rmtree(hidden, ignore_errors=True)
        removed.append(sync_id)
    return removed


def json_bytes(data: Any) -> bytes:
    """Stable, reviewable JSON: indented, keys sorted, newline-terminated."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def compact_json_bytes(data: Any) -> bytes:
    """Stable JSON for files only programs read (a scan's tables): keys sorted, one line, newline-terminated.
    Indentation would be most of such a file's bytes and of the time to write it (ADR 0049)."""
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"


def write_run(root: Path, sync_id: str, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (run-relative path -> bytes) as the run ``root/sync_id``; returns its path."""
    with staged_run(root, sync_id) as run:
        for relative, data in files.items():
            run.write(relative, data)
    return run.final


class StagedRun:
    """A run being written in its hidden directory; ``staged_run`` publishes it."""

    def __init__(self, root: Path, sync_id: str) -> None:
        self.final = root / sync_id
        self.staging = root / f".{sync_id}.{uuid.uuid4().hex[:8]}.tmp"
        self._written: list[Path] = []

    def write(self, relative: str, data: bytes) -> None:
        path = self.staging / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self._written.append(path)

    def _publish(self) -> None:
        # Every file reaches the disk before the rename publishes the run; fsyncs issued together are
        # committed together, where one per file right after its write serialises a journal commit each.
        fsync_all(self._written)
        os.rename(self.staging, self.final)
        fsync_dir(self.final.parent)


@contextmanager
def staged_run(root: Path, sync_id: str) -> Iterator[StagedRun]:
    """Files written to the yielded run are published together when the block ends; an error discards them.

    Work done inside the block (another pack's files, timings for the last file) happens before the run
    is visible, so a run's own report can cover it.
    """
    root.mkdir(parents=True, exist_ok=True)
    run = StagedRun(root, sync_id)
    run.staging.mkdir()
    try:
        yield run
        run._publish()
    except BaseException:
        shutil.rmtree(run.staging, ignore_errors=True)
        raise

