"""Helpers every driver shares: type normalisation, sensitivity, schema globs and bulk sampling.

``normalize_type`` maps an engine's native type text (``character varying(255)``, ``NUMBER(38,0)``,
``ARRAY<STRUCT<a INT64>>``, ``STRUCT(a INTEGER)[]``) to one ``NormalizedType``; ``dimension_type``
guesses how an analyst would use the column. Sampling builds ONE query per table: a materialised
sample of at most ``sample_rows`` rows and, per sampled column, a ``UNION ALL`` branch that keeps
the ``max_values`` most frequent values with the distinct and null counts (window functions over
the grouped sample). Every value is cast to text (one column type across the branches) and the
Python side turns that text into the value a query would return, by khive's value rule
(khive/values.py): exact decimals stay the database's text, integers beyond 2**53 - 1 too.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from khive.connections.catalog import Column, ColumnSample, DimensionType, NormalizedType, Table
from khive.connections.config import SamplePolicy, SchemaFilter
from khive.connections.driver import QueryResult
from khive.errors import ConfigError, KhiveError
from khive.secretnames import secret_name
from khive.values import (
    DEFAULT_SHOWN,
    Converter,
    Encoder,
    Shown,
    float_text,
    hex_text,
    integer_text,
    interval_text,
    stamp_text,
    time_text,
)

_TYPES: dict[NormalizedType, tuple[str, ...]] = {
    "integer": ("INT", "INTEGER", "INT2", "INT4", "INT8", "INT16", "INT32", "INT64", "INT128", "SMALLINT", "BIGINT",
                "TINYINT", "MEDIUMINT", "HUGEINT", "UHUGEINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT",
                "SERIAL", "SERIAL2", "SERIAL4", "SERIAL8", "SMALLSERIAL", "BIGSERIAL", "BYTEINT", "VARINT",
                "BIGNUM", "LONG", "SHORT", "SIGNED", "UNSIGNED", "YEAR"),
    "number": ("NUMERIC", "DECIMAL", "DEC", "NUMBER", "REAL", "FLOAT", "FLOAT4", "FLOAT8", "FLOAT32", "FLOAT64",
               "DOUBLE", "DOUBLE PRECISION", "BIGNUMERIC", "BIGDECIMAL", "MONEY", "SMALLMONEY", "DECFLOAT"),
    "string": ("VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING", "CHAR VARYING", "NCHAR", "NVARCHAR", "VARCHAR2",
               "NVARCHAR2", "NATIONAL CHARACTER", "NATIONAL CHARACTER VARYING", "TEXT", "STRING", "BPCHAR", "CITEXT",
               "NAME", "CLOB", "NCLOB", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "NTEXT", "ENUM", "SET"),
    "boolean": ("BOOL", "BOOLEAN", "LOGICAL"),
    "date": ("DATE",),
    "timestamp": ("TIMESTAMP", "TIMESTAMPTZ", "DATETIME", "DATETIME2", "DATETIMEOFFSET", "SMALLDATETIME",
                  "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE",
                  "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "TIMESTAMP_TZ", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_US",
                  "TIMESTAMP_NS"),
    "time": ("TIME", "TIMETZ", "TIME WITH TIME ZONE", "TIME WITHOUT TIME ZONE", "TIME_NS"),
    "binary": ("BYTEA", "BLOB", "BYTES", "BINARY", "VARBINARY", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "IMAGE", "RAW",
               "BINARY VARYING"),
    "json": ("JSON", "JSONB", "VARIANT", "OBJECT", "STRUCT", "MAP", "UNION", "RECORD", "ROW", "SUPER", "HSTORE"),
    "array": ("ARRAY", "LIST"),
    "uuid": ("UUID", "UNIQUEIDENTIFIER"),
    "interval": ("INTERVAL",),
}
_BY_NAME: dict[str, NormalizedType] = {name: kind for kind, names in _TYPES.items() for name in names}
_EXACT_NUMERIC = frozenset({"NUMERIC", "DECIMAL", "DEC", "NUMBER", "BIGNUMERIC", "BIGDECIMAL"})
_PRINTED_NUMBERS = frozenset({"MONEY", "SMALLMONEY", "DECFLOAT"})  # sampled as the text the database prints
_LONG_TEXT = frozenset({"CLOB", "NCLOB", "MEDIUMTEXT", "LONGTEXT", "NTEXT"})
TEXT_LIKE = _TEXT_LIKE = frozenset({"string", "other"})  # sampled values cut to max_text_length
_UNSAMPLEABLE = frozenset({"GEOGRAPHY", "GEOMETRY", "XML", "TSVECTOR", "TSQUERY", "VECTOR", "HSTORE"})
_PROSE_WORDS = frozenset({"description", "desc", "comment", "comments", "note", "notes", "body", "content", "message",
                          "summary", "bio", "remark", "remarks", "details", "html", "markdown", "transcript", "text",
                          "abstract", "narrative", "feedback"})
_CODE_WORDS = frozenset({"code", "zip", "zipcode", "postal", "postcode", "year", "status", "type", "kind"})
_ID_RE = re.compile(r"(?:^|_)(?:id|uuid|guid)\Z")
_CAMEL_ID_RE = re.compile(r"[a-z0-9]I[dD]\Z")
_WORD_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _split(native: str) -> tuple[str, list[str]]:
    """``"NUMERIC(12, 2)"`` -> ``("NUMERIC", ["12", "2"])``; nested (...) and <...> groups are dropped."""
    depth = 0
    base: list[str] = []
    args: list[str] = []
    current: list[str] = []
    for char in native:
        if char in "(<":
            depth += 1
            if depth == 1:
                continue
        elif char in ")>":
            depth -= 1
            if depth == 0:
                args.append("".join(current))
                current = []
                continue
        if depth == 0:
            base.append(char)
        elif not args:
            current.append(char)
    words = " ".join("".join(base).replace('"', "").split())
    first = args[0] if args else ""
    return words, [part.strip() for part in first.split(",") if part.strip()]


def _sqlite_affinity(base: str) -> NormalizedType:
    # https://www.sqlite.org/datatype3.html#determination_of_column_affinity, in its order
    if "INT" in base:
        return "integer"
    if any(word in base for word in ("CHAR", "CLOB", "TEXT")):
        return "string"
    if "BLOB" in base:
        return "binary"
    if not base:
        return "other"
    return "number"


@lru_cache(maxsize=4096)  # a catalog repeats a handful of type texts across thousands of columns
def normalize_type(native: str, dialect: str = "") -> NormalizedType:
    """One engine's type text -> a NormalizedType (``other`` when unknown)."""
    text = " ".join(native.strip().upper().split())
    if not text:
        return "other"
    if text.endswith("]") or text.startswith(("ARRAY<", "ARRAY(", "LIST<", "LIST(")):
        return "array"
    base, args = _split(text)
    if base in _EXACT_NUMERIC:
        if (len(args) == 2 and args[1] == "0") or (not args and base == "NUMBER" and dialect == "snowflake"):
            return "integer"
        return "number"
    found = _BY_NAME.get(base)
    if found is not None:
        return found
    if dialect == "sqlite":
        return _sqlite_affinity(base)
    return _BY_NAME.get(base.split(" ")[0], "other")


