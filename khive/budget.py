"""Token budgets for verb payloads: drop whole sections, in a declared order, until the payload fits.

A payload is rebuilt from its undroppable core plus the sections still kept; sections are shed from
the front of the order until the approximate token count is within the budget. The core is never
cut: when it alone is over, the report says ``fits: false`` with every section dropped. Tokens are
approximate (4 characters per token plus 2 per message, the core and each kept section being one
message each) and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson

ORDER = ("evidenceExcerpts", "related", "neighbours", "summaries")
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 2
TOKEN_METHOD = "approximate"

Build = Callable[[frozenset[str]], dict[str, Any]]


def approx_tokens(value: Any, messages: int = 1) -> int:
    return math.ceil(len(orjson.dumps(value)) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * messages


def fit(build: Build, present: Sequence[str], budget_tokens: int | None,
        order: Sequence[str] = ORDER) -> dict[str, Any]:
    """The payload built from the kept sections; with a budget, its ``budget`` report is added."""
    sections = [name for name in order if name in present]  # a section a payload lacks is not reported
    kept = list(sections)
    if budget_tokens is None:
        return build(frozenset(kept))

    def count(names: Sequence[str]) -> int:
        return approx_tokens(build(frozenset(names)), messages=1 + len(names))

    full = count(sections)
    per_section = {name: max(full - count([s for s in sections if s != name]), 0) for name in sections}
    dropped: list[str] = []
    while kept and count(kept) > budget_tokens:
        dropped.append(kept.pop(0))
    total = count(kept)
    payload = build(frozenset(kept))
    payload["budget"] = {
        "budgetTokens": budget_tokens,
        "tokens": {"total": total, "budget": budget_tokens, "core": count([]), "sections": per_section},
        "fits": total <= budget_tokens,
        "order": list(order),
        "kept": kept,
        "dropped": dropped,
        "tokenMethod": TOKEN_METHOD,
    }
    return payload
