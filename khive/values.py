"""Every value a database returns, as a JSON value: one rule for every driver and every verb.

The invariant: every number on the wire is exact when parsed as an IEEE-754 double (what JavaScript
MCP clients do); anything that would not be is a string. docs/values.md states the rule per type and
ADR 0026 says why.

    null, bool, str            as they are (text a driver cannot decode as UTF-8 arrives as bytes)
    int                        a number when |v| <= 2**53 - 1, else its decimal digits as a string
    exact decimal              always a string, digits and scale as the database prints them
    float                      a number; NaN and the infinities as "NaN", "Infinity", "-Infinity"
    bytes                      "\\x" + lowercase hex, cut after ``Shown.binary_bytes`` bytes with a trailing "…"
    dates, times, timestamps   ISO 8601 with "T" and the offset; "infinity"; BC and years past 9999 expanded
    intervals                  ISO 8601 durations as PostgreSQL's IntervalStyle iso_8601 prints them
    lists, structs, maps       arrays, objects, objects with string keys (else [{"key", "value"}])
    json                       the value itself; numbers a double cannot hold exactly become strings
    nested past 64 levels      json as its text; lists and maps from that depth down as their JSON text
    anything else              its text; a value without one fails its op with ``unencodable_value``

Drivers turn their engine's text (``stamp_text``, ``interval_text``, ...) or Python values
(``Encoder.value``) into these; ``jsonable`` is the dispatcher's safety net for any handler result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any
from uuid import UUID

import orjson

from khive.errors import OpError

MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER
DEFAULT_BYTES_SHOWN = 1024  # bytes of one binary value shown before it is cut (a later `limits:` setting)
DEFAULT_TEXT_SHOWN = 32_768  # characters of one text value shown before it is cut
# The JSON bytes of a result's rows an agent receives (about 65k tokens). An MCP answer carries the envelope twice
# (text and structured content) and the Python SDK's HTTP client refuses a server-sent event over 1 MiB.
DEFAULT_RESULT_BYTES = 262_144
# The rows of one MCP answer in all, its ops sharing them: a request of two 256 KiB results made a 1.1 MB event that
# the Python SDK's HTTP client refused (JSON text escaped inside the answer can take 1.7x its rows, plus the copy).
ANSWER_ROW_BYTES = 327_680
MIN_ROW_SHARE = 4_096  # an op of a large batch still shows a few rows
CUT = "…"  # ends a cut value; never a hex digit
# A database value nested deeper than this (JSON, lists, structs) is shown, from this depth down, as its JSON text:
# the result around it must stay within server.max_result_depth (128 by default), which is for packs' own results.
MAX_NESTING = 64
_DAY_US = 86_400_000_000
_HOUR_US = 3_600_000_000
_MINUTE_US = 60_000_000

Converter = Callable[[Any, "Encoder", str], Any]  # (driver value, encoder, column) -> JSON value


@dataclass(frozen=True, slots=True)
class Shown:
    """How much of a result reaches the agent (ADR 0053): each binary value's first ``binary_bytes``, each text
    value's first ``text_chars``, and rows only while their JSON stays within ``result_bytes``. A database
    value can be a gigabyte; an agent's context holds a few hundred kilobytes, and one agent's answer must
    not hold the shared daemon's memory or its transport for minutes."""

    binary_bytes: int = DEFAULT_BYTES_SHOWN
    text_chars: int = DEFAULT_TEXT_SHOWN
    result_bytes: int = DEFAULT_RESULT_BYTES


DEFAULT_SHOWN = Shown()


class UnencodableValue(OpError):
    """A value whose text form itself fails: only its op fails, naming where and what type it was."""

    code = "unencodable_value"


# ---- scalars -----------------------------------------------------------------------------------------------


def integer(value: int) -> int | str:
    return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else str(value)


def integer_text(text: str) -> int | str:
    """An integer as the database prints it; beyond 2**53 - 1 it stays that text."""
    digits = text.strip()
    if len(digits.lstrip("+-")) <= 16:
        try:
            return integer(int(digits))
        except ValueError:
            return text
    return digits


