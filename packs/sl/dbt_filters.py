"""Translate MetricFlow's Jinja filters into plain SQL over one source's columns.

``{{ Dimension('order__is_food_order') }} = true`` becomes ``is_food_order = true`` when the
dimension belongs to the semantic model being filtered (reached through one of its own entities);
a reference through a foreign entity, a multi-hop path, a coarser time grain or a ``Metric(...)``
cannot be expressed as a predicate on one source and raises ``Untranslatable`` with the reason.
The Jinja call is read with ``ast`` (it is Python call syntax), never evaluated.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GRANULARITIES = frozenset({"nanosecond", "microsecond", "millisecond", "second", "minute", "hour", "day", "week",
                           "month", "quarter", "year"})
_JINJA_RE = re.compile(r"\{\{(.*?)\}\}", re.S)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?\Z")


class Untranslatable(Exception):
    """A filter that is not a predicate over the source's own columns; the message says why."""


@dataclass(frozen=True, slots=True)
class FilterScope:
    """What a filter on one semantic model may refer to."""

    model: str
    own_entities: frozenset[str]  # entities whose dimensions live on this model (primary, unique, natural)
    entity_sql: Mapping[str, str]  # every entity of the model -> SQL
    dimensions: Mapping[str, tuple[str, str | None]]  # dimension -> (SQL, time granularity)
    time_dimension: str | None  # what metric_time means for the measure being filtered
    homes: Mapping[tuple[str, str], str]  # (entity, dimension) -> the semantic model holding it (for messages)


@dataclass(frozen=True, slots=True)
class _Call:
    function: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    methods: tuple[tuple[str, tuple[Any, ...]], ...]


def translate(template: str, scope: FilterScope) -> str:
    """The SQL predicate for ``template``, or Untranslatable."""
    if "{%" in template:
        raise Untranslatable("Jinja statements ({% ... %}) are not supported in filters")
    return _JINJA_RE.sub(lambda match: _parenthesize(_resolve(_parse(match[1]), scope)), template).strip()


def combine(predicates: list[str]) -> str | None:
    """AND several predicates (each parenthesized when there is more than one)."""
    parts = [p for p in dict.fromkeys(predicates) if p]
    if len(parts) <= 1:
        return parts[0] if parts else None
    return " AND ".join(f"({part})" for part in parts)


def _parenthesize(sql: str) -> str:
    return sql if _IDENT_RE.match(sql) else f"({sql})"


def _parse(text: str) -> _Call:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise Untranslatable(f"cannot read {{{{{text}}}}}") from None
    methods: list[tuple[str, tuple[Any, ...]]] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        methods.insert(0, (node.func.attr, tuple(_literal(arg) for arg in node.args)))
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise Untranslatable(f"{{{{{text.strip()}}}}} is not a Dimension/TimeDimension/Entity reference")
    kwargs = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg}
    return _Call(node.func.id, tuple(_literal(arg) for arg in node.args), kwargs, tuple(methods))


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise Untranslatable(f"{ast.unparse(node)} is not a literal") from None


def _resolve(call: _Call, scope: FilterScope) -> str:
    if not call.args or not isinstance(call.args[0], str):
        raise Untranslatable(f"{call.function}() needs a name")
    name = call.args[0]
    if call.kwargs.get("entity_path"):
        raise Untranslatable(f"{name} with entity_path={call.kwargs['entity_path']} is a multi-hop join")
    if call.function == "Entity":
        if name not in scope.entity_sql:
            raise Untranslatable(f"entity {name} is not an entity of semantic model {scope.model}")
        return scope.entity_sql[name]
    if call.function not in ("Dimension", "TimeDimension"):
        raise Untranslatable(f"{call.function}(...) references are not supported in filters")
    grain = _grain(call)
    parts = name.split("__")
    if len(parts) > 1 and parts[-1] in GRANULARITIES:
        grain, parts = grain or parts[-1], parts[:-1]
    if parts == ["metric_time"]:
        if scope.time_dimension is None:
            raise Untranslatable(f"metric_time: semantic model {scope.model} declares no agg_time_dimension")
        parts = [scope.time_dimension]
    if len(parts) > 2:
        raise Untranslatable(f"{name} goes through {len(parts) - 1} entities (a multi-hop join)")
    if len(parts) == 2 and parts[0] not in scope.own_entities:
        entity, dimension = parts
        if entity in scope.entity_sql:
            home = scope.homes.get((entity, dimension), "another semantic model")
            raise Untranslatable(f"{name} is dimension {dimension} of {home}, reached by a join on entity {entity}; "
                                 "a measure filter sees its own source's columns only")
        raise Untranslatable(f"{name}: {entity} is not an entity of semantic model {scope.model}")
    dimension = parts[-1]
    if dimension not in scope.dimensions:
        raise Untranslatable(f"{name}: {dimension} is not a dimension of semantic model {scope.model}")
    sql, declared = scope.dimensions[dimension]
    if grain and grain != (declared or grain):
        raise Untranslatable(f"{name} at {grain} grain truncates {dimension} (declared {declared}); "
                             "khive filters compare the column as it is")
    if grain and declared is None:
        raise Untranslatable(f"{name}: a grain applies to time dimensions only")
    return sql


def _grain(call: _Call) -> str | None:
    grain = call.kwargs.get("time_granularity_name") or call.kwargs.get("grain")
    if call.function == "TimeDimension" and len(call.args) > 1:
        grain = call.args[1]
    if call.kwargs.get("date_part_name"):
        raise Untranslatable(f"{call.args[0]} with date_part_name is not supported")
    for method, args in call.methods:
        if method == "grain" and args:
            grain = args[0]
        elif method == "date_part":
            raise Untranslatable(f"{call.args[0]}.date_part(...) is not supported")
        elif method != "descending":
            raise Untranslatable(f"{call.args[0]}.{method}(...) is not supported")
    return str(grain).lower() if grain else None
