"""The parser layer of the read-only SQL gate: one statement, read-only, no dangerous functions.

Agents may run SQL against company warehouses. Safety is layered: drivers open read-only sessions
with a statement timeout, and before that this gate parses the SQL with sqlglot in the connection's
dialect and refuses, with a reason the agent can act on, anything that is not plainly a read:

1. Exactly one statement. sqlglot's tokenizer decides where statements end, so ``;`` inside strings,
   quoted identifiers, dollar quotes and (nested) comments does not count. A parse failure is refused
   with sqlglot's message (line and column).
2. The statement is a SELECT, a set operation, VALUES or WITH ... SELECT, or an EXPLAIN (ANALYZE or
   not) of one. Everything else is refused, including what sqlglot only parses as an opaque
   ``exp.Command``. The whole tree is walked: a DELETE in a CTE, SELECT ... INTO, or a locking
   clause (FOR UPDATE/SHARE) anywhere is refused.
3. Every function in the tree (FROM position included) must be known to be read-only: functions
   sqlglot types are, unless ``sqlgate_functions.DENIED`` names them; functions sqlglot does not know
   (``exp.Anonymous``) must be in the built-in allow-list for the dialect or in ``allow_functions``.
   ``deny_functions`` always wins. A built-in denial is lifted only by naming the function exactly
   (no glob) in ``allow_functions``. A function in a user schema (``ops.fn()``) is allowed only by its
   qualified name. DuckDB's ``FROM 'file.csv'`` and Snowflake's ``FROM @stage`` are refused like the
   file-reading functions.
4. Over MCP (``wire=True``: the statement comes from an agent), two more rules (ADR 0032): relations
   and table functions that expose other sessions' statement text or the server's state
   (``sqlgate_functions.SERVER_STATE``: pg_stat_statements in any schema, pg_stat_activity, pg_locks,
   pg_settings, duckdb_settings(), ...) are refused by name (``gate_code`` ``server_state``); and a
   bare call whose name a user-defined function on the session's search path also carries
   (``shadowed``: ``md5`` when ``public.md5(integer)`` exists) is refused, since PostgreSQL may
   resolve it to that function; ``pg_catalog.md5(...)`` names the built-in. The operator's CLI
   (``wire=False``) is trusted with both.

Decisions worth knowing:

* PRAGMA is refused outright (sqlglot parses every PRAGMA alike, and reads and writes share the
  syntax); SQLite's read-only table-valued forms (``SELECT * FROM pragma_table_info('t')``) are allowed.
* ``pg_sleep(n)`` is allowed only with numeric literal arguments whose sum stays below ``timeout_s``;
  without a ``timeout_s`` it is refused. ``pg_sleep_for`` / ``pg_sleep_until`` are always refused.
* Run the text ``wrap_with_limit`` returns, not the agent's text: it is re-rendered from the parsed
  tree without comments, so a tokenizer difference between sqlglot and the engine cannot smuggle a
  second statement through. (EXPLAIN is returned unchanged, so that path leans on the read-only session.)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Literal

from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from khive.connections.sqlgate_functions import allowed_names, denied_reason, server_state_reason
from khive.errors import MESSAGE_CHARS, QUOTED_CHARS, KhiveError, bounded

GateCode = Literal["ok", "not_read_only", "multiple_statements", "forbidden_function", "server_state",
                   "parse_error", "empty"]

ALLOWED_ROOTS = "SELECT, UNION/INTERSECT/EXCEPT, VALUES, WITH ... SELECT and EXPLAIN of those"
_TOO_DEEP = "the SQL is nested too deeply for the gate to check; flatten the expression or use a CTE"
WRAP_ALIAS = "khive_q"
_KINDS_SHOWN = 5  # statements of a multi-statement text named in its refusal


@dataclass(frozen=True)
class GateDecision:
    allowed: bool
    reason: str
    statement_kind: str
    code: GateCode
    functions: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()


class SqlRefused(KhiveError):
    """The gate refused a statement; ``details``: ``reason``, ``statement_kind``, ``gate_code``."""

    code = "sql_refused"


@dataclass(frozen=True)
class _Policy:
    dialect: str
    allow: frozenset[str]
    deny: frozenset[str]
    timeout_s: float | None
    wire: bool
    shadowed: Mapping[str, Sequence[str]]


def check_sql(sql: str, dialect: str, *, wire: bool, allow_functions: Collection[str] = (),
              deny_functions: Collection[str] = (), timeout_s: float | None = None,
              shadowed: Mapping[str, Sequence[str]] | None = None) -> GateDecision:
    """Decide whether ``sql`` is one read-only statement that may run; never raises for bad SQL.

    ``wire``: the statement came over MCP (an agent), not from the operator's CLI. ``shadowed``: bare
    function names a user-defined function on the session's search path also carries -> its schemas.
    """
    policy = _Policy(dialect.lower(), frozenset(name.lower() for name in allow_functions),
                     frozenset(name.lower() for name in deny_functions), timeout_s, wire,
                     {name.lower(): tuple(schemas) for name, schemas in (shadowed or {}).items()})
    try:
        engine = Dialect.get_or_raise(policy.dialect)
    except ValueError:
        return _refuse("parse_error", "", f"unknown SQL dialect {dialect!r}; the gate cannot parse the statement")
    try:
        return _check(sql, engine, policy, explained=False)
    except Exception as exc:  # sqlglot failing on odd input (TypeError, AttributeError...): refuse, never raise
        return _refuse("parse_error", "", _error_message(_as_parse_error(exc), policy.dialect))


def require_read_only(sql: str, dialect: str, *, wire: bool, allow_functions: Collection[str] = (),
                      deny_functions: Collection[str] = (), timeout_s: float | None = None) -> GateDecision:
    """``check_sql`` that raises ``SqlRefused`` on refusal and returns the decision otherwise."""
    decision = check_sql(sql, dialect, wire=wire, allow_functions=allow_functions, deny_functions=deny_functions,
                         timeout_s=timeout_s)
    if not decision.allowed:
        raise SqlRefused(f"SQL refused: {decision.reason}", details={
            "reason": decision.reason, "statement_kind": decision.statement_kind, "gate_code": decision.code})
    return decision


# MySQL and MariaDB may ignore an ORDER BY in a derived table that has no LIMIT (the standard leaves it unordered)
_UNORDERED_DERIVED_TABLES = frozenset({"mysql"})


def wrap_with_limit(sql: str, dialect: str, limit: int) -> str:
    """``SELECT * FROM (<sql>) AS khive_q LIMIT <limit + 1>`` rendered in the dialect; EXPLAIN unchanged.

    One row more than ``limit`` lets the caller tell a truncated result from an exact fit. Comments
    are dropped. Call it on SQL ``check_sql`` allowed; anything else raises ``SqlRefused``.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    engine = Dialect.get_or_raise(dialect.lower())
    try:
        tokens = _tokenize(engine, sql)
        words = [token for token in tokens if token.token_type != TokenType.SEMICOLON]
        if words and _is_explain(words[0], sql):
            return sql
        statements = _statements(engine, tokens, sql)
    except RecursionError as exc:
        raise SqlRefused(f"SQL refused: {_TOO_DEEP}", details={
            "reason": _TOO_DEEP, "statement_kind": "", "gate_code": "parse_error"}) from exc
    except (ParseError, TokenError) as exc:
        raise SqlRefused(f"SQL refused: {_error_message(exc, dialect)}", details={
            "reason": _error_message(exc, dialect), "statement_kind": "", "gate_code": "parse_error"}) from exc
    if len(statements) != 1:
        reason = f"expected exactly one statement, found {len(statements)}"
        raise SqlRefused(f"SQL refused: {reason}", details={
            "reason": reason, "statement_kind": "", "gate_code": "multiple_statements" if statements else "empty"})
    root = statements[0]
    while isinstance(root, exp.Subquery) and set(root.args) - {"this"} == set():
        root = root.this
    alias = exp.TableAlias(this=exp.to_identifier(WRAP_ALIAS))
    if dialect.lower() in _UNORDERED_DERIVED_TABLES and isinstance(root, exp.Query) and root.args.get("order") \
            and not root.args.get("limit"):
        wrapped = root.limit(limit + 1)  # the ORDER BY would be dropped inside a derived table: limit in place
    else:
        wrapped = exp.select("*").from_(exp.Subquery(this=root, alias=alias)).limit(limit + 1)
    try:
        return wrapped.sql(dialect=dialect.lower(), comments=False)
    except Exception as exc:  # a tree sqlglot parsed but cannot render in the dialect: refuse, do not guess
        reason = _error_message(_as_parse_error(exc), dialect)
        raise SqlRefused(f"SQL refused: {reason}", details={
            "reason": reason, "statement_kind": "", "gate_code": "parse_error"}) from exc


