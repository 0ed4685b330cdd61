"""The LALR tables of the grammar, optionally kept in a file so a short-lived process skips building them.

Building the tables is most of a forwarding ``khive request``'s start-up. A composition root may
name a directory with ``cache_tables_in``; the tables are then loaded from a file there (Lark's own
cache format, keyed by the grammar, the Lark version and the Python version). The file is a pickle,
so it is only used in a directory that belongs to this user and nobody else can write to; it is
written to a temporary name and renamed, so concurrent starts never read half a file.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path
from typing import Any

import lark
from lark import Lark

from khive.dsl.grammar import grammar_text

OPTIONS: dict[str, Any] = {"parser": "lalr", "lexer": "contextual"}
_directory: list[Path] = []


def cache_tables_in(directory: Path) -> None:
    """Use ``directory`` for the tables from now on (takes effect before the first parse)."""
    _directory[:] = [directory]


def build(transformer: Any) -> Lark:
    text = grammar_text()
    path = _cache_file(text)
    if path is None:
        return Lark(text, transformer=transformer, **OPTIONS)
    if path.exists():
        return Lark(text, transformer=transformer, cache=str(path), **OPTIONS)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        parser = Lark(text, transformer=transformer, cache=str(scratch), **OPTIONS)
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)
    return parser


def _cache_file(text: str) -> Path | None:
    if not _directory:
        return None
    directory = _directory[0]
    try:
        info = directory.stat()
    except OSError:
        return None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None  # someone else could plant a pickle there
    key = hashlib.sha256(f"{text}\0{lark.__version__}\0{sys.version}\0{OPTIONS}".encode()).hexdigest()[:16]
    return directory / f"grammar-{key}.lark"