def floating(value: float) -> float | str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def float_text(text: str) -> float | str:
    """A float as the database prints it (shortest round trip of its own width: float4 3.14 stays 3.14)."""
    try:
        return floating(float(text))
    except ValueError:
        return text


def decimal_text(value: Decimal) -> str:
    """Plain digits with the scale kept, never an exponent: 1.5000, 0.000000000000000000000000000000000001."""
    return format(value, "f")


def hex_text(data: bytes, shown: int) -> str:
    """PostgreSQL's bytea hex output of the first ``shown`` bytes; a longer value ends with "…"."""
    if len(data) <= shown:
        return "\\x" + data.hex()
    return "\\x" + data[:shown].hex() + CUT


# ---- dates, times, intervals -------------------------------------------------------------------------------

_STAMP_RE = re.compile(r"(\d{4,})-(\d\d-\d\d)(?:[ T](\d\d:\d\d:\d\d(?:\.\d+)?))?([+-]\d\d(?::\d\d){0,2})?")
_CLOCK_RE = re.compile(r"(\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d(?::\d\d){0,2})?")


def _year(year: int, bc: bool) -> str:
    """ISO 8601 years: 1 BC is 0000, 44 BC is -0043, beyond 9999 a sign and all digits."""
    number = 1 - year if bc else year
    if number < 0:
        return f"-{-number:04d}"
    return f"{number:04d}" if number <= 9999 else f"+{number}"


def _offset(text: str) -> str:
    """``+00`` -> ``+00:00``; ``+05:30`` and ``+00:19:32`` (local mean time) as they are."""
    return text + ":00" if len(text) == 3 else text


def stamp_text(text: str) -> str:
    """A date or timestamp as PostgreSQL (DateStyle ISO) or DuckDB print it -> ISO 8601.

    ``2024-03-10 12:34:56.789+00`` -> ``2024-03-10T12:34:56.789+00:00``; ``0044-03-15 BC`` and DuckDB's
    ``0044-03-15 (BC)`` -> ``-0043-03-15``; ``10000-01-01`` -> ``+10000-01-01``; ``infinity`` as is.
    Text of any other shape is returned unchanged.
    """
    if len(text) >= 19 and text[4] == "-" and text[10] == " " and "(" not in text and not text.endswith(" BC"):
        # the common shape, a 4-digit year AD: only the "T" and a full offset ("+00" -> "+00:00") change
        stamped = text[:10] + "T" + text[11:]
        return stamped + ":00" if stamped[-3] in "+-" else stamped
    bc = text.endswith(" BC") or " (BC)" in text
    core = text.removesuffix(" BC").replace(" (BC)", "") if bc else text
    match = _STAMP_RE.fullmatch(core)
    if match is None:
        return text
    year, month_day, clock, offset = match.groups()
    out = f"{_year(int(year), bc)}-{month_day}"
    if clock:
        out += "T" + clock
    return out + _offset(offset) if offset else out


def time_text(text: str) -> str:
    """A time (with or without zone) as the database prints it -> ``HH:MM:SS[.ffffff][+HH:MM]``."""
    match = _CLOCK_RE.fullmatch(text)
    if match is None:
        return text
    clock, offset = match.groups()
    return clock + _offset(offset) if offset else clock


def _trunc_div(value: int, unit: int) -> int:
    """C's integer division (toward zero), as PostgreSQL splits an interval into fields."""
    quotient = abs(value) // unit
    return -quotient if value < 0 else quotient


def duration(months: int, days: int, micros: int) -> str:
    """An interval as PostgreSQL's IntervalStyle iso_8601 prints it: each field keeps its own sign."""
    years = _trunc_div(months, 12)
    months -= years * 12
    hours = _trunc_div(micros, _HOUR_US)
    micros -= hours * _HOUR_US
    minutes = _trunc_div(micros, _MINUTE_US)
    micros -= minutes * _MINUTE_US
    if not (years or months or days or hours or minutes or micros):
        return "PT0S"
    out = "P" + "".join(f"{n}{unit}" for n, unit in ((years, "Y"), (months, "M"), (days, "D")) if n)
    if hours or minutes or micros:
        out += "T" + "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
        if micros:
            seconds, fraction = divmod(abs(micros), 1_000_000)
            sign = "-" if micros < 0 else ""
            out += f"{sign}{seconds}" + (f".{fraction:06d}".rstrip("0") if fraction else "") + "S"
    return out


