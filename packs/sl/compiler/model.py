"""The compiler's vocabulary: the ad hoc measure a request may carry, the result, the error, SQL helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import sqlglot
from pydantic import BaseModel, ConfigDict, field_validator
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from khive.errors import OpError
from packs.sl.models import NAME_RE, Aggregation, Column, Measure, Source

TIME_GRAINS = ("day", "week", "month", "quarter", "year")


class CompileError(OpError):
    """A query the semantic layer cannot compile; ``code`` says why (unknown_name, ambiguous_join_path, ...)."""

    code = "compile_error"


class AdHocMeasure(BaseModel):
    """A measure defined in the request: ``expr`` over one source's columns (``source`` or qualified columns)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    agg: Aggregation
    expr: str | None = None
    source: str | None = None
    filter: str | None = None

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"{value!r} is not a valid measure name: use letters, digits and _")
        return value


@dataclass(frozen=True)
class Compiled:
    sql: str
    plan: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MeasureRef:
    """A measure as the query uses it: declared on a source or ad hoc."""

    source: str
    name: str
    agg: str
    expr: str | None
    filter: str | None
    adhoc: bool = False

    @property
    def qualified(self) -> str:
        return f"{self.source}.{self.name}"

    @classmethod
    def of(cls, source: str, measure: Measure) -> MeasureRef:
        return cls(source, measure.name, measure.agg, measure.expr, measure.filter)


@dataclass(frozen=True)
class DimRef:
    source: str
    column: Column
    output: str
    time_grain: str | None  # applied when the column is a time dimension and a grain was asked for

    @property
    def qualified(self) -> str:
        return f"{self.source}.{self.column.name}"


@dataclass(frozen=True)
class Predicate:
    """A filter or segment: its text, the parsed tree qualified to source aliases, the sources it reads."""

    kind: str  # "filter" | "segment"
    text: str
    tree: exp.Expr
    sources: frozenset[str]


# --- SQL helpers ----------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def _parsed(text: str, dialect: str) -> exp.Expr:
    return sqlglot.parse_one(text, dialect=dialect)


_NOT_EXPRESSIONS = (exp.Block, exp.Command, exp.DDL, exp.DML, exp.Query)


def parse_sql(text: str, dialect: str, *, what: str, query: bool = False) -> exp.Expr:
    """A fresh copy of ``text`` parsed in ``dialect``: one expression, or with ``query`` one SELECT.

    Anything else (a parse failure, several statements, a statement where an expression belongs)
    is a CompileError naming ``what``.
    """
    try:
        tree = _parsed(text, dialect)
    except (ParseError, TokenError) as exc:
        raise CompileError(f"{what}: {text!r} does not parse as {dialect} SQL ({str(exc).splitlines()[0]}); "
                           "fix the expression", code="invalid_sql", details={"what": what, "sql": text}) from exc
    wrong = not isinstance(tree, exp.Query) if query else isinstance(tree, _NOT_EXPRESSIONS)
    if wrong:
        wanted = "one SELECT" if query else "one SQL expression (no statements, no semicolons)"
        raise CompileError(f"{what}: {text!r} is not {wanted}", code="invalid_sql", details={"what": what, "sql": text})
    return tree.copy()


@cache  # per dialect, on first use: loading every dialect's module at import cost 0.1 s a process
def _reserved(dialect: str) -> frozenset[str]:
    """The dialect's reserved words, or DuckDB's (close to PostgreSQL's and SQL's) where sqlglot lists none."""
    own: set[str] = sqlglot.Dialect.get_or_raise(dialect).generator_class.RESERVED_KEYWORDS
    return frozenset(own or sqlglot.Dialect.get_or_raise("duckdb").generator_class.RESERVED_KEYWORDS)


def ident(name: str, dialect: str) -> exp.Identifier:
    """An identifier, quoted only when it is a reserved word (Snowflake: upper-cased, as it folds unquoted names)."""
    if name.lower() not in _reserved(dialect):
        return exp.Identifier(this=name, quoted=False)
    return exp.Identifier(this=name.upper() if dialect == "snowflake" and name.islower() else name, quoted=True)


def col(name: str, table: str | None, dialect: str) -> exp.Column:
    return exp.Column(this=ident(name, dialect), table=ident(table, dialect) if table else None)


def qualify(tree: exp.Expr, alias: str, dialect: str) -> exp.Expr:
    """Give every unqualified column of ``tree`` (outside subqueries) the table alias ``alias``."""
    for node in list(tree.find_all(exp.Column)):
        if not node.table and node.find_ancestor(exp.Select) is None:
            node.set("table", ident(alias, dialect))
    return tree


def column_sql(source: Source, name: str, dialect: str) -> exp.Expr:
    """A dimension's (or raw column's) expression over the source alias."""
    column = source.column(name)
    if column is None or column.expr is None:
        return col(name, source.name, dialect)
    return qualify(parse_sql(column.expr, dialect, what=f"column {source.name}.{name}"), source.name, dialect)


def bind(tree: exp.Expr, source: Source, dialect: str) -> exp.Expr:
    """``tree`` over one source: its columns (bare or ``source.``-qualified) replaced by their definitions."""
    for node in list(tree.find_all(exp.Column)):
        if node.find_ancestor(exp.Select) is not None or (node.table and node.table != source.name):
            continue
        replacement = column_sql(source, node.name, dialect)
        if node is tree:
            return replacement
        node.replace(replacement)
    return tree
