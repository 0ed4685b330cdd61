"""One template in, one ``ParsedTemplate`` out: sqlglot's parser and scope builder plus the scan catalog.

Tables are found per scope (``sqlglot.optimizer.scope``), so a CTE name or a derived table's alias is
never mistaken for a table. Each column is resolved the way sqlglot's ``qualify_columns`` would:

* a qualifier names a source of the scope (table alias, table name, CTE or derived table), or of an
  enclosing scope for a correlated subquery;
* an unqualified name belongs to the one selected source whose catalog columns (or, for a CTE or
  derived table, whose output names) contain it, or to the one source that cannot tell (a table the
  scan does not know); a name a ``USING`` join merged belongs to its left-most source; otherwise to an
  enclosing scope, or nowhere: ambiguous names and names the catalog does not have are dropped, never
  guessed (a stale catalog heals with the next scan, whose new fingerprint re-parses everything);
* a column of a CTE or derived table is followed through the projection that produced it when that
  projection is a plain column, so usage lands on the base table;
* an unqualified ``ORDER BY``/``GROUP BY``/``HAVING`` name that is an output alias is not a column.

Why not call ``qualify`` itself: it rewrites the whole tree (normalize identifiers, qualify tables,
expand stars and alias references, quote) and costs two to three parses per template, which makes the
batch parse slower than a bare single-process parse even on two cores (bench/historic_sql.py). This
module reads the same scopes without rewriting anything; tests check it agrees with ``qualify`` on
the column-to-table attribution. Stars are not expanded (usage counts what people wrote).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.optimizer.scope import Scope, traverse_scope

from packs.historic_sql.catalog import Catalog, CatalogTable
from packs.historic_sql.parsed import ColumnUse, JoinEdge, ParsedTemplate, join_edge

# select.args key -> clause name; "from_"/"with_" hold sources and CTEs, handled through scopes
CLAUSE_OF = {"expressions": "select", "distinct": "select", "where": "where", "joins": "join", "group": "groupBy",
             "having": "having", "qualify": "where", "order": "orderBy"}
ALIAS_CLAUSES = frozenset({"groupBy", "having", "orderBy"})
MAX_ERROR = 300
_AMBIGUOUS = object()
_MISSING = object()

Ref = tuple[str, str, int]  # (table key, column, id of the exp.Table the column came through)


def _unwrap(node: exp.Expr) -> exp.Expr:
    while isinstance(node, (exp.Paren, exp.Cast)):
        node = node.this
    return node


class _Analysis:
    def __init__(self, catalog: Catalog, search_path: Sequence[str]) -> None:
        self.catalog = catalog
        self.search_path = tuple(search_path)
        self.tables: dict[int, CatalogTable | None] = {}  # id(exp.Table) -> catalog entry
        self.unknown: set[str] = set()
        self.uses: set[ColumnUse] = set()
        self.joins: set[JoinEdge] = set()
        self.outputs: dict[tuple[int, str], Ref | None] = {}
        self.refs: dict[tuple[int, str, str], Any] = {}

    # -- sources ------------------------------------------------------------------------------------
    def table(self, node: exp.Table) -> CatalogTable | None:
        key = id(node)
        if key not in self.tables:
            found = self.catalog.resolve(node.name, node.text("db"), node.text("catalog"), self.search_path)
            self.tables[key] = found
            if found is None and node.name:
                self.unknown.add(".".join(p for p in (node.text("catalog"), node.text("db"), node.name) if p))
        return self.tables[key]

    def has_column(self, source: exp.Table | Scope, name: str) -> bool | None:
        """True/False when the catalog (or the derived table) knows; None when it cannot tell."""
        if isinstance(source, exp.Table):
            found = self.table(source)
            return None if found is None or not found.columns else found.column(name) is not None
        selects = source.expression.named_selects if isinstance(source.expression, exp.Query) else []
        return True if name in selects else (None if "*" in selects else False)

    def through(self, source: exp.Table | Scope, name: str) -> Ref | None:
        """The base-table column behind ``source.name``."""
        if isinstance(source, exp.Table):
            found = self.table(source)
            if found is None:
                return None
            return (found.key, found.column(name) or name, id(source))
        key = (id(source), name)
        if key not in self.outputs:
            self.outputs[key] = None  # guards recursive CTE loops
            self.outputs[key] = self._output(source, name)
        return self.outputs[key]

    def _output(self, scope: Scope, name: str) -> Ref | None:
        select = scope.expression
        if not isinstance(select, exp.Select):
            return None
        for projection in select.selects:
            if projection.alias_or_name != name:
                continue
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            return self.resolve(scope, inner) if type(inner) is exp.Column else None
        return None

    # -- columns ------------------------------------------------------------------------------------
    def resolve(self, scope: Scope, column: exp.Column) -> Ref | None:
        key = (id(scope), column.table, column.name)
        found = self.refs.get(key, _MISSING)
        if found is _MISSING:
            found = self.refs[key] = self._resolve(scope, key[1], key[2])
        return found  # type: ignore[no-any-return]

    def _resolve(self, scope: Scope, qualifier: str, name: str) -> Ref | None:
        current: Scope | None = scope
        while current is not None:
            sources = current.selected_sources
            if qualifier:
                if qualifier in sources:
                    return self.through(sources[qualifier][1], name)
            else:
                source = self._unqualified(current, sources, name)
                if source is _AMBIGUOUS:
                    return None
                if source is not None:
                    return self.through(source, name)
            current = current.parent if current.is_subquery else None
        return None

    def _unqualified(self, scope: Scope, sources: dict[str, tuple[Any, Any]], name: str) -> Any:
        known = [src for _, src in sources.values()]
        definite = [src for src in known if self.has_column(src, name)]
        if len(definite) == 1:
            return definite[0]
        if definite:  # ambiguous, unless a USING join merged the name: then the left-most source has it
            return definite[0] if name in _using_names(scope) else _AMBIGUOUS
        maybe = [src for src in known if self.has_column(src, name) is None]
        return maybe[0] if len(maybe) == 1 else (_AMBIGUOUS if maybe else None)

    def tree(self, tree: exp.Expr, scopes: list[Scope]) -> None:
        selects: dict[int, tuple[Scope, exp.Select]] = {}
        for scope in scopes:
            for table in scope.tables:
                if scope.sources.get(table.alias_or_name) is table:
                    self.table(table)
            if isinstance(scope.expression, exp.Select):
                selects[id(scope.expression)] = (scope, scope.expression)
                for join in scope.expression.args.get("joins") or []:
                    if join.args.get("using"):
                        self._using(scope, join)
        aliases: dict[int, dict[str, exp.Alias]] = {}
        equalities: list[tuple[Scope, exp.EQ]] = []
        # one compiled walk; a node belongs to the SELECT it is nested in (never across a subquery) and
        # to the clause that SELECT holds it under
        for node in tree.find_all(exp.Column, exp.EQ):
            child: exp.Expr = node
            parent: exp.Expr | None = node.parent
            while parent is not None and not isinstance(parent, exp.Query):
                child, parent = parent, parent.parent
            found = selects.get(id(parent))
            clause = CLAUSE_OF.get(child.arg_key or "")
            if found is None or clause is None:
                continue
            owner, select = found
            if isinstance(node, exp.EQ):
                if clause in ("where", "join"):
                    equalities.append((owner, node))
            elif isinstance(node, exp.Column):
                if id(owner) not in aliases:
                    aliases[id(owner)] = {p.alias: p for p in select.selects if isinstance(p, exp.Alias)}
                self._use(owner, node, clause, aliases[id(owner)])
        for scope, eq in equalities:
            left, right = _unwrap(eq.this), _unwrap(eq.expression)
            if type(left) is exp.Column and type(right) is exp.Column:
                a, b = self.resolve(scope, left), self.resolve(scope, right)
                if a is not None and b is not None and a[2] != b[2]:
                    self.joins.add(join_edge((a[0], a[1]), (b[0], b[1])))

    def _use(self, scope: Scope, column: exp.Column, clause: str, aliases: dict[str, exp.Alias]) -> None:
        if isinstance(column.this, exp.Star):
            return
        if clause in ALIAS_CLAUSES and not column.table and column.name in aliases:
            target = aliases[column.name].this
            if not (type(target) is exp.Column and target.name == column.name):
                return  # an output alias, not a column
        ref = self.resolve(scope, column)
        if ref is not None:
            self.uses.add((ref[0], clause, ref[1]))

    def _using(self, scope: Scope, join: exp.Join) -> None:
        sources = scope.selected_sources
        right_name = join.this.alias_or_name
        if right_name not in sources:
            return
        order = [name for name, _ in scope.references if name in sources]
        left_names = order[:order.index(right_name)] if right_name in order else []
        for identifier in join.args.get("using") or []:
            name = identifier.name
            right = self.through(sources[right_name][1], name)
            lefts = [n for n in left_names if self.has_column(sources[n][1], name)]
            if not lefts and len(left_names) == 1:
                lefts = left_names
            for left_name in lefts:
                left = self.through(sources[left_name][1], name)
                if left is not None:
                    self.uses.add((left[0], "join", left[1]))
                    if right is not None and left[2] != right[2]:
                        self.joins.add(join_edge((left[0], left[1]), (right[0], right[1])))
            if right is not None:
                self.uses.add((right[0], "join", right[1]))


def _using_names(scope: Scope) -> set[str]:
    select = scope.expression
    joins = (select.args.get("joins") or []) if isinstance(select, exp.Select) else []
    return {identifier.name for join in joins for identifier in join.args.get("using") or []}


@functools.lru_cache(maxsize=16)
def _dialect(name: str) -> Dialect:
    return Dialect.get_or_raise(name or None)


def _parse_one(sql: str, dialect: str) -> exp.Expr:
    """``sqlglot.parse_one`` without looking the dialect up again for every template."""
    result = _dialect(dialect).parse(sql)
    if not result or result[0] is None:
        raise ParseError(f"No expression was parsed from {sql[:80]!r}")
    return exp.Block(expressions=result) if len(result) > 1 else result[0]


def analyze(template_id: str, sql: str, dialect: str, catalog: Catalog, search_path: Sequence[str]) -> ParsedTemplate:
    """Parse and resolve one template; any failure becomes ``ParsedTemplate.error``, never an exception."""
    try:
        tree = _parse_one(sql, dialect)
    except Exception as exc:  # sqlglot raises many types (and RecursionError): one bad template must not end the batch
        return ParsedTemplate(template_id, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    return analyze_tree(template_id, tree, catalog, search_path)


def analyze_tree(template_id: str, tree: exp.Expr, catalog: Catalog, search_path: Sequence[str]) -> ParsedTemplate:
    """Resolve an already parsed (and literal-masked) template: the normalizer's tree, no second parse."""
    try:
        analysis = _Analysis(catalog, search_path)
        analysis.tree(tree, traverse_scope(tree))
        if not isinstance(tree, exp.Query):  # DML/DDL: the target table is in no query scope
            ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
            for node in tree.find_all(exp.Table):
                if node.name and (node.name not in ctes or node.db):
                    analysis.table(node)
    except Exception as exc:  # sqlglot raises many types (and RecursionError): one bad template must not end the batch
        return ParsedTemplate(template_id, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    tables = sorted({t.key for t in analysis.tables.values() if t is not None})
    return ParsedTemplate(template_id, tuple(tables), tuple(sorted(analysis.unknown)),
                          tuple(sorted(analysis.uses)), tuple(sorted(analysis.joins)))