_INTERVAL_PART_RE = re.compile(r"(-?\d+) (year|month|day)s?")
_INTERVAL_CLOCK_RE = re.compile(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_MONTHS_PER = {"year": 12, "month": 1}


def interval_text(text: str) -> str:
    """DuckDB's interval text (``1 year 2 months -3 days -01:02:03.5``) -> ISO 8601 (``duration``)."""
    months = days = micros = 0
    words = text.split(" ")
    index = 0
    while index < len(words):
        part = _INTERVAL_PART_RE.fullmatch(" ".join(words[index:index + 2]))
        clock = _INTERVAL_CLOCK_RE.fullmatch(words[index])
        if part is not None:
            number, unit = int(part.group(1)), part.group(2)
            if unit == "day":
                days += number
            else:
                months += number * _MONTHS_PER[unit]
            index += 2
        elif clock is not None:
            sign, hours, minutes, seconds, fraction = clock.groups()
            total = (int(hours) * 3600 + int(minutes) * 60 + int(seconds)) * 1_000_000
            total += int((fraction or "").ljust(6, "0"))
            micros += -total if sign else total
            index += 1
        else:
            return text
    return duration(months, days, micros)


def _clock(moment: time | datetime) -> str:
    text = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    return text + f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else text


def _zone(offset: timedelta | None) -> str:
    if offset is None:
        return ""
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


def timedelta_text(value: timedelta) -> str:
    micros = value // timedelta(microseconds=1)
    days = _trunc_div(micros, _DAY_US)
    return duration(0, days, micros - days * _DAY_US)


# ---- json --------------------------------------------------------------------------------------------------


def _json_float(text: str) -> float | str:
    """A JSON number with a fraction or exponent: a double when it denotes the same decimal, else the text."""
    number = float(text)
    try:
        same = number not in (float("inf"), float("-inf")) and Decimal(repr(number)) == Decimal(text)
    except InvalidOperation:
        same = False
    return number if same else text


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _nests_deeper(text: str, limit: int) -> bool:
    """Whether JSON text nests its arrays and objects deeper than ``limit`` (brackets inside strings not counted)."""
    if text.count("[") + text.count("{") <= limit:  # too few openings to get there: the common case, two scans
        return False
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False


def json_text(text: str) -> Any:
    """JSON text (json, jsonb, DuckDB JSON) -> its value, numbers parsed exactly, never through a float first.

    Text nested deeper than ``MAX_NESTING`` (or not JSON at all) is returned as the text itself.
    """
    if _nests_deeper(text, MAX_NESTING):
        return text
    try:
        return json.loads(text, parse_int=integer_text, parse_float=_json_float)
    except (RecursionError, ValueError):  # deeper than the parser goes, or not JSON after all: the text
        return text


# ---- any Python value --------------------------------------------------------------------------------------


def _key_text(key: Any) -> str | None:
    """A map key as an object key; None for keys that are not scalars (the map becomes key/value pairs)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool | int | float):
        return orjson.dumps(key).decode()
    return None


class Encoder:
    """Encodes one result's values and remembers which binary and text values it cut, for the result's notes."""

    def __init__(self, bytes_shown: int = DEFAULT_BYTES_SHOWN, text_shown: int | None = None):
        """``text_shown``: cut the rows' text values after this many characters (None: text is kept whole, as
        the dispatcher's safety net keeps a handler's own text)."""
        self.bytes_shown = bytes_shown
        self.text_shown = text_shown
        self._cut: dict[str, list[int]] = {}
        self._cut_text: dict[str, list[int]] = {}
        self._journal: list[tuple[dict[str, list[int]], str]] = []  # each cut in order, for ``undo``
        self._depth = 0  # lists and maps ``value`` is inside

    def rows(self, rows: Sequence[Sequence[Any]], columns: Sequence[Mapping[str, str]],
             converters: Sequence[Converter | None] | None = None) -> list[list[Any]]:
        """Rows of driver values -> rows of JSON values; ``converters`` (per column) replace ``value``.

        Most values are already JSON (text, small integers, finite floats, NULL): they are only looked at."""
        return list(map(self.row_encoder(columns, converters), rows))

    def row_encoder(self, columns: Sequence[Mapping[str, str]],
                    converters: Sequence[Converter | None] | None = None) -> Callable[[Sequence[Any]], list[Any]]:
        """What ``rows`` does to each row, for a caller that takes rows one at a time."""
        names = [str(column.get("name", "")) for column in columns]
        convert = list(converters) if converters else [None] * len(names)
        text_shown = self.text_shown

        def encode(row: Sequence[Any]) -> list[Any]:
            encoded = list(row)
            for index, item in enumerate(encoded):
                kind = type(item)
                converter = convert[index]
                if kind is str and text_shown is not None and len(item) > text_shown:
                    encoded[index] = self.text(item, names[index])
                    continue
                if converter is None and (item is None or kind is str or kind is bool or (
                        kind is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER) or (
                        kind is float and item - item == 0.0)):  # finite: inf - inf and nan - nan are nan
                    continue
                try:
                    encoded[index] = self.value(item, names[index]) if converter is None or item is None \
                        else converter(item, self, names[index])
                except Exception as exc:
                    raise _unencodable(names[index], str(columns[index].get("type", "")), item, exc) from None
            return encoded

        return encode

    def text(self, text: str, column: str) -> str:
        """A text value longer than ``text_shown`` characters: its start and the cut mark."""
        assert self.text_shown is not None
        self._record(self._cut_text, column, len(text))
        return text[:self.text_shown] + CUT

    def _record(self, cuts: dict[str, list[int]], column: str, size: int) -> None:
        cuts.setdefault(column, []).append(size)
        self._journal.append((cuts, column))

    def mark(self) -> int:
        return len(self._journal)

    def undo(self, mark: int) -> None:
        """Forget the cuts made since ``mark`` (a row encoded, then left out of the result)."""
        while len(self._journal) > mark:
            cuts, column = self._journal.pop()
            cuts[column].pop()
            if not cuts[column]:
                del cuts[column]

    def binary(self, data: bytes | bytearray | memoryview, column: str) -> str:
        raw = bytes(data)
        if len(raw) > self.bytes_shown:
            self._record(self._cut, column, len(raw))
        return hex_text(raw, self.bytes_shown)

    def value(self, value: Any, column: str = "") -> Any:
        """One driver value (nested lists and maps too) -> its JSON value."""
        kind = type(value)
        if value is None or kind is str or kind is bool:
            return value
        if kind is int:
            return integer(value)
        if kind is float:
            return floating(value)
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            return integer(int(value))
        if isinstance(value, float):
            return floating(float(value))
        if isinstance(value, Decimal):
            return decimal_text(value)
        if isinstance(value, str):
            return str(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return self.binary(value, column)
        if isinstance(value, datetime):
            return f"{_year(value.year, False)}-{value.month:02d}-{value.day:02d}T{_clock(value)}" \
                   f"{_zone(value.utcoffset())}"
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, time):
            return _clock(value) + _zone(value.utcoffset())
        if isinstance(value, timedelta):
            return timedelta_text(value)
        if isinstance(value, Mapping | list | tuple | set | frozenset):
            return self._nested(value, column)
        if isinstance(value, UUID):
            return str(value)
        if isinstance(value, Enum):
            return self.value(value.value, column)
        return str(value)

    def _nested(self, value: Any, column: str) -> Any:
        """A list or map, its items encoded; past ``MAX_NESTING`` levels its JSON text instead."""
        if self._depth >= MAX_NESTING:
            return _deep_text(value)
        self._depth += 1
        try:
            if isinstance(value, Mapping):
                return self.mapping(list(value.items()), column)
            return [self.value(item, column) for item in value]
        finally:
            self._depth -= 1

    def mapping(self, pairs: Sequence[tuple[Any, Any]], column: str) -> dict[str, Any] | list[dict[str, Any]]:
        """A map: an object when every key is a scalar with a distinct text, else ``[{"key", "value"}]``."""
        if all(type(key) is str for key, _ in pairs):
            return {key: self.value(item, column) for key, item in pairs}
        encoded = [(self.value(key, column), self.value(item, column)) for key, item in pairs]
        keys = [_key_text(key) for key, _ in encoded]
        if None not in keys and len(set(keys)) == len(keys):
            return {str(key): item for key, (_, item) in zip(keys, encoded, strict=True)}
        return [{"key": key, "value": item} for key, item in encoded]

    def notes(self) -> list[str]:
        """One note per column whose binary values were cut: how many and their full sizes."""
        notes = []
        for column, sizes in self._cut.items():
            notes.append(f"column {column!r}: {len(sizes)} binary value(s) longer than {self.bytes_shown} bytes "
                         f"were cut (they end with {CUT}); full sizes in bytes: {_listed(sizes)}")
        for column, sizes in self._cut_text.items():
            notes.append(f"column {column!r}: {len(sizes)} text value(s) longer than {self.text_shown} characters "
                         f"were cut (they end with {CUT}); full lengths in characters: {_listed(sizes)}; "
                         f"select a part of it (left({column}, n), substr) to see more")
        return notes

    def cut(self) -> dict[str, list[int]]:
        return {column: list(sizes) for column, sizes in self._cut.items()}


def _listed(sizes: Sequence[int]) -> str:
    return ", ".join(str(size) for size in sizes[:20]) + (", ..." if len(sizes) > 20 else "")


def _unencodable(where: str, type_name: str, value: Any, exc: BaseException) -> UnencodableValue:
    if isinstance(exc, UnencodableValue):
        return exc
    python_type = type(value).__name__
    shown = type_name or python_type
    fix = (f"select it as text instead (CAST({where} AS TEXT)) or leave it out" if type_name else
           "the verb returned a value without a text form: report it to the pack's authors")
    return UnencodableValue(
        f"{where or 'a value'} ({shown}) holds a value khive cannot encode as JSON "
        f"({type(exc).__name__}: {exc}); {fix}",
        details={"column": where, "type": shown, "python_type": python_type, "fix": fix})


# ---- the dispatcher's safety net ---------------------------------------------------------------------------


_AS_IS = orjson.OPT_STRICT_INTEGER | orjson.OPT_PASSTHROUGH_DATETIME  # big integers and datetimes: the rule's way


def jsonable(result: Any, bytes_shown: int = DEFAULT_BYTES_SHOWN) -> Any:
    """``result`` when orjson encodes it as is under the rule (the common case: one fast dumps); else a copy
    encoded by the rule. A value that cannot be encoded raises ``UnencodableValue`` naming its path.

    orjson writes a float NaN as null and cannot be told otherwise: drivers encode theirs first (``Encoder``),
    so only a handler's own NaN goes out as null."""
    try:
        orjson.dumps(result, option=_AS_IS)
        return result
    except (TypeError, orjson.JSONEncodeError):
        return _walk(result, "$", Encoder(bytes_shown))


