"""The one place historic_sql uses sqlglot's private API (``Scope._raw_columns``, behind ``own_columns``).

A new sqlglot that renames the attribute or changes what it holds fails here, by name, rather than as
wrong usage figures.
"""

from __future__ import annotations

import sqlglot
from sqlglot.optimizer.scope import traverse_scope

from packs.historic_sql.analyze import own_columns

SQL = """
SELECT o.status AS state, count(*) AS n, o.*
FROM sales.orders AS o
WHERE o.total > 10
  AND EXISTS (SELECT 1 FROM sales.refunds AS r WHERE r.order_id = o.id)
GROUP BY state
ORDER BY n
"""


def columns_by_scope(sql: str) -> list[list[str]]:
    return [sorted(column.sql() for column in own_columns(scope))
            for scope in traverse_scope(sqlglot.parse_one(sql, read="postgres"))]


def test_each_scope_lists_its_own_columns_alias_references_included_stars_and_children_excluded() -> None:
    inner, outer = columns_by_scope(SQL)
    assert inner == ["o.id", "r.order_id"]  # the correlated o.id belongs to the subquery's own scope
    # the outer scope: its own columns and alias references (state, n), never the subquery's o.id, never o.*
    assert outer == ["n", "o.status", "o.total", "state"]


def test_a_scope_without_columns_lists_none() -> None:
    assert columns_by_scope("SELECT count(*) FROM sales.orders") == [[]]