# --- statements -----------------------------------------------------------------------------------

def _check(sql: str, engine: Dialect, policy: _Policy, *, explained: bool) -> GateDecision:
    try:
        tokens = _tokenize(engine, sql)
    except (TokenError, ParseError) as exc:
        return _refuse("parse_error", "", _error_message(exc, policy.dialect))
    words = [token for token in tokens if token.token_type != TokenType.SEMICOLON]
    if not words:
        return _refuse("empty", "", "no SQL statement (only whitespace, comments or semicolons); send one SELECT")
    if _is_explain(words[0], sql):
        if explained:
            return _refuse("not_read_only", "EXPLAIN", "EXPLAIN of an EXPLAIN is not a statement; "
                           "EXPLAIN the query itself")
        return _check_explain(sql[words[0].end + 1:], engine, policy)
    try:
        statements = _statements(engine, tokens, sql)
    except ParseError as exc:
        return _refuse("parse_error", words[0].text.upper(), _error_message(exc, policy.dialect))
    except RecursionError:
        return _refuse("parse_error", words[0].text.upper(), _TOO_DEEP)
    if len(statements) > 1:
        kinds = "; ".join(_kind(statement, policy.dialect) for statement in statements[:_KINDS_SHOWN])
        kinds += "; ..." if len(statements) > _KINDS_SHOWN else ""
        return _refuse("multiple_statements", kinds,
                       f"{len(statements)} statements found ({kinds}); send exactly one statement "
                       "(a trailing semicolon is fine)")
    if not statements:
        return _refuse("empty", "", "no SQL statement; send one SELECT")
    try:
        return _check_statement(statements[0], policy)
    except RecursionError:
        return _refuse("parse_error", words[0].text.upper(), _TOO_DEEP)


