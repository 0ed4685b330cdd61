"""What the batch parse learns about one template: tables, columns by clause, join pairs.

Every table name is a catalog key (``schema.name``, or ``catalog.schema.name`` when the connection's
scan spans several catalogs); tables the scan does not know stay as written in ``unknown_tables`` and
take no part in bucketing. Tuples are sorted and unique, so two parses of the same template compare
(and serialize) equal whatever process produced them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

Clause = Literal["select", "where", "join", "groupBy", "orderBy", "having"]
CLAUSES: tuple[Clause, ...] = ("select", "where", "join", "groupBy", "orderBy", "having")


class ColumnUse(NamedTuple):
    table: str
    clause: str  # one of CLAUSES
    column: str


class JoinEdge(NamedTuple):
    """An equality between columns of two tables (or two aliases of one); ``left`` sorts first."""

    left_table: str
    left_column: str
    right_table: str
    right_column: str

    @classmethod
    def of(cls, a: tuple[str, str], b: tuple[str, str]) -> JoinEdge:
        (lt, lc), (rt, rc) = sorted((a, b))
        return cls(lt, lc, rt, rc)


@dataclass(frozen=True, slots=True)
class ParsedTemplate:
    template_id: str
    tables: tuple[str, ...] = ()
    unknown_tables: tuple[str, ...] = ()
    columns: tuple[ColumnUse, ...] = ()
    joins: tuple[JoinEdge, ...] = ()
    error: str | None = None  # set when sqlglot could not parse or scope the template

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> list[Any]:
        """A compact, positional form for the parse cache."""
        return [self.template_id, list(self.tables), list(self.unknown_tables),
                [list(c) for c in self.columns], [list(j) for j in self.joins], self.error]

    @classmethod
    def from_json(cls, data: list[Any]) -> ParsedTemplate:
        template_id, tables, unknown, columns, joins, error = data
        return cls(template_id, tuple(tables), tuple(unknown), tuple(ColumnUse(*c) for c in columns),
                   tuple(JoinEdge(*j) for j in joins), error)
