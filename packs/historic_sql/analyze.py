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
from packs.historic_sql.normalize import table_names, tables_and_ctes
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
        self.selects: dict[int, frozenset[str]] = {}  # id(derived scope) -> its output names
        self.entries: dict[int, list[tuple[Any, Any, Any]]] = {}  # id(scope) -> see _entries

    # -- sources ------------------------------------------------------------------------------------
    def table(self, node: exp.Table) -> CatalogTable | None:
        key = id(node)
        found = self.tables.get(key, _MISSING)
        if found is _MISSING:
            found = self.tables[key] = self.catalog.resolve(node.name, node.text("db"), node.text("catalog"),
                                                            self.search_path)
            if found is None and node.name:
                self.unknown.add(".".join(p for p in (node.text("catalog"), node.text("db"), node.name) if p))
        return found  # type: ignore[return-value]

    def has_column(self, source: exp.Table | Scope, name: str) -> bool | None:
        """True/False when the catalog (or the derived table) knows; None when it cannot tell."""
        if isinstance(source, exp.Table):
            found = self.table(source)
            return None if found is None or not found.columns else found.column(name) is not None
        selects = self._selects(source)
        return True if name in selects else (None if "*" in selects else False)

    def _selects(self, source: Scope) -> frozenset[str]:
        """A derived table's or CTE's output names, once per scope."""
        selects = self.selects.get(id(source))
        if selects is None:
            query = source.expression
            selects = self.selects[id(source)] = frozenset(query.named_selects if isinstance(query, exp.Query) else ())
        return selects

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
        definite: list[Any] = []
        maybe: list[Any] = []
        lower = name.lower()
        for source, columns, selects in self._entries(scope, sources):
            if columns is not None:  # a catalog table: exact spelling, or the one case-insensitive match
                known: bool | None = name in columns or lower in columns
            elif selects is not None:
                known = True if name in selects else (None if "*" in selects else False)
            else:
                known = None  # a table the scan does not know (or knows without columns)
            if known:
                definite.append(source)
            elif known is None:
                maybe.append(source)
        if len(definite) == 1:
            return definite[0]
        if definite:  # ambiguous, unless a USING join merged the name: then the left-most source has it
            return definite[0] if name in _using_names(scope) else _AMBIGUOUS
        return maybe[0] if len(maybe) == 1 else (_AMBIGUOUS if maybe else None)

    def _entries(self, scope: Scope, sources: dict[str, tuple[Any, Any]]) -> list[tuple[Any, Any, Any]]:
        """(source, catalog column lookup or None, derived output names or None) per source of a scope,
        built once: every unqualified name of the scope checks them all."""
        entries = self.entries.get(id(scope))
        if entries is None:
            entries = []
            for _, source in sources.values():
                if isinstance(source, exp.Table):
                    found = self.table(source)
                    entries.append((source, found.lookup if found is not None and found.columns else None, None))
                else:
                    entries.append((source, None, self._selects(source)))
            self.entries[id(scope)] = entries
        return entries

    def scopes(self, scopes: list[Scope]) -> None:
        # the columns each scope collected while it was built (one walk per scope, never across a
        # subquery): no walk of our own; a column's clause is the SELECT argument it sits under
        equalities: dict[int, tuple[Scope, exp.EQ]] = {}
        for scope in scopes:
            for table in scope.tables:
                if scope.sources.get(table.alias_or_name) is table:
                    self.table(table)
            select = scope.expression
            if not isinstance(select, exp.Select):
                continue
            for join in select.args.get("joins") or []:
                if join.args.get("using"):
                    self._using(scope, join)
            aliases = {p.alias: p for p in select.selects if isinstance(p, exp.Alias)}
            for column in own_columns(scope):
                clause = _clause(column, select)
                if clause is None:
                    continue
                self._use(scope, column, clause, aliases)
                if clause == "where" or clause == "join":
                    parent = column.parent
                    while isinstance(parent, (exp.Paren, exp.Cast)):
                        parent = parent.parent
                    if isinstance(parent, exp.EQ):
                        equalities.setdefault(id(parent), (scope, parent))
            self._by_output(scope, select, aliases)
        for scope, eq in equalities.values():
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

    def _by_output(self, scope: Scope, select: exp.Select, aliases: dict[str, exp.Alias]) -> None:
        """``GROUP BY 1`` / ``ORDER BY month``: a position or an output alias names a projection, and the
        columns inside it are what the query groups or orders by (``date_trunc('month', order_date)``)."""
        for key, clause in (("group", "groupBy"), ("order", "orderBy")):
            node = select.args.get(key)
            for item in node.expressions if node is not None else ():
                projection = _named_projection(_unwrap(item.this if isinstance(item, exp.Ordered) else item),
                                               select, aliases)
                for column in _own_columns(projection) if projection is not None else ():
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