def _tokenize(engine: Dialect, sql: str) -> list[Token]:
    try:
        return engine.tokenize(sql)
    except (TokenError, RecursionError):
        raise
    except Exception as exc:
        raise _as_parse_error(exc) from exc


def _statements(engine: Dialect, tokens: list[Token], sql: str) -> list[exp.Expr]:
    try:
        parsed = engine.parser().parse(tokens, sql)
    except (ParseError, RecursionError):
        raise
    except Exception as exc:  # sqlglot's parser meets some malformed input with TypeError or AttributeError
        raise _as_parse_error(exc) from exc
    return [statement for statement in parsed if statement is not None and not isinstance(statement, exp.Semicolon)]


def _as_parse_error(exc: Exception) -> ParseError | TokenError:
    if isinstance(exc, (ParseError, TokenError)):
        return exc
    return ParseError(f"sqlglot could not read it ({type(exc).__name__}: {exc})")


def _check_statement(root: exp.Expr, policy: _Policy) -> GateDecision:
    kind = _kind(root, policy.dialect)
    query = root
    while isinstance(query, exp.Subquery):
        query = query.this
    if not isinstance(query, (exp.Select, exp.SetOperation, exp.Values)):
        if isinstance(root, exp.Command):
            why = (f"{kind} is a statement the gate does not understand (sqlglot could not parse it), "
                   f"so it is refused; only {ALLOWED_ROOTS} may run")
        else:
            why = f"{kind} is not a read-only query; only {ALLOWED_ROOTS} may run"
        return _refuse("not_read_only", kind, why)
    write = root.find(*_WRITE_NODES)
    if write is not None:
        return _refuse("not_read_only", kind, _write_reason(write, policy.dialect))
    return _check_tree(root, kind, policy)


