"""Presentation transforms, applied per ok result after dispatch.

``agent`` (default) is compact: nulls and empty values dropped, scores rounded to 3
significant figures, timestamps shortened to seconds. ``verbose`` is the canonical result;
``human`` is the same as verbose at this layer (renderers may do more). Results are
depth-checked before they get here, so plain recursion is safe.
"""

from __future__ import annotations

import re
from typing import Any

_TIMESTAMP_RE = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]00:00|[+-]\d{2}:\d{2})?\Z")


def present(value: Any, mode: str) -> Any:
    if mode == "agent":
        return _compact(value, None)
    return value


def _is_score_key(key: str | None) -> bool:
    return key is not None and (key == "score" or key.endswith(("_score", "Score")))


def _compact(value: Any, key: str | None) -> Any:
    if isinstance(value, dict):
        out = {}
        for child_key, child in value.items():
            shown = _compact(child, child_key)
            if shown is None or shown == "" or shown == [] or shown == {}:
                continue
            out[child_key] = shown
        return out
    if isinstance(value, list):
        return [_compact(child, None) for child in value]
    if isinstance(value, float) and _is_score_key(key):
        return float(f"{value:.3g}")
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-":
        match = _TIMESTAMP_RE.match(value)
        if match:
            date, time, zone = match.groups()
            suffix = "Z" if zone in ("Z", "+00:00", "-00:00") else (zone or "")
            return f"{date}T{time}{suffix}"
    return value
