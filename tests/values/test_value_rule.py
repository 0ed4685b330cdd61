"""khive's value rule (khive/values.py, docs/values.md), type by type, on plain Python values and database text."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from khive.values import (
    CUT,
    DEFAULT_BYTES_SHOWN,
    MAX_SAFE_INTEGER,
    Encoder,
    UnencodableValue,
    duration,
    float_text,
    integer,
    integer_text,
    interval_text,
    json_text,
    jsonable,
    stamp_text,
    time_text,
    timedelta_text,
)


class Mood(enum.Enum):
    OK = "ok"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text form")


def wire(value: Any) -> Any:
    """What a client parses: the value through orjson and back (numbers as doubles, like JavaScript)."""
    return orjson.loads(orjson.dumps(value))


# ---- numbers ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (0, 0), (42, 42), (-42, -42), (MAX_SAFE_INTEGER, MAX_SAFE_INTEGER), (-MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER),
    (2**53, "9007199254740992"), (2**53 + 1, "9007199254740993"), (-(2**53) - 1, "-9007199254740993"),
    (9223372036854775807, "9223372036854775807"), (-9223372036854775808, "-9223372036854775808"),
    (2**64 + 5, "18446744073709551621"), (2**127 - 1, "170141183460469231731687303715884105727"),
])
def test_integers_beyond_2_53_are_decimal_strings(value: int, expected: int | str) -> None:
    assert integer(value) == expected and type(integer(value)) is type(expected)
    assert Encoder().value(value) == expected
    assert integer_text(str(value)) == expected


def test_integer_text_keeps_digits_no_float_could_hold() -> None:
    assert integer_text("1" * 5000) == "1" * 5000  # beyond Python's int()-from-text limit: never parsed
    assert integer_text("007") == 7
    assert integer_text("not a number") == "not a number"


@pytest.mark.parametrize(("value", "expected"), [
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (1.5, 1.5), (0.1, 0.1),
])
def test_floats_are_numbers_and_non_finite_floats_strings(value: float, expected: Any) -> None:
    assert Encoder().value(value) == expected


def test_negative_zero_stays_negative_zero_on_the_wire() -> None:
    sent = wire(Encoder().value(-0.0))
    assert sent == 0.0 and str(sent) == "-0.0"


@pytest.mark.parametrize(("text", "expected"), [
    ("3.14", 3.14), ("-0", -0.0), ("Infinity", "Infinity"), ("-inf", "-Infinity"), ("NaN", "NaN"), ("nan", "NaN"),
    ("1e-45", 1e-45),
])
def test_float_text_is_the_shortest_round_trip_of_the_printed_value(text: str, expected: Any) -> None:
    assert float_text(text) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (Decimal("1.5000"), "1.5000"), (Decimal("1E-36"), "0.000000000000000000000000000000000001"),
    (Decimal("12345678901234567890123456789012345678"), "12345678901234567890123456789012345678"),
    (Decimal("1234567890123456789.0123456789012345678"), "1234567890123456789.0123456789012345678"),
    (Decimal("NaN"), "NaN"), (Decimal("Infinity"), "Infinity"), (Decimal("-Infinity"), "-Infinity"),
    (Decimal("42"), "42"), (Decimal("1E+3"), "1000"),
])
def test_exact_decimals_are_always_strings_with_scale_and_no_exponent(value: Decimal, expected: str) -> None:
    assert Encoder().value(value) == expected


@given(st.integers())
def test_every_integer_number_on_the_wire_is_exact_as_a_double(value: int) -> None:
    sent = wire(Encoder().value(value))
    if isinstance(sent, str):
        assert int(sent) == value and abs(value) > MAX_SAFE_INTEGER
    else:
        assert float(sent) == value and int(float(sent)) == value


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_every_json_number_on_the_wire_denotes_the_source_decimal(value: Decimal) -> None:
    exponent = value.as_tuple().exponent
    text = format(value, "f") if isinstance(exponent, int) and exponent >= -30 else str(value)
    sent = wire(json_text(f"[{text}]"))[0]
    if isinstance(sent, str):
        assert sent == text
    else:
        assert Decimal(repr(float(sent))) == Decimal(text)


# ---- bytes -----------------------------------------------------------------------------------------------------

def test_bytes_are_postgres_hex_and_long_values_are_cut_with_a_note() -> None:
    encoder = Encoder(bytes_shown=4)
    every = bytes(range(256))
    assert encoder.value(b"") == "\\x"
    assert encoder.value(b"\xde\xad\xbe\xef", "pic") == "\\xdeadbeef"
    assert Encoder().value(every) == "\\x" + every.hex()
    cut = encoder.value(b"\x00\xff" * 10, "pic")
    assert cut == "\\x00ff00ff" + CUT and not cut.endswith(tuple("0123456789abcdef"))
    encoder.value(bytearray(7), "pic")
    encoder.value(memoryview(b"12345"), "other")
    notes = encoder.notes()
    assert len(notes) == 2
    assert "'pic'" in notes[0] and "2 binary value(s)" in notes[0] and "20, 7" in notes[0]
    assert "'other'" in notes[1] and "5" in notes[1]
    assert encoder.cut() == {"pic": [20, 7], "other": [5]}


def test_the_default_cap_is_1024_bytes_of_input() -> None:
    assert DEFAULT_BYTES_SHOWN == 1024
    shown = Encoder().value(bytes(2048), "b")
    assert shown == "\\x" + "00" * 1024 + CUT


# ---- dates, times, intervals -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("printed", "expected"), [
    ("2024-03-10 12:34:56.789+00", "2024-03-10T12:34:56.789+00:00"),
    ("2024-06-01 08:00:00+05:30", "2024-06-01T08:00:00+05:30"),
    ("1900-01-01 00:19:32+00:19:32", "1900-01-01T00:19:32+00:19:32"),
    ("2024-01-01 10:00:00", "2024-01-01T10:00:00"),
    ("2024-02-29", "2024-02-29"),
    ("infinity", "infinity"), ("-infinity", "-infinity"),
    ("0044-03-15 12:00:00+00 BC", "-0043-03-15T12:00:00+00:00"),  # PostgreSQL
    ("0044-03-15 (BC) 12:00:00", "-0043-03-15T12:00:00"),  # DuckDB
    ("0044-03-15 (BC)", "-0043-03-15"),
    ("0001-01-01 BC", "0000-01-01"),
    ("10000-01-01 00:00:00+00", "+10000-01-01T00:00:00+00:00"),
    ("10000-01-01", "+10000-01-01"),
    ("1992-09-20 11:30:00.123456789", "1992-09-20T11:30:00.123456789"),
    ("not a date", "not a date"),
])
def test_stamps_are_iso_8601_with_expanded_years(printed: str, expected: str) -> None:
    assert stamp_text(printed) == expected


@pytest.mark.parametrize(("printed", "expected"), [
    ("12:34:56", "12:34:56"), ("12:34:56.5+05:30", "12:34:56.5+05:30"), ("23:59:59.999999-12", "23:59:59.999999-12:00"),
    ("24:00:00", "24:00:00"), ("12:00:00.123456789", "12:00:00.123456789"),
])
def test_times_keep_fractions_and_get_full_offsets(printed: str, expected: str) -> None:
    assert time_text(printed) == expected


def test_python_temporal_values() -> None:
    encoder = Encoder()
    assert encoder.value(datetime(2024, 3, 10, 12, 34, 56, 789000, tzinfo=UTC)) == "2024-03-10T12:34:56.789+00:00"
    assert encoder.value(datetime(2024, 3, 10, 12, 34, 56)) == "2024-03-10T12:34:56"
    offset = timezone(timedelta(hours=-12))
    assert encoder.value(datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=offset)) == "0001-01-01T00:00:00.000001-12:00"
    assert encoder.value(date(2024, 2, 29)) == "2024-02-29"
    assert encoder.value(time(12, 34, 56, tzinfo=timezone(timedelta(hours=5, minutes=30)))) == "12:34:56+05:30"
    assert encoder.value(timedelta(days=1, hours=2, minutes=3, seconds=4)) == "P1DT2H3M4S"


@pytest.mark.parametrize(("months", "days", "micros", "expected"), [
    (14, 3, ((4 * 60 + 5) * 60 + 6) * 1_000_000 + 789_000, "P1Y2M3DT4H5M6.789S"),
    (0, -3, (3600 + 2 * 60 + 3) * 1_000_000, "P-3DT1H2M3S"),
    (0, 0, 1, "PT0.000001S"),
    (0, 0, 0, "PT0S"),
    (-14, 0, 0, "P-1Y-2M"),
    (0, 0, -1_500_000, "PT-1.5S"),
    (1, 0, 1, "P1MT0.000001S"),
    (0, 0, 100 * 3_600_000_000, "PT100H"),
    (11, 0, 0, "P11M"),
])
def test_durations_as_postgres_iso_8601_prints_them(months: int, days: int, micros: int, expected: str) -> None:
    assert duration(months, days, micros) == expected


@pytest.mark.parametrize(("printed", "expected"), [
    ("1 year 2 months 3 days 04:05:06.789", "P1Y2M3DT4H5M6.789S"), ("1 month", "P1M"),
    ("-3 days 01:02:03", "P-3DT1H2M3S"), ("00:00:00.000001", "PT0.000001S"), ("-1 year -2 months", "P-1Y-2M"),
    ("00:00:00", "PT0S"), ("-00:00:01.5", "PT-1.5S"), ("100:00:00", "PT100H"), ("1 day", "P1D"),
    ("2 years", "P2Y"), ("odd text", "odd text"),
])
def test_duckdb_interval_text_never_loses_months(printed: str, expected: str) -> None:
    assert interval_text(printed) == expected


def test_timedeltas_keep_one_sign_per_field() -> None:
    assert timedelta_text(timedelta(hours=-1)) == "PT-1H"
    assert timedelta_text(timedelta(days=-3, hours=1)) == "P-2DT-23H"
    assert timedelta_text(timedelta(0)) == "PT0S"


# ---- json ------------------------------------------------------------------------------------------------------

def test_json_numbers_a_double_cannot_hold_become_strings() -> None:
    value = json_text('{"big": 123456789012345678901234567890, "pi": 3.14159265358979323846264338327950288, '
                      '"x": 0.1, "y": 1.50, "safe": 9007199254740991, "unsafe": 9007199254740993, "e": 1e400, '
                      '"tiny": 1e-400, "s": "café 😀 \\"quoted\\"", "nested": {"a": [1, {"b": null}]}}')
    assert value == {"big": "123456789012345678901234567890", "pi": "3.14159265358979323846264338327950288",
                     "x": 0.1, "y": 1.5, "safe": 9007199254740991, "unsafe": "9007199254740993", "e": "1e400",
                     "tiny": "1e-400", "s": 'café 😀 "quoted"', "nested": {"a": [1, {"b": None}]}}
    assert json_text('"just a string"') == "just a string"
    assert json_text("null") is None


def test_json_deeper_than_the_parser_goes_is_its_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert json_text(deep) == deep


# ---- nested values, maps and other types -----------------------------------------------------------------------

def test_lists_structs_and_maps() -> None:
    encoder = Encoder()
    assert encoder.value([Decimal("1.10"), None, (2**60, b"\x01")]) == ["1.10", None, ["1152921504606846976", "\\x01"]]
    assert encoder.value({"a": Decimal("1"), "b": {"c": float("nan")}}) == {"a": "1", "b": {"c": "NaN"}}
    assert encoder.value({1: "a", 2: "b"}) == {"1": "a", "2": "b"}
    assert encoder.value({1.5: "a", True: "b"}) == {"1.5": "a", "true": "b"}
    assert encoder.value({(1, 2): "a"}) == [{"key": [1, 2], "value": "a"}]
    assert encoder.value({1: "int", "1": "text"}) == [{"key": 1, "value": "int"}, {"key": "1", "value": "text"}]


def test_other_types_are_their_text() -> None:
    encoder = Encoder()
    assert encoder.value(uuid.UUID(int=0)) == "00000000-0000-0000-0000-000000000000"
    assert encoder.value(Mood.OK) == "ok"
    assert encoder.value(Decimal) == str(Decimal)


def test_a_value_without_a_text_form_names_its_column_and_type() -> None:
    rows = [[1, "ok"], [2, Unprintable()]]
    with pytest.raises(UnencodableValue) as caught:
        Encoder().rows(rows, [{"name": "id", "type": "int4"}, {"name": "shape", "type": "geometry"}])
    assert caught.value.code == "unencodable_value"
    assert {key: caught.value.details[key] for key in ("column", "type", "python_type")} == {
        "column": "shape", "type": "geometry", "python_type": "Unprintable"}
    assert "CAST(shape AS TEXT)" in caught.value.details["fix"]
    assert "shape" in caught.value.message and "geometry" in caught.value.message


def test_rows_with_converters() -> None:
    rows = Encoder().rows([["P1D", 3], [None, None]], [{"name": "a"}, {"name": "b"}],
                          [lambda value, encoder, column: value.lower(), None])
    assert rows == [["p1d", 3], [None, None]]


# ---- the dispatcher's safety net -------------------------------------------------------------------------------

def test_jsonable_returns_ordinary_results_untouched() -> None:
    result = {"rows": [[1, "a", None, 1.5, True]], "nested": {"x": [{"y": "z"}]}}
    assert jsonable(result) is result


def test_jsonable_encodes_what_orjson_would_refuse_or_mangle() -> None:
    result = {"n": Decimal("1.50"), "b": b"\xff", "big": 2**64, "safe": 2**53 + 1, 3: "int key",
              "bad": "bad \udcff text", "when": date(2024, 1, 1),
              "at": datetime(2024, 1, 1, 1, 2, 3, 500000, tzinfo=UTC)}
    assert jsonable(result) == {"n": "1.50", "b": "\\xff", "big": "18446744073709551616",
                                "safe": "9007199254740993", "3": "int key", "bad": "\\x62616420ff2074657874",
                                "when": "2024-01-01", "at": "2024-01-01T01:02:03.5+00:00"}


def test_jsonable_names_the_path_of_a_value_it_cannot_encode() -> None:
    with pytest.raises(UnencodableValue) as caught:
        jsonable({"rows": [[1, Unprintable()]]})
    assert caught.value.details["column"] == "$.rows[0][1]"
    assert caught.value.details["python_type"] == "Unprintable"
