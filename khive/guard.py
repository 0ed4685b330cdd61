"""Depth guard: reject pathologically nested results before anything recurses over them.

Serialisers and presentation transforms recurse natively, so the check itself walks an
explicit worklist and stops at the first level past the limit.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

DEFAULT_MAX_RESULT_DEPTH = 128


def within_depth(value: Any, limit: int = DEFAULT_MAX_RESULT_DEPTH) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        elif isinstance(item, BaseModel):
            children = item.__dict__.values()
        else:
            continue
        if depth > limit:
            return False
        for child in children:
            if isinstance(child, (dict, list, tuple, BaseModel)):
                push((child, depth + 1))
    return True
