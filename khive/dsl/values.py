"""Values a request may carry: what every later step (orjson frames, the audit digest, MCP) can encode.

Two kinds of value parse as JSON but cannot travel: a lone surrogate (``"\\ud800"`` escaped, or a
raw one, which is what Python makes of undecodable bytes) and an integer outside 64 bits
(orjson's range: -2^63 .. 2^64-1). Both are refused at parse time with their position, so no op
of the request runs and no later encoder meets them.
"""

from __future__ import annotations

import json
import re

from khive.dsl.errors import syntax_error
from khive.errors import DslSyntaxError

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
INT_HINT = "integers must lie between -2^63 and 2^64-1; pass huge numbers as strings, e.g. \"18446744073709551616\""
SURROGATE_HINT = "send valid UTF-8 text; pass binary data as a string in base64 or hex"

SURROGATE_RE = re.compile("[\ud800-\udfff]")
# Also matches an unterminated string (to the end), so every '"' starts a match; otherwise each '"'
# inside an unterminated string would rescan to the end (quadratic).
STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)
_DIGITS_RE = re.compile(r"-?[0-9]+")
_LONG_DIGITS_RE = re.compile(r"[0-9]{19}")  # the shortest integer literal that can leave the range


def describe_surrogate(char: str) -> str:
    """``U+DCFF (byte 0xff that is not UTF-8)``: surrogateescape maps an undecodable byte to U+DC80..U+DCFF."""
    point = ord(char)
    shown = f"U+{point:04X}"
    return f"{shown} (byte 0x{point - 0xDC00:02x} that is not UTF-8)" if 0xDC80 <= point <= 0xDCFF else shown


def check_text(text: str) -> None:
    """Refuse a raw lone surrogate anywhere in the request text."""
    match = SURROGATE_RE.search(text)
    if match is None:
        return
    line, column = position(text, match.start())
    raise syntax_error(text, line, column, f"the request holds a lone surrogate {describe_surrogate(match.group())}, "
                       "which is not Unicode text", "lone-surrogate", SURROGATE_HINT)


def string_problem(value: str) -> str | None:
    """Why a decoded string value cannot be carried (an escaped lone surrogate), or None."""
    match = SURROGATE_RE.search(value)
    if match is None:
        return None
    return f"string holds a lone surrogate U+{ord(match.group()):04X} (an unpaired \\u escape)"


def integer_problem(raw: str) -> str | None:
    """Why an integer literal cannot be carried, or None."""
    digits = raw.lstrip("-")
    if len(digits) <= 18:
        return None
    if len(digits) > 20 or not INT_MIN <= int(raw) <= INT_MAX:
        return f"integer {raw[:24]}{'...' if len(raw) > 24 else ''} does not fit in 64 bits"
    return None


def ref_index_problem(raw: str) -> str | None:
    """Why the list index ``raw`` of a ``$prev[...]`` reference cannot be carried (beyond 64 bits), or None;
    never converts a long digit string (Python refuses ints of more than 4,300 digits with a ValueError)."""
    problem = integer_problem(raw)
    return None if problem is None else f"reference index {problem.removeprefix('integer ')}"


REF_INDEX_HINT = "a list index fits in 64 bits: $prev.items[0]"


def check_json_integers(text: str) -> None:
    """The JSON form: orjson turns an integer beyond 64 bits into a float (silently losing digits)."""
    if _LONG_DIGITS_RE.search(text) is None:
        return
    blanked = STRING_RE.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    for match in _DIGITS_RE.finditer(blanked):
        before = blanked[match.start() - 1] if match.start() else ""
        after = blanked[match.end()] if match.end() < len(blanked) else ""
        if (before and before in ".eE+-") or (after and after in ".eE"):
            continue  # part of a fraction or an exponent: orjson reads those as floats, range-checked already
        problem = integer_problem(match.group())
        if problem is not None:
            line, column = position(text, match.start())
            raise syntax_error(text, line, column, problem, "number-out-of-range", INT_HINT)


def check_decoded_integers(source: str) -> None:
    """The JSON text ``source`` that orjson decoded already (a daemon frame): it read an integer beyond 64 bits
    as a float, silently. Python's own decoder hands over each integer literal as written; it runs only when
    ``source`` holds a long digit run, and never with one regular expression over the whole text (which
    holds the GIL for as long as it scans: a 4 MiB string would stall the event loop)."""
    if _LONG_DIGITS_RE.search(source) is None:
        return

    def integer(raw: str) -> int:
        problem = integer_problem(raw)
        if problem is not None:
            raise syntax_error("", 1, 1, problem, "number-out-of-range", INT_HINT)
        return int(raw)

    try:
        json.loads(source, parse_int=integer)
    except RecursionError:  # orjson allows deeper nesting than Python's decoder
        raise syntax_error("", 1, 1, "nesting too deep to check its numbers", "too-deep",
                           "flatten the value") from None
    except json.JSONDecodeError as exc:  # JSON orjson read and Python's decoder does not: refused, never a crash
        raise syntax_error("", 1, 1, f"invalid JSON: {exc.msg}", "json-error") from None


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


__all__ = ["INT_HINT", "INT_MAX", "INT_MIN", "REF_INDEX_HINT", "STRING_RE", "DslSyntaxError",
           "check_decoded_integers", "check_json_integers", "check_text", "integer_problem", "ref_index_problem",
           "string_problem"]
