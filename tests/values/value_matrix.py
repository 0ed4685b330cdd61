"""Type matrices in PostgreSQL, DuckDB and SQLite, and what khive must answer for each value.

The expected answer of every value is read from the database itself (PostgreSQL's text output as
psql prints it, DuckDB's VARCHAR, SQLite's own typed values and hex()) and converted only where the
value rule says so (docs/values.md): integers beyond 2^53 - 1 and exact decimals as text, ISO 8601
``T``/offsets/expanded years, intervals as ISO 8601 (PostgreSQL prints them itself), bytes as hex
cut after 1024 bytes, numbers in JSON a double cannot hold as their text.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import psycopg
from value_transports import Site

MAX_SAFE = 2**53 - 1
SHOWN = 1024  # bytes of a binary value shown (khive's default cap)
CUT = "…"

@dataclass
class Matrix:
    """The module's project (its site) over the three matrices."""

    site: Site
    dsn: str
    duckdb: Path
    sqlite: Path


# ---- converting printed text the way the rule says ----------------------------------------------------------


def as_int(text: str) -> int | str:
    return int(text) if abs(int(text)) <= MAX_SAFE else text


def as_float(text: str) -> float | str:
    number = float(text)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number


def as_hex(hex_digits: str) -> str:
    digits = hex_digits.lower()
    return "\\x" + (digits if len(digits) <= 2 * SHOWN else digits[: 2 * SHOWN] + CUT)


def as_bytea(printed: str) -> str:
    return as_hex(printed.removeprefix("\\x"))


def _iso_year(year: int, bc: bool) -> str:
    number = 1 - year if bc else year
    return f"-{-number:04d}" if number < 0 else f"+{number}" if number > 9999 else f"{number:04d}"


def _iso_offset(offset: str) -> str:
    return offset + ":00" if len(offset) == 3 else offset


def as_stamp(printed: str) -> str:
    """``2024-03-10 12:34:56.789+00`` -> ``2024-03-10T12:34:56.789+00:00``, BC and year 10000 expanded."""
    if printed in ("infinity", "-infinity"):
        return printed
    bc = printed.endswith(" BC") or "(BC)" in printed
    text = printed.replace(" (BC)", "").removesuffix(" BC")
    day, _, clock = text.partition(" ")
    year, month, mday = day.split("-")
    out = f"{_iso_year(int(year), bc)}-{month}-{mday}"
    if clock:
        match = re.fullmatch(r"([\d:.]+)([+-][\d:]+)?", clock)
        assert match is not None, printed
        out += "T" + match.group(1) + (_iso_offset(match.group(2)) if match.group(2) else "")
    return out


def as_time(printed: str) -> str:
    match = re.fullmatch(r"([\d:.]+)([+-][\d:]+)?", printed)
    assert match is not None, printed
    return match.group(1) + (_iso_offset(match.group(2)) if match.group(2) else "")


def as_json(printed: str) -> Any:
    """JSON text with numbers a double cannot hold exactly kept as their text."""
    def number(token: str) -> Any:
        value = float(token)
        return int(token) if re.fullmatch(r"-?\d+", token) and abs(int(token)) <= MAX_SAFE else (
            value if not re.fullmatch(r"-?\d+", token) and math.isfinite(value)
            and Decimal(repr(value)) == Decimal(token) else token)

    return json.loads(printed, parse_int=number, parse_float=number)


def pg_array(printed: str, element: Callable[[str], Any]) -> Any:
    """PostgreSQL's array text (``{1.10,NaN,NULL}``, ``{{1,2},{3,4}}``, ``{"(1,a)"}``) -> nested lists."""
    position = 0

    def parse() -> list[Any]:
        nonlocal position
        assert printed[position] == "{"
        position += 1
        items: list[Any] = []
        while printed[position] != "}":
            if printed[position] == "{":
                items.append(parse())
            elif printed[position] == '"':
                position += 1
                chars = []
                while printed[position] != '"':
                    if printed[position] == "\\":
                        position += 1
                    chars.append(printed[position])
                    position += 1
                position += 1
                items.append(element("".join(chars)))
            else:
                end = position
                while printed[end] not in ",}":
                    end += 1
                token = printed[position:end]
                items.append(None if token == "NULL" else element(token))
                position = end
            if printed[position] == ",":
                position += 1
        position += 1
        return items

    return parse()


