"""Helpers for ruamel round-trip documents: where a node is (for located errors), and plain copies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq


def line_of(data: Any, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest node of ``loc`` present in the round-trip document."""
    line = 1
    node = data
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def plain(value: Any) -> Any:
    """Plain dicts and lists of a ruamel document (for comparisons and pydantic)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