def _check_explain(rest: str, engine: Dialect, policy: _Policy) -> GateDecision:
    try:
        tokens = _tokenize(engine, rest)
    except (TokenError, ParseError) as exc:
        return _refuse("parse_error", "EXPLAIN", _error_message(exc, policy.dialect))
    start, analyze = _explain_options(tokens)
    if start >= len(tokens) or tokens[start].token_type == TokenType.SEMICOLON:
        return _refuse("parse_error", "EXPLAIN", "EXPLAIN needs a statement to explain, e.g. EXPLAIN SELECT ...")
    inner = _check(rest[tokens[start].start:], engine, policy, explained=True)
    kind = f"{'EXPLAIN ANALYZE' if analyze else 'EXPLAIN'} {inner.statement_kind}".strip()
    if inner.allowed:
        return replace(inner, statement_kind=kind, reason=f"read-only {kind}")
    if analyze:
        why = f"EXPLAIN ANALYZE runs the statement it explains, and that statement is refused: {inner.reason}"
    else:
        why = f"EXPLAIN is allowed only of a statement that may run itself: {inner.reason}"
    return replace(inner, statement_kind=kind, reason=why)


def _explain_options(tokens: list[Token]) -> tuple[int, bool]:
    """Index of the explained statement's first token, and whether ANALYZE was asked for.

    Handles ``EXPLAIN (opt [value], ...)`` (PostgreSQL, DuckDB), ``EXPLAIN ANALYZE VERBOSE``,
    ``EXPLAIN QUERY PLAN`` (SQLite) and ``EXPLAIN USING TEXT|JSON|TABULAR`` (Snowflake).
    """
    index, analyze = 0, False
    if tokens and tokens[0].token_type == TokenType.L_PAREN:
        depth, options = 0, []
        for token in tokens:
            index += 1
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    break
            else:
                options.append(token.text.upper())
        for position, word in enumerate(options):
            if word in ("ANALYZE", "ANALYSE"):
                value = options[position + 1] if position + 1 < len(options) else ","
                analyze = analyze or value not in ("FALSE", "OFF", "0")
    while index < len(tokens):
        word = tokens[index].text.upper()
        following = tokens[index + 1].text.upper() if index + 1 < len(tokens) else ""
        if word in ("ANALYZE", "ANALYSE"):
            analyze, index = True, index + 1
        elif word == "VERBOSE":
            index += 1
        elif (word, following) == ("QUERY", "PLAN") or (word == "USING" and following in ("TEXT", "JSON", "TABULAR")):
            index += 2
        else:
            break
    return index, analyze


def _is_explain(token: Token, sql: str) -> bool:
    return sql[token.start:token.end + 1].upper() == "EXPLAIN"


# --- the tree -------------------------------------------------------------------------------------