# ---- PostgreSQL -----------------------------------------------------------------------------------------------

PG_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    # column, type, the ordinary value of row 1, how its printed text becomes the answer
    ("num", "numeric", "1234.5678", "text"),
    ("big", "bigint", "42", "int"),
    ("f8", "double precision", "3.14159", "float"),
    ("f4", "real", "3.14", "float"),
    ("bin", "bytea", r"'\xdeadbeef'", "bytea"),
    ("span", "interval", "'1 day 02:03:04'", "text"),
    ("ip", "inet", "'192.168.1.10'", "text"),
    ("net", "cidr", "'10.0.0.0/8'", "text"),
    ("mac", "macaddr", "'08:00:2b:01:02:03'", "text"),
    ("uid", "uuid", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "text"),
    ("rng", "int4range", "'[1,10)'", "text"),
    ("trng", "tstzrange", "'[2024-01-01 00:00+00,2024-02-01 00:00+00)'", "text"),
    ("nums", "numeric[]", "'{1.5,2.25,3}'", "array:text"),
    ("stamps", "timestamptz[]", "'{\"2024-03-10 12:34:56.789+00\",infinity}'", "array:stamp"),
    ("spans", "interval[]", "'{\"1 mon\",\"-1 day\"}'", "array:text"),
    ("moods", "matrix_mood[]", "'{sad,ok}'", "array:text"),
    ("pairs", "matrix_pair[]", "ARRAY[ROW(1, 'one')::matrix_pair, ROW(NULL, 'it''s \"x\"')::matrix_pair]",
     "array:text"),
    ("doc", "jsonb", """'{"a": 1, "b": [true, null, "x"]}'""", "json"),
    ("ts", "timestamptz", "'2024-03-10 12:34:56.789+00'", "stamp"),
    ("lts", "timestamp", "'2024-03-10 12:34:56.5'", "stamp"),
    ("day", "date", "'2024-02-29'", "stamp"),
    ("cash", "money", "12.34", "text"),
    ("tm", "time", "'12:34:56.000001'", "time"),
    ("tz", "timetz", "'12:34:56+05:30'", "time"),
    ("pt", "point", "'(1.5,-2)'", "text"),
    ("bits", "bit varying", "B'10101'", "text"),
    ("words", "tsvector", "'a fat cat'", "text"),
    ("mood", "matrix_mood", "'ok'", "text"),
    ("pair", "matrix_pair", "ROW(1, 'one')", "text"),
    ("txt", "text", "'plain text'", "text"),
)

