"""Presentation transforms, applied per ok result after dispatch.

``agent`` (default) is compact: nulls and empty values dropped, scores rounded to 3
significant figures, timestamps shortened to seconds. Data a database returned (``rows``,
sample ``values``/``samples``, a dictionary hit's ``value``) is never touched: its nulls,
fractions of seconds and offsets are the answer (docs/values.md). ``verbose`` is the
canonical result; ``human`` is the same as verbose at this layer (renderers may do more).
Results are depth-checked before they get here, so plain recursion is safe.
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


_PLAIN = (int, bool)  # returned as they are: nothing to drop, round or shorten
_DATA_KEYS = frozenset({"rows", "values", "value", "samples"})  # what a database holds, shown as encoded


def _compact(value: Any, key: str | None) -> Any:
    kind = type(value)
    if kind is dict:
        out = {}
        for child_key, child in value.items():
            if child is None or type(child) in _PLAIN:
                if child is not None:
                    out[child_key] = child
                continue
            shown = child if child_key in _DATA_KEYS else _compact(child, child_key)
            if shown == "" or shown == [] or shown == {} or shown is None:
                continue
            out[child_key] = shown
        return out
    if kind is list:
        return [child if child is None or type(child) in _PLAIN else _compact(child, None) for child in value]
    if kind is float:
        return float(f"{value:.3g}") if _is_score_key(key) else value
    if kind is str:
        if len(value) >= 19 and value[4] == "-":
            match = _TIMESTAMP_RE.match(value)
            if match:
                date, time, zone = match.groups()
                suffix = "Z" if zone in ("Z", "+00:00", "-00:00") else (zone or "")
                return f"{date}T{time}{suffix}"
        return value
    if isinstance(value, dict):  # dict subclasses (e.g. ordered maps from YAML)
        return _compact(dict(value), key)
    if isinstance(value, (list, tuple)):
        return _compact(list(value), key)
    return value