_WRITE_NODES: tuple[type[exp.Expr], ...] = (
    exp.DML, exp.DDL, exp.Command, exp.Into, exp.Lock, exp.Drop, exp.Alter, exp.TruncateTable, exp.Set,
    exp.Pragma, exp.Attach, exp.Detach, exp.Install, exp.Grant, exp.Revoke, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Analyze, exp.Comment, exp.Use, exp.Put, exp.Get, exp.Export, exp.Declare, exp.Refresh,
    exp.LoadData, exp.Cache, exp.Uncache, exp.Kill, exp.Execute,
)
# Operators sqlglot models as functions (AND, LIKE, EXISTS, ...) and syntax such as CASE are not calls.
_NOT_CALLS: tuple[type[exp.Expr], ...] = (exp.Binary, exp.Connector, exp.Unary, exp.Predicate, exp.Case)
_KINDS: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.Insert, "INSERT"), (exp.Update, "UPDATE"), (exp.Delete, "DELETE"), (exp.Merge, "MERGE"),
    (exp.Copy, "COPY"), (exp.TruncateTable, "TRUNCATE"), (exp.Transaction, "BEGIN"), (exp.Set, "SET"),
    (exp.Union, "UNION"), (exp.Intersect, "INTERSECT"), (exp.Except, "EXCEPT"), (exp.Values, "VALUES"),
)
_SYSTEM_SCHEMAS = {"postgres": {"pg_catalog"}, "duckdb": {"pg_catalog"}}
# DuckDB reads a file or URL when a quoted table name looks like a path: FROM 'data.csv', FROM "s3://...".
_PATH_LIKE = re.compile(r"[/\\:*?~]|\.\w+$")


def _kind(node: exp.Expr, dialect: str) -> str:
    if isinstance(node, exp.Subquery):
        return _kind(node.this, dialect)
    if isinstance(node, exp.Select):
        if node.args.get("into"):
            return "SELECT INTO"
        locks = node.args.get("locks")
        if locks:
            return "SELECT FOR UPDATE" if locks[0].args.get("update") else "SELECT FOR SHARE"
        return "SELECT"
    if isinstance(node, exp.Command):
        return bounded(str(node.this).upper(), QUOTED_CHARS)
    if isinstance(node, (exp.Create, exp.Drop, exp.Alter)):
        return f"{node.key.upper()} {str(node.args.get('kind') or '').upper()}".strip()
    for node_type, name in _KINDS:
        if isinstance(node, node_type):
            return name
    if isinstance(node, _WRITE_NODES):
        return node.key.upper()
    # sqlglot reads unknown statements as expressions: SAVEPOINT s is a column aliased s.
    rendered = node.sql(dialect=dialect).split()
    return bounded(rendered[0].upper(), QUOTED_CHARS) if rendered else node.key.upper()


def _write_reason(node: exp.Expr, dialect: str) -> str:
    if isinstance(node, exp.Into):
        return "SELECT ... INTO creates a table; run the SELECT without INTO"
    if isinstance(node, exp.Lock):
        return "SELECT ... FOR UPDATE/SHARE takes row locks; drop the locking clause"
    return (f"{_kind(node, dialect)} inside the query changes data or the session (a data-modifying CTE or "
            "subquery); only read-only CTEs and subqueries may run")


