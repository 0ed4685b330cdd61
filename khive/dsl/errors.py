"""Build ``DslSyntaxError`` with an excerpt of the offending line and a caret under the column."""

from __future__ import annotations

import re

from khive.errors import DslSyntaxError

_WINDOW = 60
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def excerpt_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    source = _SURROGATE_RE.sub("\ufffd", source)  # the excerpt travels as UTF-8: one shown character each
    start = max(0, column - 1 - _WINDOW // 2)
    shown = source[start : start + _WINDOW]
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + _WINDOW < len(source) else ""
    caret = " " * (len(prefix) + column - 1 - start) + "^"
    return f"{prefix}{shown}{suffix}\n{caret}"


def syntax_error(text: str, line: int, column: int, message: str, reason: str, hint: str = "") -> DslSyntaxError:
    return DslSyntaxError(message, reason=reason, line=line, column=column,
                          excerpt=excerpt_at(text, line, column), hint=hint)
