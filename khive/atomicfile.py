"""Write a file whole or not at all: into a temp file beside it, then one rename over the target.

Readers never see half a file (``os.replace`` is atomic on one filesystem). The temp name is unique per call
(not per process), so two threads of a daemon writing the same target never share one. ``durable=True``
also fsyncs the data and the rename, for files that are the project's record (the project store); derived
state (caches, kept lexicons, demo files) skips it: lost on a crash, it is made again.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def replace_with(target: Path, write: Callable[[BinaryIO], object], *, durable: bool = False,
                 mode: int | None = None) -> None:
    """``write`` fills the new file's contents; ``mode`` sets its permissions before it appears."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666 if mode is None else mode)
        with open(fd, "wb") as handle:
            write(handle)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)  # the umask narrowed os.open's mode
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
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