def _words(column_name: str) -> list[str]:
    return [word.lower() for word in _WORD_RE.findall(column_name)]


@lru_cache(maxsize=4096)
def _is_long_text(native: str) -> bool:
    base, args = _split(" ".join(native.strip().upper().split()))
    if base in _LONG_TEXT:
        return True
    return len(args) == 1 and args[0].isdigit() and 255 < int(args[0]) < 16_777_216


@lru_cache(maxsize=65536)  # column names repeat across a schema's tables (id, name, created_at, ...)
def dimension_type(normalized: NormalizedType, column_name: str, is_pk: bool = False, is_fk: bool = False,
                   *, native: str = "") -> DimensionType:
    """How an analyst would use the column: identifier, time, boolean, numeric, categorical, text or other.

    Keys and ``*_id`` names are identifiers unless they are dates or booleans; numbers named like codes
    (``zip``, ``status_code``, ``year``) are categorical; strings are categorical unless the type is
    declared long (CLOB, LONGTEXT, varchar over 255) or the name reads as prose (``description``, ``notes``).
    Unbounded ``text``/``STRING`` alone says nothing: it is every string in PostgreSQL and BigQuery.
    """
    if normalized in ("date", "timestamp", "time"):
        return "time"
    if normalized == "boolean":
        return "boolean"
    if is_pk or is_fk or normalized == "uuid" or _ID_RE.search(column_name.lower()) or _CAMEL_ID_RE.search(column_name):
        return "identifier"
    words = _words(column_name)
    if normalized in ("integer", "number", "interval"):
        return "categorical" if words and words[-1] in _CODE_WORDS else "numeric"
    if normalized == "string":
        if (native and _is_long_text(native)) or any(word in _PROSE_WORDS for word in words):
            return "text"
        return "categorical"
    return "other"