def own_columns(scope: Scope) -> list[exp.Column]:
    """The scope's own columns, stars excluded. ``_raw_columns`` is what ``Scope.columns`` filters (it
    adds correlated columns of child scopes and drops alias references, which ``_use`` decides itself).
    The one use of sqlglot's private API: pyproject.toml bounds sqlglot's major version, and
    tests/packs/historic_sql/test_sqlglot_seam.py pins the behaviour relied on."""
    scope.tables  # noqa: B018 -- collects the scope once
    return scope._raw_columns


def _named_projection(target: exp.Expr, select: exp.Select, aliases: dict[str, exp.Alias]) -> exp.Expr | None:
    """The projection a GROUP BY / ORDER BY item names by position (``1``) or by output alias, else None
    (an expression of its own: its columns are attributed where they stand)."""
    if isinstance(target, exp.Literal) and target.is_int:
        position = int(target.this)
        if 1 <= position <= len(select.selects):
            chosen = select.selects[position - 1]
            return chosen.this if isinstance(chosen, exp.Alias) else chosen
        return None
    if type(target) is exp.Column and not target.table and target.name in aliases:
        inner = aliases[target.name].this
        return None if type(inner) is exp.Column and inner.name == target.name else inner  # a plain column: as is
    return None


def _own_columns(node: exp.Expr) -> list[exp.Column]:
    """The columns of ``node`` outside any subquery of it (those belong to their own scopes)."""
    found: list[exp.Column] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Column):
            if not isinstance(current.this, exp.Star):
                found.append(current)
            continue
        if current is not node and isinstance(current, exp.Query):
            continue
        stack.extend(current.iter_expressions())
    return found


def _clause(column: exp.Column, select: exp.Select) -> str | None:
    child: exp.Expr = column
    parent = column.parent
    while parent is not None and parent is not select:
        if isinstance(parent, exp.Query):
            return None  # inside a query that is not this scope's
        child, parent = parent, parent.parent
    return CLAUSE_OF.get(child.arg_key or "") if parent is select else None


def written_tables(scopes: list[Scope], statement: tuple[list[exp.Table], list[exp.CTE]] | None,
                   dialect: str) -> tuple[str, ...]:
    """``normalize.table_names`` of every table the statement names, from the scopes and, for DML/DDL,
    the ``statement``'s own tables and CTEs (``_statement_nodes``): no walk of its own."""
    ctes = {cte.alias_or_name.lower() for scope in scopes for cte in scope.ctes}
    tables = [table for scope in scopes for table in scope.tables]
    if statement is not None:
        seen = {id(table) for table in tables}
        tables += [table for table in statement[0] if id(table) not in seen]
        ctes |= {cte.alias_or_name.lower() for cte in statement[1]}
    return table_names(tables, ctes, dialect)


def _statement_nodes(tree: exp.Expr) -> tuple[list[exp.Table], list[exp.CTE]] | None:
    """A DML/DDL statement's tables and CTEs (its target table is in no query scope); None for a query."""
    return None if isinstance(tree, exp.Query) else tables_and_ctes(tree)


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
    """Resolve an already parsed template: the normalizer's tree, no second parse."""
    return resolve_tree(template_id, tree, catalog, search_path)[0]


def resolve_tree(template_id: str, tree: exp.Expr, catalog: Catalog, search_path: Sequence[str],
                 dialect: str | None = None) -> tuple[ParsedTemplate, tuple[str, ...] | None]:
    """``analyze_tree``, plus (given the dialect) the tables as written from the same scopes; any
    failure becomes ``ParsedTemplate.error`` and no names, never an exception."""
    try:
        scopes = traverse_scope(tree)
        analysis = _Analysis(catalog, search_path)
        analysis.scopes(scopes)
        statement = _statement_nodes(tree)
        if statement is not None:
            ctes = {cte.alias for cte in statement[1]}
            for node in statement[0]:
                if node.name and (node.name not in ctes or node.db):
                    analysis.table(node)
        names = written_tables(scopes, statement, dialect) if dialect is not None else None
    except Exception as exc:  # sqlglot raises many types (and RecursionError): one bad template must not end the batch
        return ParsedTemplate(template_id, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR]), None
    tables = sorted({t.key for t in analysis.tables.values() if t is not None})
    return ParsedTemplate(template_id, tuple(tables), tuple(sorted(analysis.unknown)),
                          tuple(sorted(analysis.uses)), tuple(sorted(analysis.joins))), names
