"""Immutable run directories (``raw-sources/<connection>/<kind>/<syncId>/``) written all at once.

A run is written into a hidden temporary directory, every file is fsynced, then the directory is
renamed into place: readers see a whole run or none, and a failed run leaves the previous ones intact.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

_FSYNC_WORKERS = 8


def new_sync_id(now: datetime | None = None) -> str:
    """A UTC timestamp with microseconds: sync ids sort by time."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")


def completed_runs(root: Path) -> list[str]:
    """Sync ids of the completed runs under ``root``, oldest first."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def json_bytes(data: Any) -> bytes:
    """Stable, reviewable JSON: indented, keys sorted, newline-terminated."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def write_run(root: Path, sync_id: str, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (run-relative path -> bytes) as the run ``root/sync_id``; returns its path."""
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{sync_id}.{uuid.uuid4().hex[:8]}.tmp"
    staging.mkdir()
    try:
        written = []
        for relative, data in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
        # Every file reaches the disk before the rename publishes the run; fsyncs issued together are
        # committed together, where one per file right after its write serialises a journal commit each.
        with ThreadPoolExecutor(max_workers=_FSYNC_WORKERS) as pool:
            list(pool.map(_fsync, written))
        final = root / sync_id
        os.rename(staging, final)
        _fsync(root)
        return final
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