@lru_cache(maxsize=64)
def _patterns(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern, re.IGNORECASE))
        except re.error as exc:
            raise ConfigError(f"sample_values.sensitive_patterns: {pattern!r} is not a valid regex ({exc}); "
                              f"fix or remove it") from None
    return tuple(compiled)


def is_sensitive(column_name: str, native_type: str, policy: SamplePolicy, *, dialect: str = "") -> str | None:
    """Why a column must not be sampled (``secret-name``, ``sensitive-name``, ``binary``, ``sensitive-type``), or
    None. A name that says credential (khive.secretnames) is never sampled, whatever the policy lists."""
    if secret_name(column_name):
        return "secret-name"
    if any(pattern.search(column_name) for pattern in _patterns(tuple(policy.sensitive_patterns))):
        return "sensitive-name"
    normalized = normalize_type(native_type, dialect)
    if normalized == "binary":
        return "binary"
    base = _split(" ".join(native_type.strip().upper().split()))[0]
    if normalized in ("json", "array") or base in _UNSAMPLEABLE:
        return "sensitive-type"
    return None


def schema_selected(schema: str, schemas: SchemaFilter) -> bool:
    """Include globs (empty = all) then exclude globs; case-insensitive (Snowflake upper-cases names)."""
    name = schema.lower()
    if schemas.include and not any(fnmatch.fnmatchcase(name, glob.lower()) for glob in schemas.include):
        return False
    return not any(fnmatch.fnmatchcase(name, glob.lower()) for glob in schemas.exclude)


@lru_cache(maxsize=16384)  # a catalog repeats whole columns (id, created_at) across tables; a Column is frozen
def build_column(name: str, ordinal: int, native: str, dialect: str, *, nullable: bool = True,
                 default: str | None = None, primary_key: bool = False, is_fk: bool = False,
                 comment: str | None = None, normalized: NormalizedType | None = None) -> Column:
    kind = normalized or normalize_type(native, dialect)
    return Column(name=name, ordinal=ordinal, nativeType=native, normalizedType=kind,
                  dimensionType=dimension_type(kind, name, primary_key, is_fk, native=native), nullable=nullable,
                  default=default, primaryKey=primary_key, comment=comment or None)


def quote(identifier: str) -> str:
    """Double-quoted identifier (SQLite, DuckDB, PostgreSQL; transpiled for the warehouses)."""
    return '"' + identifier.replace('"', '""') + '"'


# ---- sampling -------------------------------------------------------------------------------------------------


def plan_sample(table: Table, policy: SamplePolicy, dialect: str) -> tuple[list[Column], list[ColumnSample]]:
    """Split a table's columns into those to sample and skipped samples (with the reason)."""
    sampled: list[Column] = []
    skipped: list[ColumnSample] = []
    if table.kind == "view" and not policy.views:  # stored relations only, unless the policy says otherwise
        return [], [ColumnSample(db=table.db, table=table.name, column=c.name, skipped="view") for c in table.columns]
    for column in table.columns:
        reason = is_sensitive(column.name, column.native_type, policy, dialect=dialect)
        if reason is None:
            sampled.append(column)
        else:
            skipped.append(ColumnSample(db=table.db, table=table.name, column=column.name, skipped=reason))
    return sampled, skipped


