"""Semantic-layer sources: ``semantic-layer/<connection>/<name>.yaml``.

A source is one table (or SQL) at a declared grain with typed columns (dimensions), measures,
joins to other sources, segments (named filters), and an optional ``usage`` block that historic_sql
fills. Descriptions are keyed by origin and resolved by priority (user > db > ai).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlglot import exp
from sqlglot.errors import SqlglotError

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ColumnType = Literal["string", "number", "time", "boolean"]
Aggregation = Literal["sum", "count", "count_distinct", "avg", "min", "max", "median", "derived"]
Relationship = Literal["one_to_one", "many_to_one", "one_to_many"]
DESCRIPTION_PRIORITY = ("user", "db", "ai", "bootstrap")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(f"{value!r} is not a valid name: use letters, digits and _ (e.g. order_count)")
    return value


class Descriptions(_Model):
    user: str | None = None
    db: str | None = None
    ai: str | None = None
    bootstrap: str | None = None  # what sl.bootstrap guessed and why, for a reviewer to judge (ADR 0033)

    def resolved(self) -> str | None:
        origin = self.origin()
        return None if origin is None else str(getattr(self, origin))

    def origin(self) -> str | None:
        """Who wrote the description that applies (``DESCRIPTION_PRIORITY``), or None without one."""
        return next((origin for origin in DESCRIPTION_PRIORITY if getattr(self, origin)), None)


class Column(_Model):
    """A dimension: a column (or SQL expression) of the source that results can be grouped or filtered by."""

    name: str
    type: ColumnType = "string"
    expr: str | None = None  # SQL over the source's columns; default: the column of the same name
    descriptions: Descriptions = Field(default_factory=Descriptions)
    values: list[str] = Field(default_factory=list, description="known values, hints for filters")

    _check_name = field_validator("name")(classmethod(lambda cls, v: _name(v)))

    @property
    def sql(self) -> str:
        return self.expr or self.name


_AGGREGATE_CALLS: dict[type[exp.Expr], Aggregation] = {
    exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Median: "median"}
_DISTINCT = re.compile(r"distinct\s+", re.I)


def aggregate_call(expr: str) -> tuple[Aggregation, str | None] | None:
    """``(agg, the expression inside)`` when ``expr`` is one aggregate call (``count(*)``, ``sum(amount)``,
    ``count(distinct id)``), else None. The inner text is the author's own, not a re-rendering."""
    if "(" not in expr:  # no call at all: most measures (``amount``), and no parse needed to say so
        return None
    try:
        tree = sqlglot.parse_one(expr)
    except SqlglotError:
        return None
    agg = _AGGREGATE_CALLS.get(type(tree))
    if agg is None:
        return None
    inner = expr[expr.index("(") + 1: expr.rindex(")")].strip()
    if isinstance(tree.this, exp.Distinct):
        distinct = _DISTINCT.match(inner)
        return ("count_distinct", inner[distinct.end():].strip()) if agg == "count" and distinct else None
    if agg == "count" and isinstance(tree.this, exp.Star):
        return "count", None
    return agg, inner


class Measure(_Model):
    """A measure: ``agg`` over ``expr``. The form ``expr: count(*)`` (one aggregate call, no ``agg``) is read
    as ``agg: count``; ``expr: sum(amount)`` as ``agg: sum, expr: amount``."""

    name: str
    agg: Aggregation
    expr: str | None = None  # SQL over columns; for agg=derived, arithmetic over other measures' names
    description: str | None = None
    filter: str | None = None  # SQL predicate applied before aggregating (e.g. status = 'paid')

    _check_name = field_validator("name")(classmethod(lambda cls, v: _name(v)))

    @model_validator(mode="before")
    @classmethod
    def _aggregate_in_expr(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("expr"), str):
            return data
        expr, agg, name = data["expr"], data.get("agg"), data.get("name")
        call = aggregate_call(expr)
        if agg is None:
            if call is None:
                raise ValueError(f"measure {name!r} has no agg and its expr {expr!r} is not one aggregate call; "
                                 "fix: add agg: (sum, count, count_distinct, avg, min, max, median or derived) "
                                 "with expr: <column or expression>, or write expr as one call, e.g. count(*) "
                                 "or sum(amount)")
            return {**data, "agg": call[0], "expr": call[1]}
        if call is not None and agg != "derived":
            if call[0] != agg:
                raise ValueError(f"measure {name!r}: agg {agg} over expr {expr!r} nests two aggregates; fix: "
                                 f"drop agg: and keep expr: {expr}, or keep agg: {agg} with the expression inside")
            return {**data, "expr": call[1]}
        return data

    @model_validator(mode="after")
    def _expr_needed(self) -> Measure:
        if self.agg not in ("count",) and not self.expr:
            raise ValueError(f"measure {self.name!r}: agg {self.agg} needs an expr")
        return self

    @property
    def formula(self) -> str:
        """What the measure computes, as one line of SQL: ``count(*)``, ``sum(amount) filter (where ...)``."""
        if self.agg == "derived":
            text = self.expr or ""
        elif self.agg == "count_distinct":
            text = f"count(distinct {self.expr})"
        else:
            text = f"{self.agg}({self.expr or '*'})"
        return f"{text} filter (where {self.filter})" if self.filter and self.agg != "derived" else text