_BIGINT_MAX = "9223372036854775807::bigint"
PG_VALUES: tuple[tuple[str, str, str], ...] = (
    # label, column, SQL expression
    ("numeric NaN", "num", "'NaN'"),
    ("numeric Infinity", "num", "'Infinity'"),
    ("numeric -Infinity", "num", "'-Infinity'"),
    ("numeric 38 digits", "num", "12345678901234567890123456789012345678"),
    ("numeric 38 digits with scale 19", "num", "1234567890123456789.0123456789012345678"),
    ("numeric tiny", "num", "0.000000000000000000000000000000000001"),
    ("numeric trailing zeros", "num", "1.5000"),
    ("numeric sum beyond 2^64", "num",
     f"(SELECT sum(x) FROM (VALUES ({_BIGINT_MAX}), ({_BIGINT_MAX}), ({_BIGINT_MAX})) AS v(x))"),
    ("bigint max", "big", "9223372036854775807"),
    ("bigint min", "big", "-9223372036854775808"),
    ("bigint 2^53 + 1", "big", "9007199254740993"),
    ("bigint 2^53 - 1", "big", "9007199254740991"),
    ("float8 NaN", "f8", "'NaN'"),
    ("float8 Infinity", "f8", "'Infinity'"),
    ("float8 -Infinity", "f8", "'-Infinity'"),
    ("float8 -0", "f8", "'-0'"),
    ("float8 0.1", "f8", "0.1"),
    ("bytea empty", "bin", r"'\x'"),
    ("bytea every byte", "bin",
     "(SELECT decode(string_agg(lpad(to_hex(i), 2, '0'), '' ORDER BY i), 'hex') FROM generate_series(0, 255) AS i)"),
    ("bytea 64 KiB", "bin", "decode(repeat('00ff', 32768), 'hex')"),
    ("interval mixed units", "span", "'1 year 2 mons 3 days 04:05:06.789'"),
    ("interval mixed signs", "span", "'-3 days +01:02:03'"),
    ("interval 1 microsecond", "span", "'00:00:00.000001'"),
    ("interval zero", "span", "'0'"),
    ("inet ipv6 with prefix", "ip", "'2001:db8::1/64'"),
    ("inet ipv4-mapped ipv6", "ip", "'::ffff:192.0.2.1'"),
    ("cidr ipv6", "net", "'2001:db8::/32'"),
    ("uuid nil", "uid", "'00000000-0000-0000-0000-000000000000'"),
    ("int4range empty", "rng", "'empty'"),
    ("int4range unbounded", "rng", "'[5,)'"),
    ("tstzrange infinite", "trng", "'[2024-01-01 00:00+00,infinity)'"),
    ("numeric[] NaN NULL Infinity", "nums", "'{1.10,NaN,NULL,Infinity}'"),
    ("numeric[] two-dimensional", "nums", "'{{1,2},{3,4}}'"),
    ("numeric[] empty", "nums", "'{}'"),
    ("timestamptz[] BC", "stamps", "'{\"0044-03-15 12:00:00+00 BC\",NULL}'"),
    ("jsonb big number", "doc",
     """'{"big": 123456789012345678901234567890, "pi": 3.14159265358979323846264338327950288, """
     """"s": "café 😀 \\"quoted\\"", "nested": {"a": [1, {"b": null}]}}'"""),
    ("jsonb scalar string", "doc", """'"just a string"'"""),
    ("jsonb JSON null", "doc", "'null'"),
    ("jsonb 2^53 + 1", "doc", "'[9007199254740993, 9007199254740991, 0.1, 1e400]'"),
    ("timestamptz infinity", "ts", "'infinity'"),
    ("timestamptz -infinity", "ts", "'-infinity'"),
    ("timestamptz BC", "ts", "'0044-03-15 12:00:00+00 BC'"),
    ("timestamptz year 10000", "ts", "'10000-01-01 00:00:00+00'"),
    ("timestamptz given at +05:30", "ts", "'2024-06-01 08:00:00+05:30'"),
    ("timestamp infinity", "lts", "'infinity'"),
    ("date infinity", "day", "'infinity'"),
    ("date -infinity", "day", "'-infinity'"),
    ("date BC", "day", "'0001-01-01 BC'"),
    ("date year 10000", "day", "'10000-01-01'"),
    ("money max", "cash", "'92233720368547758.07'"),
    ("money min", "cash", "'-92233720368547758.08'"),
    ("time 24:00", "tm", "'24:00:00'"),
    ("timetz -12:00", "tz", "'23:59:59.999999-12:00'"),
    ("point NaN", "pt", "'(NaN,1)'"),
    ("composite NULL and quotes", "pair", "ROW(NULL, 'it''s \"x\"')"),
    ("text control characters and RTL", "txt", "E'tab\\there\\nnewline \\u202e RTL \\u0001 end'"),
    ("text empty", "txt", "''"),
)

LEDGER_SQL = """
CREATE TABLE public.ledger (id integer PRIMARY KEY, kind text NOT NULL, amount bigint NOT NULL);
INSERT INTO public.ledger VALUES (1, 'huge', 9223372036854775807), (2, 'huge', 9223372036854775807),
    (3, 'huge', 9223372036854775807), (4, 'small', 1), (5, 'small', 2), (6, 'negative', -5);
"""
LEDGER_SOURCE = """name: ledger
table: public.ledger
grain: [id]
columns:
  - {name: id, type: number}
  - {name: kind}
measures:
  - {name: total, agg: sum, expr: amount}
  - {name: entries, agg: count}
"""


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def pg_matrix_sql() -> str:
    columns = ", ".join(c for c, _, _, _ in PG_COLUMNS)
    lines = [
        "CREATE TYPE matrix_mood AS ENUM ('sad', 'ok', 'happy');",
        "CREATE TYPE matrix_pair AS (a integer, b text);",
        "CREATE TABLE public.matrix (id integer PRIMARY KEY, label text NOT NULL, "
        + ", ".join(f"{c} {t}" for c, t, _, _ in PG_COLUMNS) + ");",
        f"INSERT INTO public.matrix (id, label, {columns}) VALUES (1, 'ordinary values', "
        + ", ".join(v for _, _, v, _ in PG_COLUMNS) + ");",
        "INSERT INTO public.matrix (id, label) VALUES (2, 'all NULL');",
    ]
    for row_id, (label, column, expression) in enumerate(PG_VALUES, start=10):
        lines.append(f"INSERT INTO public.matrix (id, label, {column}) VALUES ({row_id}, {_sql_string(label)}, "
                     f"{expression});")
    return "\n".join(lines) + LEDGER_SQL


