"""Write a file whole or not at all: into a temp file beside it, then one rename over the target.

Readers never see half a file (``os.replace`` is atomic on one filesystem). The temp name is unique per call
(not per process), so two threads of a daemon writing the same target never share one. ``durable=True``
also fsyncs the data and the rename, for files that are the project's record (the project store); derived
state (caches, kept lexicons, demo files) skips it: lost on a crash, it is made again.

Many files at once (``write_temp``, ``fsync_all``, then ``os.replace`` each and ``fsync_dir`` once per folder):
every temp file's data is on disk before any rename, so a crash leaves each file whole, old or new; the fsyncs
are issued together, which a journaling file system commits together.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

_FSYNC_WORKERS = 8  # fsyncs in flight at once: the journal commits them together


def replace_with(target: Path, write: Callable[[BinaryIO], object], *, durable: bool = False,
                 mode: int | None = None) -> None:
    """``write`` fills the new file's contents; ``mode`` sets its permissions before it appears."""
    temp = _new_temp(target, write, durable=durable, mode=mode)
    try:
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)  # make the rename itself durable


def replace_bytes(target: Path, data: bytes, *, durable: bool = False, mode: int | None = None) -> None:
    replace_with(target, lambda handle: handle.write(data), durable=durable, mode=mode)


def fsync_dir(directory: Path) -> None:
    """Make a rename or an unlink in ``directory`` durable."""
    _fsync(directory, os.O_DIRECTORY)


def write_temp(target: Path, data: bytes) -> Path:
    """A new temp file beside ``target`` holding ``data`` (not yet synced, nor renamed over ``target``)."""
    return _new_temp(target, lambda handle: handle.write(data), durable=False, mode=None)


def fsync_all(paths: Iterable[Path]) -> None:
    """Every file's data on disk, the fsyncs issued together."""
    with ThreadPoolExecutor(max_workers=_FSYNC_WORKERS) as pool:
        list(pool.map(_fsync, paths))


def _fsync(path: Path, flags: int = 0) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_temp(target: Path, write: Callable[[BinaryIO], object], *, durable: bool, mode: int | None) -> Path:
    """A new temp file beside ``target`` filled by ``write`` (its data synced when ``durable``); removed on error."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = _temp_name(target)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666 if mode is None else mode)
        with open(fd, "wb") as handle:
            write(handle)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)  # the umask narrowed os.open's mode
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _temp_name(target: Path) -> Path:
    """Unique per call (not per process): two threads writing one target never share a temp file."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
