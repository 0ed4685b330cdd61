"""Text that is not UTF-8, found before it travels: arguments, files, paths, environment variables.

Python hands undecodable bytes of argv, environment variables and file names to programs as lone
surrogates (surrogateescape: byte 0xff becomes U+DCFF). Nothing khive sends (JSON frames, the
audit trail, MCP) can carry them, so the composition roots refuse such input up front and name
the byte and its position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class NotUtf8:
    byte: int | None  # the undecodable byte, when the surrogate stands for one (U+DC80..U+DCFF)
    position: int  # byte offset of that byte in the UTF-8 form of the text

    def describe(self) -> str:
        shown = f"byte 0x{self.byte:02x}" if self.byte is not None else "a lone surrogate"
        return f"{shown} at position {self.position} is not UTF-8"


def not_utf8(text: str) -> NotUtf8 | None:
    """Where ``text`` stops being UTF-8 (the first lone surrogate), or None."""
    match = _SURROGATE.search(text)
    if match is None:
        return None
    point = ord(match.group())
    position = len(text[: match.start()].encode("utf-8"))  # nothing before the first match needs escaping
    return NotUtf8(point - 0xDC00 if 0xDC80 <= point <= 0xDCFF else None, position)


def decode_error(exc: UnicodeDecodeError) -> NotUtf8:
    """The same description for bytes that failed to decode."""
    return NotUtf8(exc.object[exc.start], exc.start)


def shown(text: str, limit: int = 60) -> str:
    """``text`` for a message: undecodable bytes as \\xNN, other lone surrogates as \\uXXXX, shortened."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    visible = raw.decode("utf-8", "backslashreplace")
    return visible if len(visible) <= limit else visible[: limit - 3] + "..."