_AS: dict[str, Callable[[str], Any]] = {"text": str, "int": as_int, "float": as_float, "bytea": as_bytea,
                                        "stamp": as_stamp, "time": as_time, "json": as_json}


def answer(kind: str, printed: str | None) -> Any:
    """A value printed by the database -> the answer the rule gives (``array:<element kind>`` for arrays)."""
    if printed is None:
        return None
    if kind.startswith("array:"):
        return pg_array(printed, _AS[kind.removeprefix("array:")])
    return _AS[kind](printed)


def pg_expected(dsn: str) -> dict[int, dict[str, Any]]:
    """Every row of public.matrix as the rule answers it, from PostgreSQL's own text of each value.

    ``format('%s', x)`` calls the type's output function, as psql does; intervals print as ISO 8601
    themselves under IntervalStyle iso_8601."""
    fields = ", ".join(f"CASE WHEN num_nulls({c}) = 0 THEN format('%s', {c}) END" for c, _, _, _ in PG_COLUMNS)
    with psycopg.connect(dsn, options="-c intervalstyle=iso_8601 -c datestyle=ISO") as conn:
        rows = conn.execute(f"SELECT id, label, {fields} FROM public.matrix ORDER BY id").fetchall()
    expected = {}
    for row_id, label, *printed in rows:
        values = {"id": row_id, "label": label}
        values.update({column: answer(kind, text) for (column, _, _, kind), text in zip(PG_COLUMNS, printed,
                                                                                         strict=True)})
        expected[row_id] = values
    return expected


