"""Render a ``Plan`` as one SELECT in the connection's dialect, built as a sqlglot tree.

Every source is aliased by its name; joins from the measure's side outwards are LEFT JOINs, so
a measure row without a match keeps its value under a NULL dimension. Internal columns are
``__k<crossing>_<n>`` (join keys) and ``__<measure>_<part>`` (partial aggregates); CTEs are
``<source>__agg`` / ``__pre`` / ``__bridge_<source>`` and ``__spine``. Division in derived measures
is true division in every dialect (PostgreSQL and SQLite get a cast where ``/`` would truncate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from sqlglot import exp

from khive.errors import quoted
from packs.sl.compiler.graph import Edge
from packs.sl.compiler.model import CompileError, DimRef, MeasureRef, bind, col, column_sql, ident, parse_sql
from packs.sl.compiler.planner import Group, Plan
from packs.sl.compiler.resolve import Catalog
from packs.sl.tableref import parse_table

_SQLITE_TRUNC = {
    "day": "DATE(__x__)",
    "week": "DATE(__x__, '-6 days', 'weekday 1')",
    "month": "DATE(__x__, 'start of month')",
    "quarter": "DATE(__x__, 'start of month', '-' || ((CAST(STRFTIME('%m', __x__) AS INTEGER) - 1) % 3) || ' months')",
    "year": "DATE(__x__, 'start of year')",
}


_NO_MEDIAN = frozenset({"sqlite", "bigquery", "mysql"})  # MariaDB's MEDIAN is a window function only


@lru_cache(maxsize=1024)
def _table_template(name: str, dialect: str) -> exp.Table:
    table = parse_table(name, dialect)
    if table is None:
        raise CompileError(f"table: {quoted(name)} is not a table reference in {dialect}; quote a part that holds "
                           'dots, quotes or spaces (table: "my schema"."my.table"); sl.bootstrap writes it so',
                           code="invalid_source", details={"table": name})
    return table


def _alias(expression: exp.Expr, alias: exp.Identifier) -> exp.Alias:
    return exp.Alias(this=expression, alias=alias)


def _join(query: exp.Select, table: exp.Expr, on: Sequence[exp.Expr] | None) -> None:
    """``LEFT JOIN table ON a AND b ...``, or ``CROSS JOIN table`` without conditions."""
    if on is None:
        query.append("joins", exp.Join(this=table, kind="CROSS"))
        return
    condition: exp.Expr = on[0]
    for more in on[1:]:
        condition = exp.And(this=condition, expression=more)
    query.append("joins", exp.Join(this=table, on=condition, side="LEFT"))


class SqlBuilder:
    def __init__(self, plan: Plan, catalog: Catalog):
        self.plan = plan
        self.catalog = catalog
        self.dialect = plan.dialect
        self.ctes: list[tuple[str, exp.Query]] = []

    def build(self) -> str:
        if len(self.plan.groups) == 1:
            query = self._group(self.plan.groups[0])
        else:
            for group in self.plan.groups:
                self.ctes.append((group.cte, self._group(group)))
            query = self._combine()
        if self.plan.order_by:
            query.order_by(*(exp.Ordered(this=col(name, None, self.dialect), desc=desc)
                             for name, desc in self.plan.order_by), copy=False)
        if self.plan.limit is not None:
            query.limit(self.plan.limit, copy=False)
        if self.ctes:
            query.set("with_", exp.With(expressions=[
                exp.CTE(this=body, alias=exp.TableAlias(this=ident(name, self.dialect))) for name, body in self.ctes]))
        return query.sql(dialect=self.dialect, pretty=True)

    # --- one measure source -----------------------------------------------------------------------

    def _group(self, group: Group) -> exp.Select:
        if not group.crossings:
            return self._flat(group)
        return self._pre_aggregated(group)

    def _flat(self, group: Group) -> exp.Select:
        dims = [self._dim(d) for d in self.plan.dims]
        query = self._from(group, group.tree.nodes)
        query.select(*(_alias(e, ident(d.output, self.dialect)) for d, e in zip(self.plan.dims, dims, strict=True)),
                     copy=False)
        query.select(*(self._measure_column(m, self._aggregate) for m in group.measures), copy=False)
        self._where(query)
        if dims:
            query.group_by(*(e.copy() for e in dims), copy=False)
        return query

    def _pre_aggregated(self, group: Group) -> exp.Select:
        own = group.own_side
        own_dims = [d for d in self.plan.dims if d.source in own]
        pre_name = f"{group.source}__pre"
        pre = self._from(group, own)
        grain: list[exp.Expr] = []
        for dim in own_dims:
            grain.append(self._dim(dim))
            pre.select(_alias(grain[-1].copy(), ident(dim.output, self.dialect)), copy=False)
        keys: dict[int, list[str]] = {}  # crossing index -> key column names
        for index, edge in enumerate(group.crossings):
            keys[index] = [f"__k{index}_{n}" for n in range(len(edge.keys))]
            for name, (left, _) in zip(keys[index], edge.keys, strict=True):
                grain.append(column_sql(self.catalog.sources[edge.left], left, self.dialect))
                pre.select(_alias(grain[-1].copy(), ident(name, self.dialect)), copy=False)
        for base in group.base:
            for part, expression in self._partials(base):
                pre.select(_alias(expression, ident(part, self.dialect)), copy=False)
        self._where(pre)
        if grain:
            pre.group_by(*grain, copy=False)
        self.ctes.append((pre_name, pre))

        query = exp.select(copy=False).from_(self._cte_ref(pre_name), copy=False)
        final_dims: list[exp.Expr] = []
        for index, edge in enumerate(group.crossings):
            bridge_name = f"{group.source}__bridge_{edge.right}"
            self.ctes.append((bridge_name, self._bridge(group, edge, keys[index])))
            on = [exp.EQ(this=col(k, pre_name, self.dialect), expression=col(k, bridge_name, self.dialect))
                  for k in keys[index]]
            _join(query, self._cte_ref(bridge_name), on)
        for dim in self.plan.dims:
            holder = pre_name if dim.source in own else f"{group.source}__bridge_{self._crossing_of(group, dim)}"
            final_dims.append(col(dim.output, holder, self.dialect))
            query.select(_alias(final_dims[-1].copy(), ident(dim.output, self.dialect)), copy=False)
        query.select(*(self._measure_column(m, lambda b: self._reaggregate(b, pre_name)) for m in group.measures),
                     copy=False)
        if final_dims:
            query.group_by(*final_dims, copy=False)
        return query

    def _bridge(self, group: Group, edge: Edge, key_names: list[str]) -> exp.Select:
        nodes = group.tree.subtree(edge.right)
        bridge = self._from(group, nodes, root=edge.right).distinct(copy=False)
        for name, (_, right) in zip(key_names, edge.keys, strict=True):
            key = column_sql(self.catalog.sources[edge.right], right, self.dialect)
            bridge.select(_alias(key, ident(name, self.dialect)), copy=False)
        for dim in self.plan.dims:
            if dim.source in nodes:
                bridge.select(_alias(self._dim(dim), ident(dim.output, self.dialect)), copy=False)
        return bridge

    def _crossing_of(self, group: Group, dim: DimRef) -> str:
        return next(e.right for e in group.crossings if dim.source in group.tree.subtree(e.right))

    # --- combining groups -------------------------------------------------------------------------

    def _combine(self) -> exp.Select:
        groups = self.plan.groups
        if not self.plan.dims:
            query = exp.select(copy=False).from_(self._cte_ref(groups[0].cte), copy=False)
            for group in groups[1:]:
                _join(query, self._cte_ref(group.cte), None)
        else:
            spine: exp.Query = self._dims_of(groups[0].cte)
            for group in groups[1:]:
                spine = exp.union(spine, self._dims_of(group.cte), distinct=True, copy=False)
            self.ctes.append(("__spine", spine))
            query = exp.select(*(_alias(col(d.output, "__spine", self.dialect), ident(d.output, self.dialect))
                                 for d in self.plan.dims), copy=False).from_(self._cte_ref("__spine"), copy=False)
            for group in groups:
                on = [exp.NullSafeEQ(this=col(d.output, "__spine", self.dialect),
                                     expression=col(d.output, group.cte, self.dialect)) for d in self.plan.dims]
                _join(query, self._cte_ref(group.cte), on)
        for group in groups:
            for measure in group.measures:
                output = self.plan.outputs[measure.qualified]
                query.select(_alias(col(output, group.cte, self.dialect), ident(output, self.dialect)),
                             copy=False)
        return query

    def _dims_of(self, cte: str) -> exp.Select:
        return exp.select(*(col(d.output, None, self.dialect) for d in self.plan.dims),
                          copy=False).from_(self._cte_ref(cte), copy=False)

    # --- pieces -----------------------------------------------------------------------------------

    def _from(self, group: Group, nodes: list[str], root: str | None = None) -> exp.Select:
        """``FROM root LEFT JOIN ...`` over the tree edges among ``nodes``, parents before children."""
        start = root or group.tree.root
        query = exp.select(copy=False).from_(self._table(start), copy=False)
        pending = [start]
        while pending:
            node = pending.pop(0)
            for edge in group.tree.children(node):
                if edge.right not in nodes:
                    continue
                left, right = self.catalog.sources[edge.left], self.catalog.sources[edge.right]
                on = [exp.EQ(this=column_sql(left, a, self.dialect), expression=column_sql(right, b, self.dialect))
                      for a, b in edge.keys]
                _join(query, self._table(edge.right), on)
                pending.append(edge.right)
        return query

    def _cte_ref(self, name: str) -> exp.Table:
        return exp.Table(this=ident(name, self.dialect))

    def _table(self, name: str) -> exp.Expr:
        source = self.catalog.sources[name]
        alias = exp.TableAlias(this=ident(name, self.dialect))
        if source.table is not None:
            table = _table_template(source.table, self.dialect).copy()
            if table.db or table.name != name:
                table.set("alias", alias)
            return table
        body = parse_sql(source.sql or "", self.dialect, what=f"sql of source {name}", query=True)
        return exp.Subquery(this=body, alias=alias)

    def _where(self, query: exp.Select) -> None:
        if self.plan.predicates:
            query.where(*(p.tree.copy() for p in self.plan.predicates), copy=False)

    def _dim(self, dim: DimRef) -> exp.Expr:
        expression = column_sql(self.catalog.sources[dim.source], dim.column.name, self.dialect)
        if dim.time_grain is None:
            return expression
        if self.dialect == "sqlite":
            template = parse_sql(_SQLITE_TRUNC[dim.time_grain], "sqlite", what="time grain")
            for node in list(template.find_all(exp.Column)):
                node.replace(expression.copy())
            return template
        unit = "ISOWEEK" if dim.time_grain == "week" and self.dialect == "bigquery" else dim.time_grain.upper()
        return exp.DateTrunc(this=expression, unit=exp.var(unit))  # type: ignore[no-untyped-call]  # sqlglot's __init__

    def _measure_column(self, measure: MeasureRef, final: Callable[[MeasureRef], exp.Expr]) -> exp.Expr:
        output = ident(self.plan.outputs[measure.qualified], self.dialect)
        return _alias(self._measure_expr(measure, final), output)

    def _measure_expr(self, measure: MeasureRef, final: Callable[[MeasureRef], exp.Expr]) -> exp.Expr:
        if measure.agg != "derived":
            return final(measure)
        tree = parse_sql(measure.expr or "", self.dialect, what=f"derived measure {measure.qualified}")
        for division in tree.find_all(exp.Div):
            division.set("typed", False)  # true division: sqlglot casts where the dialect would truncate integers
        for node in list(tree.find_all(exp.Column)):
            inner = self._measure_expr(self.catalog.measure_of(measure.source, node.name), final)
            if not isinstance(inner, (exp.Func, exp.Column, exp.Literal, exp.Paren)):
                inner = exp.Paren(this=inner)
            if node is tree:
                return inner
            node.replace(inner)
        return tree

    def _value(self, measure: MeasureRef) -> exp.Expr:
        """The measure's argument over its source, its filter folded in as CASE WHEN filter THEN value END."""
        what = f"measure {measure.qualified}"
        source = self.catalog.sources[measure.source]
        value = parse_sql(measure.expr, self.dialect, what=what) if measure.expr else None
        condition = parse_sql(measure.filter, self.dialect, what=what) if measure.filter else None
        for tree in (value, condition):
            strange = sorted({c.table for c in tree.find_all(exp.Column) if c.table and c.table != source.name}
                             if tree is not None else ())
            if strange:
                raise CompileError(f"{what} reads {', '.join(strange)}; a measure's expr and filter read only its own "
                                   f"source ({measure.source})", code="invalid_measure")
        bound: exp.Expr = bind(value, source, self.dialect) if value is not None else (
            exp.Literal.number(1) if condition is not None else exp.Star())
        if condition is not None:
            bound = exp.Case(ifs=[exp.If(this=bind(condition, source, self.dialect), true=bound)])
        return bound

    def _aggregate(self, measure: MeasureRef) -> exp.Expr:
        value = self._value(measure)
        agg = measure.agg
        if agg == "sum":
            return exp.Sum(this=value)
        if agg == "count":
            return exp.Count(this=value)
        if agg == "count_distinct":
            return exp.Count(this=exp.Distinct(expressions=[value]))
        if agg == "avg":
            return exp.Avg(this=value)
        if agg == "min":
            return exp.Min(this=value)
        if agg == "max":
            return exp.Max(this=value)
        if agg == "median":
            if self.dialect in _NO_MEDIAN:
                raise CompileError(f"measure {measure.qualified}: {self.dialect} has no exact median aggregate; use "
                                   "an avg or min/max measure there", code="unsupported_aggregate")
            return exp.Median(this=value)
        raise CompileError(f"measure {measure.qualified}: unknown agg {agg!r}", code="invalid_measure")

    def _partials(self, measure: MeasureRef) -> list[tuple[str, exp.Expr]]:
        if measure.agg == "avg":
            value = self._value(measure)
            return [(f"__{measure.name}_sum", exp.Sum(this=value)),
                    (f"__{measure.name}_count", exp.Count(this=value.copy()))]
        return [(f"__{measure.name}_{measure.agg}", self._aggregate(measure))]

    def _reaggregate(self, measure: MeasureRef, pre: str) -> exp.Expr:
        def part(suffix: str) -> exp.Column:
            return col(f"__{measure.name}_{suffix}", pre, self.dialect)

        if measure.agg == "avg":
            total = exp.Cast(this=exp.Sum(this=part("sum")), to=exp.DataType(this=exp.DataType.Type.DOUBLE))
            return exp.Div(this=total, expression=exp.Nullif(this=exp.Sum(this=part("count")),
                                                             expression=exp.Literal.number(0)))
        if measure.agg in ("sum", "count"):
            return exp.Sum(this=part(measure.agg))
        if measure.agg == "min":
            return exp.Min(this=part("min"))
        return exp.Max(this=part("max"))