def _deep_text(value: Any) -> str:
    """A list or map nested past ``MAX_NESTING``: its JSON text (anything not JSON by its text)."""
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (RecursionError, ValueError, TypeError):  # deeper than Python's encoder goes, or a key it cannot write
        return str(value)


def _walk(value: Any, path: str, encoder: Encoder) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:  # lone surrogates: text that was never valid UTF-8, shown as its bytes
            return encoder.binary(value.encode("utf-8", "surrogateescape" if _escaped(value) else "surrogatepass"),
                                  path)
    if isinstance(value, Mapping):
        pairs = [(_walk(key, f"{path}(key)", encoder) if not isinstance(key, str) else key,
                  _walk(item, f"{path}.{key}", encoder)) for key, item in value.items()]
        return encoder.mapping(pairs, path)
    if isinstance(value, list | tuple | set | frozenset):
        return [_walk(item, f"{path}[{index}]", encoder) for index, item in enumerate(value)]
    try:
        encoded = encoder.value(value, path)
    except Exception as exc:
        raise _unencodable(path, "", value, exc) from None
    return encoded if encoded is value else _walk(encoded, path, encoder)


def _escaped(text: str) -> bool:
    """Whether the surrogates in ``text`` all come from ``surrogateescape`` decoding (U+DC80..U+DCFF)."""
    return all(not 0xD800 <= ord(char) <= 0xDFFF or 0xDC80 <= ord(char) <= 0xDCFF for char in text)
