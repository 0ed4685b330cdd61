"""The parsed request: frozen dataclasses built by the transformer (or the JSON form).

Argument values are plain JSON values (dict, list, str, int, float, bool, None) plus ``Ref``
for ``$prev`` references. Parsed requests are cached and shared, so nobody mutates them: the
dispatcher builds new values when it substitutes references.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Mode(StrEnum):
    SINGLE = "single"
    PARALLEL = "parallel"
    CHAIN = "chain"


@dataclass(frozen=True, slots=True)
class Ref:
    """``$prev`` followed by a path of field names (str) and list indexes (int)."""

    path: tuple[str | int, ...]
    line: int = field(default=1, compare=False)
    column: int = field(default=1, compare=False)

    def __str__(self) -> str:
        out = "$prev"
        for step in self.path:
            out += f"[{step}]" if isinstance(step, int) else f".{step}"
        return out


@dataclass(frozen=True, slots=True)
class Op:
    verb: str
    args: Mapping[str, Any]
    line: int = field(default=1, compare=False)
    column: int = field(default=1, compare=False)


@dataclass(frozen=True, slots=True)
class Request:
    mode: Mode
    ops: tuple[Op, ...]
