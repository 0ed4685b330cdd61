"""One MCP answer stays under 1 MB: when a request's results would not fit, the largest are left out, each
replaced by a typed error that says the op ran (ADR 0053, seventh session).

An answer carries its envelope twice, as the text agents read (JSON escaped inside JSON) and as structured
content, and the Python SDK's HTTP client refuses a server-sent event over 1 MiB (1,048,576 bytes): a batch of
100 ``scan.entity`` or ``discover.search`` ops made an answer of several megabytes that reached no agent at all.
"""

from __future__ import annotations

from typing import Any

import orjson

from khive.envelope import summarize
from khive.errors import OpError

MAX_ANSWER_BYTES = 1_000_000  # under the 1 MiB event, with room for the JSON-RPC and SSE framing


def answer_bytes(envelope: dict[str, Any]) -> int:
    """Bytes of an MCP answer: the envelope as structured content plus its JSON text inside a JSON string."""
    return _answer_size(orjson.dumps(envelope))


def _answer_size(text: bytes) -> int:
    return len(text) + len(orjson.dumps(text.decode()))


def fit_answer(envelope: dict[str, Any], limit: int = MAX_ANSWER_BYTES) -> dict[str, Any]:
    """``envelope`` itself when its answer fits in ``limit`` bytes, else a copy whose largest results (the fewest
    that make it fit) are left out with an ``answer_too_large`` error each; the summary and status follow."""
    text = orjson.dumps(envelope)
    if 7 * len(text) + 2 <= limit:  # escaped, a byte takes at most 6 (\u001f): most answers need one dumps
        return envelope
    total = _answer_size(text)
    if total <= limit:
        return envelope
    results = list(envelope["results"])
    sizes = [answer_bytes(result) for result in results]
    for index in sorted(range(len(results)), key=sizes.__getitem__, reverse=True):
        if total <= limit:
            break
        results[index] = _left_out(results[index], sizes[index], limit, alone=len(results) == 1)
        total -= sizes[index] - answer_bytes(results[index])
    return {**envelope, "results": results, **summarize(results)}


def _left_out(result: dict[str, Any], size: int, limit: int, *, alone: bool) -> dict[str, Any]:
    verb = str(result.get("verb", ""))
    ran = "ran and succeeded (what it did stands)" if result.get("ok") else "failed"
    how = "" if alone else "ask for it in a request of its own, "
    error = OpError(f"{verb} {ran}, but its answer ({size} bytes) did not fit in this MCP answer, which carries at "
                    f"most {limit} bytes (MCP clients refuse larger ones): {how}"
                    "narrow it (limit, fields), or write it to a file with save_to where the verb has it",
                    code="answer_too_large",
                    details={"bytes": size, "limit": limit, "succeeded": bool(result.get("ok"))})
    return {"ok": False, "verb": verb, "error": error.to_dict()}