class JoinKey(_Model):
    from_: str = Field(alias="from")
    to: str


class Join(_Model):
    to: str  # another source of the same connection
    on: list[JoinKey] = Field(min_length=1)
    relationship: Relationship = "many_to_one"
    role: str | None = Field(default=None, description="names this join when a source joins the same source more "
                                                       "than once (e.g. original_language); a query picks it with "
                                                       "via=[role]")

    @field_validator("role")
    @classmethod
    def _role_name(cls, value: str | None) -> str | None:
        return None if value is None else _name(value)


class Segment(_Model):
    name: str
    filter: str
    description: str | None = None

    _check_name = field_validator("name")(classmethod(lambda cls, v: _name(v)))


class UsageJoin(_Model):
    """A table this source is commonly joined to, and on what (``orders.customer_id = customers.id`` as
    ``customer_id = id``): the shape historic_sql writes into the ``_schema`` shards too."""

    table: str
    on: list[str] = Field(default_factory=list)

    def text(self) -> str:
        return f"{self.table} on {', '.join(self.on)}" if self.on else self.table


def _join(value: object) -> object:
    """The text form sources held before joins had one shape (``public.customers on a = b``), as a join;
    the next ingest rewrites the file in the structured form."""
    if isinstance(value, str):
        table, _, on = value.partition(" on ")
        return {"table": table.strip(), "on": [part.strip() for part in on.split(",") if part.strip()]}
    return value


class Usage(_Model):
    """Written by historic_sql. Keys it does not write (a person's ``ownerNote``) are kept, never an error:
    a machine-managed block must not make a source invalid; the validator reports them as info."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    # camelCase: the block is written by historic_sql and keeps the payload's established names
    narrative: str | None = None
    frequencyTier: str | None = None
    commonFilters: list[str] = Field(default_factory=list)
    commonGroupBys: list[str] = Field(default_factory=list)
    commonJoins: list[UsageJoin] = Field(default_factory=list)
    staleSince: str | None = None

    @field_validator("commonJoins", mode="before")
    @classmethod
    def _joins(cls, value: object) -> object:
        return [_join(item) for item in value] if isinstance(value, list) else value


class Source(_Model):
    name: str
    aliases: list[str] = Field(default_factory=list, description="other names people use for it (discover.lookup)")
    descriptions: Descriptions = Field(default_factory=Descriptions)
    table: str | None = None  # schema.table in the connection
    sql: str | None = None  # or a SELECT defining the source
    grain: list[str] = Field(default_factory=list, description="columns that identify one row")
    columns: list[Column] = Field(default_factory=list)
    measures: list[Measure] = Field(default_factory=list)
    joins: list[Join] = Field(default_factory=list)
    segments: list[Segment] = Field(default_factory=list)
    usage: Usage | None = None

    _check_name = field_validator("name")(classmethod(lambda cls, v: _name(v)))

    @model_validator(mode="after")
    def _shape(self) -> Source:
        if (self.table is None) == (self.sql is None):
            raise ValueError(f"source {self.name!r} needs exactly one of table: or sql:")
        for kind, names in (("column", [c.name for c in self.columns]), ("measure", [m.name for m in self.measures]),
                            ("segment", [s.name for s in self.segments])):
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise ValueError(f"source {self.name!r} declares {kind}(s) {', '.join(duplicates)} more than once")
        roles = [j.role for j in self.joins if j.role is not None]
        repeated = sorted({r for r in roles if roles.count(r) > 1})
        if repeated:
            raise ValueError(f"source {self.name!r} names join role(s) {', '.join(repeated)} more than once; give "
                             "each join its own role")
        known = {c.name for c in self.columns}
        missing = [g for g in self.grain if g not in known]
        if missing:
            raise ValueError(f"grain column(s) {', '.join(missing)} of source {self.name!r} are not declared "
                             f"columns; declare them under columns:")
        return self

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def measure(self, name: str) -> Measure | None:
        return next((m for m in self.measures if m.name == name), None)
