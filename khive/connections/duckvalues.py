"""DuckDB values by khive's value rule (khive/values.py): lossy columns are projected through text first.

DuckDB's Python conversion is silently wrong for some types: ``INTERVAL '1 month'`` arrives as 30
days, ``'infinity'::TIMESTAMP`` as 9999-12-31, ``'-infinity'::DATE`` as 0001-01-01, TIMESTAMP_NS and
TIME_NS lose their nanoseconds, FLOAT arrives widened (3.14 as 3.140000104904175). ``plan`` reads the
bound statement's types (nothing runs to get them) and, for every column holding such a type at any
depth, builds a server-side expression that casts only those leaves to VARCHAR, keeping lists,
structs, maps and unions around them, plus the converter that turns the text back into JSON values.
Columns are referenced by position (``#n``), so duplicate output names cannot collide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from duckdb.sqltypes import DuckDBPyType

from khive.values import (
    Converter,
    Encoder,
    float_text,
    integer_text,
    interval_text,
    json_text,
    stamp_text,
    time_text,
)

# type id -> what its VARCHAR text becomes (DECIMAL: exact either way, but DuckDB's text costs a tenth of a Decimal)
_AS_TEXT: dict[str, Callable[[str], Any]] = {
    "decimal": str,
    "interval": interval_text,
    "date": stamp_text,
    "timestamp": stamp_text,
    "timestamp_s": stamp_text,
    "timestamp_ms": stamp_text,
    "timestamp_ns": stamp_text,
    "timestamp with time zone": stamp_text,
    "time": time_text,
    "time_ns": time_text,
    "time with time zone": time_text,
    "float": float_text,
    "bignum": integer_text,
    "varint": integer_text,
}


@dataclass(frozen=True)
class _Plan:
    sql: Callable[[str], str] | None  # the expression over an input expression; None keeps the value
    convert: Converter | None  # None: Encoder.value reads the Python value exactly


def _generic(value: Any, encoder: Encoder, column: str) -> Any:
    return encoder.value(value, column)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _leaf(text_of: Callable[[str], Any]) -> _Plan:
    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        return text_of(value) if isinstance(value, str) else encoder.value(value, column)

    return _Plan(lambda expr: f"CAST({expr} AS VARCHAR)", convert)


def _list(child: _Plan, depth: int) -> _Plan:
    element = child.convert or _generic
    sql = None
    if child.sql is not None:
        inner = child.sql(f"x{depth}")
        sql = lambda expr: f"list_transform({expr}, lambda x{depth}: {inner})"  # noqa: E731

    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        return [None if item is None else element(item, encoder, column) for item in value]

    return _Plan(sql, convert)


def _struct(fields: Sequence[tuple[str, _Plan]]) -> _Plan:
    def sql(expr: str) -> str:
        packed = ", ".join(f"{_ident(name)} := " + (plan.sql or str)(f"struct_extract({expr}, {_literal(name)})")
                           for name, plan in fields)
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct_pack({packed}) END"

    converters = {name: plan.convert or _generic for name, plan in fields}

    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        return {name: None if item is None else converters[name](item, encoder, column)
                for name, item in value.items()}

    return _Plan(sql if any(plan.sql is not None for _, plan in fields) else None, convert)


def _map(key: _Plan, item: _Plan, depth: int) -> _Plan:
    """Always projected to its entries: DuckDB hands maps with list keys over as {"key": [...], "value": [...]},
    which a map with the keys 'key' and 'value' would look like too."""
    entry = f"e{depth}"
    key_sql = (key.sql or str)(f"{entry}.key")
    item_sql = (item.sql or str)(f"{entry}.value")
    key_convert, item_convert = key.convert or _generic, item.convert or _generic

    def sql(expr: str) -> str:
        if key.sql is None and item.sql is None:
            return f"map_entries({expr})"
        return f"list_transform(map_entries({expr}), lambda {entry}: {{'key': {key_sql}, 'value': {item_sql}}})"

    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        pairs = [(key_convert(pair["key"], encoder, column),
                  None if pair["value"] is None else item_convert(pair["value"], encoder, column)) for pair in value]
        return encoder.mapping(pairs, column)

    return _Plan(sql, convert)


def _union(members: Sequence[tuple[str, _Plan]]) -> _Plan:
    """A union whose members need converting: projected to its tag plus each member, then the tagged member."""
    if all(plan.sql is None and plan.convert is None for _, plan in members):
        return _Plan(None, None)  # Python hands over the member's value, exactly

    def sql(expr: str) -> str:
        packed = ", ".join(f"m{index} := " + (plan.sql or str)(f"union_extract({expr}, {_literal(name)})")
                           for index, (name, plan) in enumerate(members))
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct_pack(tag := union_tag({expr}), {packed}) END"

    index_of = {name: index for index, (name, _) in enumerate(members)}

    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        index = index_of[value["tag"]]
        item = value[f"m{index}"]
        return None if item is None else (members[index][1].convert or _generic)(item, encoder, column)

    return _Plan(sql, convert)


def _children(kind: DuckDBPyType) -> list[tuple[str, DuckDBPyType]]:
    """A nested type's typed children (an ARRAY also lists its size, which is no type)."""
    return [(str(name), child) for name, child in kind.children if isinstance(child, DuckDBPyType)]


def _plan(kind: DuckDBPyType, depth: int = 0) -> _Plan:
    type_id = kind.id
    if type_id in _AS_TEXT:
        return _leaf(_AS_TEXT[type_id])
    if str(kind) == "JSON":
        return _Plan(None, lambda value, encoder, column: json_text(value) if isinstance(value, str)
                     else encoder.value(value, column))
    if type_id in ("list", "array"):
        child = _plan(dict(_children(kind))["child"], depth + 1)
        return _list(child, depth) if child.sql is not None or child.convert is not None else _Plan(None, None)
    if type_id == "struct":
        fields = [(name, _plan(child, depth + 1)) for name, child in _children(kind)]
        if any(not name for name, _ in fields):  # an unnamed ROW: kept whole, encoded as a list of its fields
            return _Plan(None, None)
        return _struct(fields)
    if type_id == "map":
        children = dict(_children(kind))
        return _map(_plan(children["key"], depth + 1), _plan(children["value"], depth + 1), depth)
    if type_id == "union":
        return _union([(name, _plan(child, depth + 1)) for name, child in _children(kind) if name])
    return _Plan(None, None)


@dataclass(frozen=True)
class Projection:
    """What runs (``sql``: the statement itself when no column needs a projection) and how each column converts."""

    sql: str
    converters: list[Converter | None]


def project(sql: str, types: Sequence[DuckDBPyType]) -> Projection:
    plans = [_plan(kind) for kind in types]
    converters = [plan.convert for plan in plans]
    if all(plan.sql is None for plan in plans):
        return Projection(sql, converters)
    picks = ", ".join((plan.sql or str)(f"#{index}") for index, plan in enumerate(plans, start=1))
    inner = sql.strip().rstrip(";")  # on lines of its own: a trailing -- comment cannot swallow the parenthesis
    return Projection(f"SELECT {picks} FROM (\n{inner}\n) AS khive_values", converters)