# Every query a scan sends to read user tables starts with this comment, so query-history readers (ours
# and anyone's) can tell khive's own sampling from what analysts run: pg_stat_statements, BigQuery jobs
# and Snowflake's query history keep leading comments.
SCAN_SQL_MARK = "/* khive:scan */"
# ... and what agents run through khive (sql.execute, sl.query) starts with this one, and probes with the
# last: historic_sql leaves all three out of "what analysts run" by default (filters.orchestrators.khive).
QUERY_SQL_MARK = "/* khive:query */"
PROBE_SQL_MARK = "/* khive:probe */"


def cast_text(expression: str) -> str:
    return f"CAST({expression} AS TEXT)"


def sample_sql(source: str, columns: Sequence[Column], policy: SamplePolicy, *, sample_clause: str = "",
               limit: bool = True, materialized: bool = True, as_text: Callable[[str], str] = cast_text) -> str:
    """One query for one table: rows ``(col, v, n, d, z, t)`` = column index, value as text, its count,
    distinct non-null values, nulls, sampled rows. Text-like values are grouped on their first
    max_text_length + 1 characters (enough to tell that a value was cut); numbers, dates and
    booleans are never cut. ``as_text`` gives a column's value as the text the database prints."""
    picks = ", ".join(f"{as_text(quote(column.name))} AS c{i}" for i, column in enumerate(columns))
    rows = f" LIMIT {policy.sample_rows}" if limit else ""
    keep = max(policy.max_values, 1)
    width = policy.max_text_length + 1

    def value(i: int, column: Column) -> str:
        return f"SUBSTR(c{i}, 1, {width})" if column.normalized_type in _TEXT_LIKE else f"c{i}"

    branches = [
        f"SELECT {i} AS col, v, n, d, z, t FROM ("
        f"SELECT v, n, COUNT(v) OVER () AS d, "
        f"CAST(SUM(CASE WHEN v IS NULL THEN n ELSE 0 END) OVER () AS BIGINT) AS z, "
        f"CAST(SUM(n) OVER () AS BIGINT) AS t, "
        f"ROW_NUMBER() OVER (ORDER BY CASE WHEN v IS NULL THEN 1 ELSE 0 END, n DESC, v) AS rk "
        f"FROM (SELECT {value(i, column)} AS v, COUNT(*) AS n FROM s GROUP BY 1) AS g{i}"
        f") AS r{i} WHERE rk <= {keep}"
        for i, column in enumerate(columns)
    ]
    cte = "AS MATERIALIZED" if materialized else "AS"
    return (f"{SCAN_SQL_MARK} WITH s {cte} (SELECT {picks} FROM {source}{sample_clause}{rows})\n"
            + "\nUNION ALL\n".join(branches))


def sample_percent(table: Table, policy: SamplePolicy) -> float | None:
    """Block sampling only pays on tables far larger than the sample (small ones: LIMIT reads little,
    and page sampling of a few pages is all-or-nothing): twice the wanted share, LIMIT keeps the rest."""
    rows = table.estimated_rows
    if table.kind not in ("table", "materialized_view") or not rows or rows <= 10 * policy.sample_rows:
        return None
    return 200.0 * policy.sample_rows / rows


_INTEGER_RE = re.compile(r"[+-]?\d+")
_REAL_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf")


def _sqlite_value(text: str) -> int | float | str:
    """SQLite types each value, not the column: an integer, a real or text, whatever the declaration says."""
    if _INTEGER_RE.fullmatch(text):
        return integer_text(text)
    return float_text(text) if _REAL_RE.fullmatch(text) else text