def pg_ledger_expected(dsn: str) -> dict[str, list[Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT kind, sum(amount)::text, count(*)::text FROM public.ledger GROUP BY kind")
        return {kind: [str(total), as_int(count)] for kind, total, count in rows.fetchall()}


# ---- DuckDB ---------------------------------------------------------------------------------------------------

DUCK_SCALARS: tuple[tuple[str, str, str], ...] = (
    # name, SQL literal, how DuckDB's VARCHAR of it becomes the answer
    ("dec", "1.5000::DECIMAL(10,4)", "text"),
    ("dec38", "12345678901234567890123456789012345678::DECIMAL(38,0)", "text"),
    ("dec_tiny", "0.000000000000000000000000000000000001::DECIMAL(38,36)", "text"),
    ("huge", "170141183460469231731687303715884105727::HUGEINT", "int"),
    ("huge_small", "-42::HUGEINT", "int"),
    ("uhuge", "340282366920938463463374607431768211455::UHUGEINT", "int"),
    ("big_max", "9223372036854775807::BIGINT", "int"),
    ("bignum", "12345678901234567890123::VARINT", "int"),
    ("ival_mixed", "INTERVAL '1 year 2 months 3 days 04:05:06.789'", "interval"),
    ("ival_month", "INTERVAL '1 month'", "interval"),
    ("ival_signs", "INTERVAL '-3 days' + INTERVAL '01:02:03'", "interval"),
    ("ival_us", "INTERVAL '1 microsecond'", "interval"),
    ("ival_neg", "-INTERVAL '1.5 seconds'", "interval"),
    ("blob", "'\\xAA\\x00\\xFF'::BLOB", "blob"),
    ("blob_empty", "''::BLOB", "blob"),
    ("blob_big", "CAST(repeat('\\x00\\xFF', 1024) AS BLOB)", "blob"),
    ("uuid_nil", "'00000000-0000-0000-0000-000000000000'::UUID", "text"),
    ("bits", "'10101'::BIT", "text"),
    ("ttz", "'12:34:56+05:30'::TIMETZ", "time"),
    ("ttz_neg", "'23:59:59.999999-12:00'::TIMETZ", "time"),
    ("tm_ns", "'12:00:00.123456789'::TIME_NS", "time"),
    ("ts_inf", "'infinity'::TIMESTAMP", "stamp"),
    ("ts_ninf", "'-infinity'::TIMESTAMP", "stamp"),
    ("tstz", "'2024-03-10 12:34:56.789+00'::TIMESTAMPTZ", "stamp"),
    ("tstz_inf", "'infinity'::TIMESTAMPTZ", "stamp"),
    ("date_ninf", "'-infinity'::DATE", "stamp"),
    ("date_bc", "DATE '0044-03-15 (BC)'", "stamp"),
    ("ts_far", "TIMESTAMP '10000-01-01 00:00:00'", "stamp"),
    ("ts_ns", "TIMESTAMP_NS '1992-09-20 11:30:00.123456789'", "stamp"),
    ("dbl_nan", "'nan'::DOUBLE", "float"),
    ("dbl_inf", "'-inf'::DOUBLE", "float"),
    ("dbl_negzero", "'-0.0'::DOUBLE", "float"),
    ("f4", "3.14::FLOAT", "float"),
    ("js", """'{"big": 123456789012345678901234567890, "x": 0.1, "s": "ü"}'::JSON""", "json"),
    ("mood", "'ok'::matrix_mood", "text"),
    ("txt", "'tab' || chr(9) || 'newline' || chr(10) || chr(8238) || ' RTL ' || chr(1)", "text"),
)
# nested columns built from the scalars: (name, SQL template over {scalar} literals, shape)
DUCK_NESTED: tuple[tuple[str, str, Any], ...] = (
    ("list_dec", "[{dec}, NULL, {dec}]", ["dec", None, "dec"]),
    ("list_ival", "[{ival_mixed}, {ival_month}, NULL]", ["ival_mixed", "ival_month", None]),
    ("list_huge", "[{huge}, {huge_small}]", ["huge", "huge_small"]),
    ("list_blob", "[{blob}, {blob_empty}]", ["blob", "blob_empty"]),
    ("list_list_ival", "[[{ival_us}], [NULL, {ival_signs}]]", [["ival_us"], [None, "ival_signs"]]),
    ("array_ival", "CAST([{ival_month}, {ival_us}] AS INTERVAL[2])", ["ival_month", "ival_us"]),
    ("struct_mix", "{{'d': {dec38}, 'i': {ival_signs}, 'b': {blob}, 'h': {uhuge}, 'n': NULL::INTEGER}}",
     {"d": "dec38", "i": "ival_signs", "b": "blob", "h": "uhuge", "n": None}),
    ("struct_nested", "{{'x': [{{'y': {ival_month}, 'z': {tstz_inf}}}]}}",
     {"x": [{"y": "ival_month", "z": "tstz_inf"}]}),
    ("map_int_ival", "MAP {{1: {ival_us}, 2: {ival_month}}}", {"1": "ival_us", "2": "ival_month"}),
    ("map_text_dec", "MAP {{'a': {dec}, 'b': NULL::DECIMAL(10,4)}}", {"a": "dec", "b": None}),
    ("map_list_key", "MAP {{[1, 2]: {huge}}}", [{"key": [1, 2], "value": "huge"}]),
    ("union_ival", "union_value(i := {ival_month})::UNION(n INTEGER, i INTERVAL)", "ival_month"),
    ("union_huge", "union_value(h := {huge})::UNION(h HUGEINT, s VARCHAR)", "huge"),
    ("list_struct_blob", "[{{'b': {blob_big}, 'u': {uuid_nil}}}]", [{"b": "blob_big", "u": "uuid_nil"}]),
)


def duck_matrix(path: Path) -> None:
    """One row with a value in every column, one row of NULLs; column names as in DUCK_SCALARS/DUCK_NESTED."""
    literals = {name: literal for name, literal, _ in DUCK_SCALARS}
    picks = [f"{literal} AS {name}" for name, literal, _ in DUCK_SCALARS]
    picks += [f"{template.format(**literals)} AS {name}" for name, template, _ in DUCK_NESTED]
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TYPE matrix_mood AS ENUM ('sad', 'ok', 'happy')")
        conn.execute(f"CREATE TABLE matrix AS SELECT 1 AS id, {', '.join(picks)}")
        conn.execute("INSERT INTO matrix (id) VALUES (2)")


def duck_expected(path: Path, interval_iso: Callable[[list[str]], list[str]]) -> dict[str, Any]:
    """Row 1 of the DuckDB matrix as the rule answers it. Scalars from DuckDB's VARCHAR of each value (BLOB
    through hex()); intervals through ``interval_iso`` (PostgreSQL printing DuckDB's text as ISO 8601)."""
    with duckdb.connect(str(path), read_only=True) as conn:
        printed = conn.execute("SELECT " + ", ".join(
            f"lower(hex({name}))" if kind == "blob" else f"CAST({name} AS VARCHAR)"
            for name, _, kind in DUCK_SCALARS) + " FROM matrix WHERE id = 1").fetchone()
    assert printed is not None
    kinds = {name: kind for name, _, kind in DUCK_SCALARS}
    texts = dict(zip(kinds, printed, strict=True))
    intervals = [name for name, kind in kinds.items() if kind == "interval"]
    iso = dict(zip(intervals, interval_iso([texts[name] for name in intervals]), strict=True))
    convert: dict[str, Callable[[str], Any]] = {"text": str, "int": as_int, "float": as_float, "stamp": as_stamp,
                                                "time": as_time, "json": as_json, "blob": as_hex}
    scalars = {name: iso[name] if kind == "interval" else convert[kind](texts[name]) for name, kind in kinds.items()}

    def build(shape: Any) -> Any:
        if isinstance(shape, list):
            return [build(item) for item in shape]
        if isinstance(shape, dict):
            return {key: build(item) if key != "key" else item for key, item in shape.items()}
        return None if shape is None else scalars[shape]

    return {"id": 1, **scalars, **{name: build(shape) for name, _, shape in DUCK_NESTED}}


# ---- SQLite ---------------------------------------------------------------------------------------------------

SQLITE_ROWS: tuple[tuple[str, str], ...] = (
    # label, SQL values for (i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC)
    ("ordinary", "42, 1.5, 'plain', x'deadbeef', 10"),
    ("all NULL", "NULL, NULL, NULL, NULL, NULL"),
    ("extremes", "9223372036854775807, 1e999, 'tab' || char(9) || char(8238), x'', 9007199254740993"),
    ("negatives", "-9223372036854775808, -1e999, '', zeroblob(2048), -0.5"),
    ("near 2^53", "9007199254740991, -0.0, CAST(x'c3a9' AS TEXT), x'00ff', 'text in a numeric column'"),
    ("invalid utf-8", "9007199254740992, 0.1, CAST(x'ff80fe' AS TEXT), x'ff', 1e999"),
)


def sqlite_matrix(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE matrix (id INTEGER PRIMARY KEY, label TEXT, i INTEGER, r REAL, t TEXT, b BLOB, "
                     "n NUMERIC)")
        for row_id, (label, values) in enumerate(SQLITE_ROWS, start=1):
            conn.execute(f"INSERT INTO matrix VALUES ({row_id}, '{label}', {values})")
    conn.close()


def sqlite_expected(path: Path) -> dict[int, list[Any]]:
    """Rows as the rule answers them, from SQLite's own per-value types: typeof(), the stored integer or
    real (Python reads both exactly), hex() for text and blobs."""
    conn = sqlite3.connect(path)
    try:
        columns = ("i", "r", "t", "b", "n")
        picks = ", ".join(f"typeof({c}), {c}, hex({c})" for c in columns)
        conn.text_factory = bytes
        rows = conn.execute(f"SELECT id, label, {picks} FROM matrix ORDER BY id").fetchall()
    finally:
        conn.close()
    expected = {}
    for row_id, label, *cells in rows:
        values: list[Any] = [row_id, label.decode()]
        for index in range(0, len(cells), 3):
            kind, value, hexed = cells[index].decode(), cells[index + 1], cells[index + 2].decode()
            if kind == "null":
                values.append(None)
            elif kind == "integer":
                values.append(as_int(str(value)))
            elif kind == "real":
                values.append(as_float(repr(value)))
            elif kind == "text":
                try:
                    values.append(bytes.fromhex(hexed).decode("utf-8"))
                except UnicodeDecodeError:
                    values.append(as_hex(hexed))
            else:
                values.append(as_hex(hexed))
        expected[row_id] = values
    return expected