def _check_tree(root: exp.Expr, kind: str, policy: _Policy) -> GateDecision:
    ctes = {cte.alias_or_name.lower() for cte in root.find_all(exp.CTE)}
    functions: list[str] = []
    tables: list[str] = []
    refusal: tuple[GateCode, str] | None = None
    slept = 0.0
    for node in root.walk():
        if isinstance(node, exp.Table):
            name = node.this
            if isinstance(name, exp.Identifier) and name.quoted and policy.dialect == "duckdb" \
                    and _PATH_LIKE.search(name.name):
                refusal = refusal or ("forbidden_function", f"FROM {name.name!r} makes DuckDB read a file or URL; "
                                      "query warehouse tables, not the server's filesystem or remote storage")
            elif isinstance(name, exp.Var) and name.name.startswith("@"):
                refusal = refusal or ("forbidden_function",
                                      f"FROM {name.name} reads staged files; query warehouse tables instead")
            elif isinstance(name, exp.Identifier):
                # A CTE of that name is refused too: scopes make "is it the CTE?" easy to get wrong.
                refusal = refusal or _server_state(node, name.name, policy, call=False)
                if node.db or name.name.lower() not in ctes:
                    tables.append(".".join(part.name for part in node.parts))
        elif isinstance(node, exp.Func) and not isinstance(node, _NOT_CALLS):
            qualifier, bare = _function_name(node)
            functions.append(f"{qualifier}.{bare}" if qualifier else bare)
            if bare == "pg_sleep" and _unqualified(qualifier, policy) and not _caller_denied(
                    node, qualifier, bare, policy):
                seconds, why = _sleep_seconds(node, slept, policy.timeout_s)
                slept += seconds
            else:
                why = _judge_function(node, qualifier, bare, policy)
            state = _server_state(node, bare, policy, call=True, qualifier=qualifier)
            refusal = refusal or state or (("forbidden_function", why) if why else None)
    found_functions, found_tables = tuple(sorted(set(functions))), tuple(sorted(set(tables)))
    if refusal is not None:
        return GateDecision(False, refusal[1], kind, refusal[0], found_functions, found_tables)
    return GateDecision(True, f"read-only {kind}", kind, "ok", found_functions, found_tables)


def _server_state(node: exp.Expr, name: str, policy: _Policy, *, call: bool, qualifier: str | None = None
                  ) -> tuple[GateCode, str] | None:
    """Over MCP: a relation or table function that shows other sessions' SQL or the server's state."""
    if not policy.wire:
        return None
    if qualifier is None:
        qualifier = ".".join(part.name.lower() for part in (node.args.get("catalog"), node.args.get("db")) if part)
    inner, _, name = name.lower().rpartition(".")  # BigQuery reads `INFORMATION_SCHEMA.JOBS` as one name
    qualifier = ".".join(part for part in (qualifier, inner) if part)
    why = server_state_reason(name, qualifier, policy.dialect, call=call)
    if why is None:
        return None
    shown = f"{qualifier}.{name}" if qualifier else name
    what = f"{shown}()" if call else shown
    return "server_state", (f"{what} {why}; agents may not read it over MCP (the operator's khive CLI may). "
                            "Query the warehouse's own tables instead")


# --- functions ------------------------------------------------------------------------------------

def _function_name(node: exp.Func) -> tuple[str, str]:
    """(qualifier, bare name), lower-case: ``pg_catalog.pg_read_file(...)`` is ("pg_catalog", "pg_read_file")."""
    raw = node.name if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)) else node.sql_name()
    inner_qualifier, _, bare = raw.lower().rpartition(".")  # BigQuery `project.dataset.fn`(...)
    parent = node.parent
    outer = ""
    if isinstance(parent, exp.Dot) and parent.expression is node:
        outer = _dotted(parent.this)
    elif isinstance(parent, exp.Table) and parent.this is node:
        outer = ".".join(part.name.lower() for part in (parent.args.get("catalog"), parent.args.get("db")) if part)
    return ".".join(part for part in (outer, inner_qualifier) if part), bare


def _dotted(node: exp.Expr) -> str:
    if isinstance(node, exp.Dot):
        return f"{_dotted(node.this)}.{_dotted(node.expression)}"
    if isinstance(node, exp.Column):
        return ".".join(part.name.lower() for part in node.parts)
    return node.name.lower() or node.sql().lower()


def _call_names(node: exp.Func, qualifier: str, bare: str, policy: _Policy) -> set[str]:
    names = {bare, f"{qualifier}.{bare}" if qualifier else bare}
    if not isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        names.update(name.lower() for name in type(node).sql_names())
        if policy.deny:  # the dialect's spelling, e.g. PostgreSQL DATE_TRUNC for sqlglot's TIMESTAMP_TRUNC
            names.add(node.sql(dialect=policy.dialect).split("(", 1)[0].strip().lower())
    return names