def _restore(value: str | bytes, column: Column, dialect: str, max_length: int) -> Any:
    """The text a sample query returns -> the JSON value a query would return for it (khive/values.py);
    long text is cut with an ellipsis."""
    if isinstance(value, bytes):  # text that is not UTF-8: shown as its bytes, about max_length characters
        return hex_text(value, max(max_length // 2, 1))
    normalized = column.normalized_type
    if normalized in _TEXT_LIKE:
        return value[:max_length] + "…" if len(value) > max_length else value
    if normalized == "boolean" and value.lower() in ("true", "t", "1", "false", "f", "0"):
        return value.lower() in ("true", "t", "1")
    if dialect == "sqlite":
        return _sqlite_value(value) if normalized in ("integer", "number") else value
    if normalized == "integer":
        return integer_text(value)
    if normalized == "number":
        base = _split(" ".join(column.native_type.strip().upper().split()))[0]
        return value if base in _EXACT_NUMERIC or base in _PRINTED_NUMBERS else float_text(value)
    if normalized in ("date", "timestamp"):
        return stamp_text(value)
    if normalized == "time":
        return time_text(value)
    if normalized == "interval" and dialect == "duckdb":
        return interval_text(value)
    return value


def read_sample(table: Table, columns: Sequence[Column], rows: Iterable[Sequence[Any]],
                policy: SamplePolicy, dialect: str = "") -> list[ColumnSample]:
    """Turn ``sample_sql`` rows into one ColumnSample per sampled column (in column order)."""
    found: dict[int, dict[str, Any]] = {}
    for col, value, count, distinct, nulls, total in rows:
        entry = found.setdefault(int(col), {"values": [], "counts": [], "distinct": int(distinct),
                                            "nulls": int(nulls), "total": int(total)})
        if value is not None and len(entry["values"]) < policy.max_values:
            entry["values"].append(_restore(value if isinstance(value, bytes) else str(value), columns[int(col)],
                                            dialect, policy.max_text_length))
            entry["counts"].append(int(count))
    samples = []
    for i, column in enumerate(columns):
        entry = found.get(i, {"values": [], "counts": [], "distinct": 0, "nulls": 0, "total": 0})
        samples.append(ColumnSample(db=table.db, table=table.name, column=column.name, values=tuple(entry["values"]),
                                    frequencies=tuple(entry["counts"]), distinct=entry["distinct"],
                                    nulls=entry["nulls"], sampledRows=entry["total"]))
    return samples


SampleRunner = Callable[[Table, list[Column]], Iterable[Sequence[Any]]]


def sample_tables(tables: Sequence[Table], policy: SamplePolicy, dialect: str, run: SampleRunner, *,
                  readable: Callable[[Table], Collection[str]] | None = None) -> list[ColumnSample]:
    """Sample each table with one ``run(table, columns)`` query; samples come back in column order.

    A table whose query times out or fails gets ``skipped="timeout"``/``"error"`` samples and the
    others go on; a lost connection (``connection_failed``) stops everything. A query refused for want of a
    privilege (SQLSTATE 42501), when the driver can say which columns the role may read (``readable``), is run
    again on those; the others get ``skipped="no-privilege"`` (a column-level grant, a table or schema the role
    cannot read).
    """
    if not policy.enabled:
        return []
    samples: list[ColumnSample] = []
    for table in tables:
        columns, found = plan_sample(table, policy, dialect)
        if columns:
            found += _sample_table(table, columns, policy, dialect, run, readable)
        position = {column.name: i for i, column in enumerate(table.columns)}
        samples.extend(sorted(found, key=lambda sample: position[sample.column]))
    return samples


NO_PRIVILEGE = "42501"  # SQLSTATE insufficient_privilege


def _sample_table(table: Table, columns: list[Column], policy: SamplePolicy, dialect: str, run: SampleRunner,
                  readable: Callable[[Table], Collection[str]] | None) -> list[ColumnSample]:
    try:
        return read_sample(table, columns, run(table, columns), policy, dialect)
    except KhiveError as exc:
        if exc.code in ("connection_failed", "driver_unavailable"):
            raise
        if readable is not None and exc.details.get("sqlstate") == NO_PRIVILEGE:
            allowed = set(readable(table))
            kept = [column for column in columns if column.name in allowed]
            denied = [ColumnSample(db=table.db, table=table.name, column=column.name, skipped="no-privilege")
                      for column in columns if column.name not in allowed]
            if denied:  # else the refusal was not about these columns: an error like any other
                return denied + (_sample_table(table, kept, policy, dialect, run, None) if kept else [])
        reason = "timeout" if exc.code == "statement_timeout" else "error"
        return [ColumnSample(db=table.db, table=table.name, column=c.name, skipped=reason) for c in columns]


# ---- query results -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadRows:
    rows: list[Any]
    unread: bool  # reading stopped before the end: the values read outgrew what the result can show


HELD_PER_RESULT_BYTE = 8  # what a driver may read per byte of JSON shown: far above any encoding's growth


def read_rows(rows: Iterable[Sequence[Any]], limit: int, shown: Shown) -> ReadRows:
    """At most limit + 1 of ``rows`` (a driver's lazy rows), stopping once the values read weigh
    ``HELD_PER_RESULT_BYTE`` times what the result can show (ADR 0053): a driver never holds gigabytes of text
    for an answer that shows a megabyte. ``query_result`` then cuts the values and the rows exactly."""
    kept: list[Any] = []
    held = 0
    ceiling = shown.result_bytes * HELD_PER_RESULT_BYTE
    for row in rows:
        kept.append(row)
        if len(kept) > limit:
            break
        held += sum(_held(value, shown.binary_bytes) for value in row)
        if held > ceiling:
            return ReadRows(kept, unread=True)
    return ReadRows(kept, unread=False)


READ_CHUNK = 64  # rows a driver fetches at a time where it reads in batches


def in_chunks(fetchmany: Callable[[int], list[Any]], size: int = READ_CHUNK) -> Iterator[Any]:
    """A result's rows, fetched ``size`` at a time."""
    while batch := fetchmany(size):
        yield from batch


def _held(value: Any, binary_bytes: int) -> int:
    """About what a loaded value holds until it is cut: text its whole length (all of it is in memory), bytes
    at most the part that will be shown (a long bytea would otherwise stop the reading after one row), nested
    values their text."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind is int or kind is float or value is None:
        return 8
    if isinstance(value, bytes | bytearray | memoryview):
        return min(len(value), binary_bytes)
    if isinstance(value, dict | list | tuple):
        return len(str(value))  # nested values may hold what orjson refuses (integers past 64 bits)
    return 16


def _over_note(shown_rows: int, row_size: int, cap: int) -> str:
    if not shown_rows:  # one value (an aggregate's array, a document) is over the cap by itself
        return (f"no row is shown: the first row alone is {row_size} bytes of JSON, over the result cap of {cap} "
                f"(max_bytes); select a part of its values (left(), a LIMIT inside the aggregate) or raise max_bytes")
    return (f"rows after the first {shown_rows} are not shown: the rows reached the result cap of {cap} bytes of "
            f"JSON (max_bytes); select fewer or narrower columns, aggregate, or raise max_bytes")


def query_result(columns: list[dict[str, str]], rows: Sequence[Sequence[Any]], limit: int, started: float,
                 notes: list[str] | None = None, *, converters: Sequence[Converter | None] | None = None,
                 shown: Shown = DEFAULT_SHOWN, unread: bool = False) -> QueryResult:
    """``rows`` holds at most limit + 1 rows; the extra one only says there were more (as does ``unread``: the
    driver stopped reading before the end). Rows leave here as JSON values by khive's value rule
    (``converters``, per column, for values a driver projected itself), long binary and text values cut and
    listed in the notes, and only as many rows as fit in ``shown.result_bytes`` of JSON (ADR 0053)."""
    encoder = Encoder(shown.binary_bytes, shown.text_chars)
    kept: list[list[Any]] = []
    size = 2  # the brackets of the rows' array
    over = False
    encode = encoder.row_encoder(columns, converters)
    row_size = 0
    for row in rows[:limit]:
        mark = encoder.mark()
        encoded = encode(row)
        row_size = len(orjson.dumps(encoded, option=orjson.OPT_PASSTHROUGH_DATETIME, default=str)) + 1
        size += row_size
        if size > shown.result_bytes:
            encoder.undo(mark)  # the notes speak of the rows shown
            over = True
            break
        kept.append(encoded)
    budget_notes = [_over_note(len(kept), row_size, shown.result_bytes)] if over else []
    if unread and not over:
        budget_notes.append(f"reading stopped at row {len(rows)}: the values read outgrew what a result of "
                            f"{shown.result_bytes} bytes can show; there may be more rows")
    return QueryResult(columns=columns, rows=kept, truncated=over or unread or len(rows) > limit,
                       row_count=len(kept), elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
                       notes=[*(notes or []), *encoder.notes(), *budget_notes])