def _unqualified(qualifier: str, policy: _Policy) -> bool:
    """No schema, or the system schema (``pg_catalog``) the engine resolves bare names in anyway."""
    return not qualifier or qualifier in _SYSTEM_SCHEMAS.get(policy.dialect, set())


def _caller_denied(node: exp.Func, qualifier: str, bare: str, policy: _Policy) -> bool:
    names = _call_names(node, qualifier, bare, policy)
    return any(fnmatchcase(name, pattern) for name in names for pattern in policy.deny)


def _judge_function(node: exp.Func, qualifier: str, bare: str, policy: _Policy) -> str | None:
    """None if the call may run, else the reason it may not."""
    qualified = f"{qualifier}.{bare}" if qualifier else bare
    if _caller_denied(node, qualifier, bare, policy):
        return f"{qualified}() is denied by this connection's deny_functions"
    unqualified = _unqualified(qualifier, policy)
    named_in_allow = qualified in policy.allow or (unqualified and bare in policy.allow)
    names = _call_names(node, qualifier, bare, policy)
    if policy.wire and not qualifier and not named_in_allow:
        overloads = sorted({f"{schema}.{name}" for name in names for schema in policy.shadowed.get(name, ())})
        if overloads:
            return (f"{qualified}() is also defined as {', '.join(overloads)}, a user function that PostgreSQL may "
                    f"pick instead of the built-in; call pg_catalog.{bare}(...) for the built-in")
    denial = next((reason for name in sorted(names) if (reason := denied_reason(name, policy.dialect))), None)
    if denial is not None and not named_in_allow:
        return f"{qualified}() {denial}; the read-only gate refuses it"
    typed = not isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc))
    known = allowed_names(policy.dialect)
    if (unqualified and (typed or bare in known)) or qualified in known:
        return None
    if any(fnmatchcase(qualified, pattern) for pattern in policy.allow):
        return None
    if not unqualified:
        return (f"{qualified}() is a function in schema {qualifier}, which the gate cannot vet; if it is "
                f"read-only, add '{qualified}' to the connection's allow_functions")
    return (f"{qualified}() is not a function the gate knows to be read-only; if it is, add '{qualified}' "
            "to the connection's allow_functions")


def _sleep_seconds(node: exp.Func, slept: float, timeout_s: float | None) -> tuple[float, str | None]:
    """pg_sleep: numeric literal arguments summing to less than the statement timeout may run."""
    arguments: list[Any] = node.expressions if isinstance(node, exp.Anonymous) else []
    argument = arguments[0] if len(arguments) == 1 else None
    if not (isinstance(argument, exp.Literal) and argument.is_number):
        return 0.0, "pg_sleep() needs a single numeric literal argument below the statement timeout"
    seconds = float(argument.this)
    if timeout_s is None:
        return seconds, "pg_sleep() is refused when no statement timeout is known to bound it"
    if slept + seconds >= timeout_s:
        return seconds, (f"pg_sleep() would sleep {slept + seconds:g}s in all, not below the {timeout_s:g}s "
                         "statement timeout; sleep less or not at all")
    return seconds, None


# --- helpers --------------------------------------------------------------------------------------

def _refuse(code: GateCode, kind: str, reason: str) -> GateDecision:
    # The kind and the reason quote the caller's SQL (its first word, its statements): bounded like any error's
    return GateDecision(False, bounded(reason, MESSAGE_CHARS), bounded(kind, QUOTED_CHARS), code)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _error_message(exc: ParseError | TokenError, dialect: str) -> str:
    if isinstance(exc, ParseError) and exc.errors:
        error = exc.errors[0]
        near = _ANSI.sub("", str(error.get("highlight") or "")).strip()
        where = f" at line {error.get('line')}, column {error.get('col')}" if error.get("line") else ""
        detail = f"{error.get('description')}{where}" + (f" near {near!r}" if near else "")
    else:
        detail = _ANSI.sub("", str(exc)).strip()
    return f"the SQL does not parse as {dialect}: {detail}; fix the syntax"
