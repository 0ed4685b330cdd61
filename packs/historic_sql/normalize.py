"""One template per query shape: literals masked, keywords and whitespace normalized, a stable id.

``Normalizer(dialect, redaction_patterns).normalize(sql)`` parses the text with sqlglot once and
replaces every number and string literal (and ``$1`` / ``%s`` / ``:name`` / ``@name`` parameters)
with ``?``; an IN list, ARRAY or multi-row VALUES made only of placeholders collapses to one
placeholder (or one row); ``-?`` folds into ``?``. What stays: ``GROUP BY 1`` / ``ORDER BY 2``
ordinals, type parameters (``DECIMAL(10, 2)``) and date-part units, which are structure rather
than values, and INTERVAL values (several dialects spell them as one string with the unit). The
SQL is generated back without comments (they carry run ids: dbt's invocation id, Metabase's
query hash), on one line, keywords upper-cased; identifiers keep their spelling.

``template_id`` is the first 16 hex digits of the sha256 of that canonical text, taken before the
configured redaction patterns replace their matches with ``__redacted__`` in the stored SQL (so
changing redaction never renumbers templates).

Speed: results are cached by raw text and by *shape*, the token stream with the values of
literals in value positions (after ``=``, ``<``, ``LIKE``, ``BETWEEN``, ``LIMIT``, arithmetic, or
inside IN / VALUES / ARRAY lists) blanked out. Two texts with one shape differ only in such
values, so they get the same result without a second parse; a literal anywhere else (a function
argument, after INTERVAL or ``->``) keeps its text in the shape, because sqlglot may read it as
structure (``DATE_TRUNC('month', x)`` becomes a unit). Both caches are keyed by 128-bit BLAKE2b
digests and bounded (oldest out first), so they never hold raw SQL. Statements that cannot carry table usage
(``SET``, ``SHOW``, ``BEGIN``, ``DROP``...) are recognised by their first word and never parsed.

pg_stat_statements texts get two repairs before parsing: ``$1,$2`` is spaced (sqlglot 30 cannot
tokenize it) and ``DATE $1`` (its spelling of ``DATE '2020-01-01'``, which no parser reads)
becomes ``CAST($1 AS DATE)``, the tree the literal itself gives.

Never raises: text sqlglot cannot tokenize or parse (or more than one statement) is masked with
regular expressions instead, and the result says ``parse_failed``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import ErrorLevel, Token, TokenType, exp

# SELECT | INSERT | UPDATE | DELETE | MERGE | CTAS (CREATE TABLE ... AS SELECT) | DDL | NOISE | OTHER
ANALYTICAL_KINDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CTAS"})
REDACTED = "__redacted__"
NORMALIZER_VERSION = "2"  # bump whenever a change here changes a canonical text (cached results go stale)
MAX_PARSE_CHARS = 100_000  # longer texts (generated IN lists) go straight to the regex masking

_NOISE_WORDS = frozenset({
    "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "SET", "RESET", "USE", "BEGIN", "START", "COMMIT", "END", "ROLLBACK",
    "ABORT", "SAVEPOINT", "RELEASE", "PREPARE", "DEALLOCATE", "DISCARD", "LISTEN", "UNLISTEN", "NOTIFY",
    "VACUUM", "ANALYZE", "ANALYSE", "CHECKPOINT", "LOCK", "FETCH", "CLOSE", "DECLARE", "MOVE", "PRAGMA", "LIST",
    "LS", "GET", "PUT", "REMOVE", "RM", "CACHE", "UNCACHE", "REFRESH", "KILL",
})
_OTHER_WORDS = frozenset({"CALL", "EXEC", "EXECUTE", "COPY", "UNLOAD", "LOAD", "DO"})  # not analytical; unparsed
_DDL_WORDS = frozenset({"ALTER", "DROP", "TRUNCATE", "GRANT", "REVOKE", "COMMENT", "RENAME", "UNDROP", "REINDEX",
                        "CLUSTER"})
_GLUED_PARAM_RE = re.compile(r"(?<=\S)\$(?=\d)")  # sqlglot 30 cannot tokenize $1,$2 (fine with $1, $2)
_TYPED_PARAM_RE = re.compile(r"\b(DATE|TIMESTAMPTZ|TIMESTAMP|TIME)\s+(\$\d+)", re.I)  # pg_stat_statements' DATE $1
_FIRST_WORDS_RE = re.compile(r"(?:\s|--[^\n]*(?:\n|\Z)|/\*.*?\*/|\()*([A-Za-z_]+)(?:\s+([A-Za-z_]+))?", re.S)

_SAFE_BEFORE = frozenset({
    TokenType.EQ, TokenType.NEQ, TokenType.LT, TokenType.LTE, TokenType.GT, TokenType.GTE, TokenType.NULLSAFE_EQ,
    TokenType.LIKE, TokenType.ILIKE, TokenType.BETWEEN, TokenType.AND, TokenType.OR, TokenType.LIMIT,
    TokenType.OFFSET, TokenType.THEN, TokenType.ELSE, TokenType.WHEN, TokenType.PLUS, TokenType.DASH, TokenType.STAR,
    TokenType.SLASH, TokenType.MOD, TokenType.DPIPE,
})
_LIST_OPENERS = frozenset({TokenType.IN, TokenType.VALUES, TokenType.ARRAY})
_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET})
_LITERAL_TOKENS = frozenset({TokenType.STRING, TokenType.NUMBER})
_IN_LIST = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.COMMA})  # before an item of a list
_IN_VALUES = frozenset({TokenType.COMMA, TokenType.L_PAREN, TokenType.R_PAREN})  # what a VALUES run is made of
_BRACKETS = _OPEN | _CLOSE | {TokenType.VALUES}
_CODES = {kind: chr(0xE000 + index) for index, kind in enumerate(TokenType)}  # one private-use character per type

_SCAN_RE = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<string>[EeNnBbXxRr]?'(?:[^'\\]|\\.|'')*')
  | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)
  | (?P<quoted>"(?:[^"]|"")*"|`[^`]*`)
  | (?P<param>\$\d+|%s|%\(\w+\)s|(?<![\w:]):[A-Za-z_]\w*|@[A-Za-z_]\w*)
  | (?P<word>[A-Za-z_][\w$]*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)
  | (?P<space>\s+)
""", re.S | re.X)
_IN_LIST_RE = re.compile(r"\bIN\s*\(\s*\?(?:\s*,\s*\?)*\s*\)", re.I)
_VALUES_RE = re.compile(r"(\(\s*\?(?:\s*,\s*\?)*\s*\))(?:\s*,\s*\(\s*\?(?:\s*,\s*\?)*\s*\))+")
_NAME = r"(?:[\w$]+|\"[^\"]+\"|`[^`]+`)"
_FROM_RE = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE)\s+({_NAME}(?:\.{_NAME})*)", re.I)
_KEYWORDS = frozenset("""
    SELECT FROM WHERE AND OR NOT IN IS NULL AS JOIN LEFT RIGHT INNER OUTER FULL CROSS ON USING GROUP BY ORDER HAVING
    LIMIT OFFSET UNION ALL DISTINCT CASE WHEN THEN ELSE END WITH INSERT INTO VALUES UPDATE SET DELETE MERGE MATCHED
    CREATE TABLE VIEW DROP ALTER ASC DESC BETWEEN LIKE ILIKE EXISTS SHOW DESCRIBE EXPLAIN USE BEGIN COMMIT ROLLBACK
    CALL QUALIFY OVER PARTITION WINDOW LATERAL TRUE FALSE INTERVAL CAST FILTER WITHIN RECURSIVE
""".split())


@dataclass(frozen=True, slots=True)
class NormalizedSql:
    template_id: str
    canonical_sql: str  # literals masked, comments gone, redaction applied
    kind: str  # see ANALYTICAL_KINDS; DDL, NOISE or OTHER otherwise
    tables: tuple[str, ...]  # sorted, lower-cased names as written (``db.name``); table functions as ``name()``
    parse_failed: bool = False


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def template_id(canonical_sql: str) -> str:
    return hashlib.sha256(canonical_sql.encode("utf-8")).hexdigest()[:16]


class Normalizer:
    """Per dialect and redaction list; cheap to keep for a whole read (it is the cache)."""

    def __init__(self, dialect: str, redaction_patterns: Sequence[str] = (), *, cache_size: int = 50_000):
        self.dialect = dialect
        self._dialect = sqlglot.Dialect.get_or_raise(dialect)
        self._tokenizer = self._dialect.tokenizer()  # reusable; building one costs as much as a tokenize
        self._redact = [re.compile(pattern, re.I) for pattern in redaction_patterns]
        self._cache_size = cache_size
        self._by_raw: dict[bytes, NormalizedSql] = {}  # keyed by digests: raw texts can be large
        self._by_shape: dict[bytes, NormalizedSql] = {}
        self._by_id: dict[str, NormalizedSql] = {}
        self.parses = 0  # sqlglot parses actually run (the rest came from a cache)
        # set by the batch path: resolve each parsed template from this tree too (before generation,
        # which may rewrite it), so the batch parse need not parse the canonical text again
        self.analyzer: Callable[[exp.Expr], object] | None = None
        self.analyses: dict[str, object] = {}

    def reserve(self, count: int) -> None:
        """Keep at least ``count`` raw texts (a primed batch must not evict itself)."""
        self._cache_size = max(self._cache_size, count)

    def remember(self, sql: str, result: NormalizedSql) -> None:
        """Take a result normalized elsewhere (a pool worker, a cache) for this raw text."""
        self._remember(self._by_raw, _digest(sql), result)
        self._by_id.setdefault(result.template_id, result)

    def known(self, template: str) -> NormalizedSql | None:
        """The normalization that produced this template id, if this normalizer produced it."""
        return self._by_id.get(template)

    def normalize(self, sql: str) -> NormalizedSql:
        key = _digest(sql)
        cached = self._by_raw.get(key)
        if cached is not None:
            return cached
        result = self._normalize(sql)
        self._remember(self._by_raw, key, result)
        self._by_id.setdefault(result.template_id, result)
        return result

    # ---- the two paths ---------------------------------------------------------------------------------------

    def _normalize(self, sql: str) -> NormalizedSql:
        kind, worth_parsing = _kind_from_words(sql)
        if not worth_parsing or len(sql) > MAX_PARSE_CHARS:
            return self._fallback(sql, kind, failed=worth_parsing)
        if "$" in sql:  # pg_stat_statements texts: make them parseable, as the same tree their literals give
            sql = _TYPED_PARAM_RE.sub(r"CAST(\2 AS \1)", _GLUED_PARAM_RE.sub(" $", sql))
        try:
            tokens = self._tokenizer.tokenize(sql)
        except Exception:  # sqlglot raises TokenError and, on odd input, others: the regex path takes over
            return self._fallback(sql, kind, failed=True)
        shape = _digest(_shape(tokens))
        cached = self._by_shape.get(shape)
        if cached is not None:
            return cached
        try:
            self.parses += 1
            statements = [tree for tree in self._dialect.parser().parse(tokens, sql) if tree is not None]
        except Exception:  # ParseError, and RecursionError on pathological nesting
            return self._fallback(sql, kind, failed=True)
        if len(statements) != 1 or isinstance(statements[0], exp.Command):
            return self._fallback(sql, kind, failed=True)
        tree = statements[0]
        _mask(tree)
        kind, tables = _kind(tree), _tables(tree, self.dialect)
        analysis = self.analyzer(tree) if self.analyzer is not None else None
        # copy=False: the tree is thrown away after this, and copying it cost as much as generating
        canonical = self._dialect.generate(tree, copy=False, comments=False, normalize_functions="upper",
                                           unsupported_level=ErrorLevel.IGNORE)
        result = NormalizedSql(template_id(canonical), self._redacted(canonical), kind, tables)
        if analysis is not None:
            self.analyses.setdefault(result.template_id, analysis)
        self._remember(self._by_shape, shape, result)
        return result

    def _fallback(self, sql: str, kind: str, *, failed: bool) -> NormalizedSql:
        canonical = regex_mask(sql)
        tables = tuple(sorted({_unquote(name) for name in _FROM_RE.findall(canonical)}))
        return NormalizedSql(template_id(canonical), self._redacted(canonical), kind, tables, parse_failed=failed)

    def _redacted(self, sql: str) -> str:
        for pattern in self._redact:
            sql = pattern.sub(REDACTED, sql)
        return sql

    def _remember(self, cache: dict[bytes, NormalizedSql], key: bytes, value: NormalizedSql) -> None:
        if len(cache) >= self._cache_size:
            del cache[next(iter(cache))]  # oldest first: dicts keep insertion order
        cache[key] = value


# ---- shape ---------------------------------------------------------------------------------------------------


def _shape(tokens: Sequence[Token]) -> str:
    """The token stream with literal values blanked where their value cannot change the parse."""
    parts: list[str] = []
    append = parts.append
    lists: list[bool] = []  # per open bracket: is it an IN / VALUES / ARRAY list?
    values_depth: int | None = None  # depth of a VALUES (...), (...) run
    previous: TokenType | None = None
    earlier: TokenType | None = None
    for token in tokens:
        kind = token.token_type
        if kind in _LITERAL_TOKENS and earlier is not TokenType.INTERVAL and (  # INTERVAL -1 DAY keeps its -1
                previous in _SAFE_BEFORE or (lists and lists[-1] and previous in _IN_LIST) or (
                kind is TokenType.STRING and previous is TokenType.DATE and earlier in _SAFE_BEFORE)):
            append("?")
        else:
            append(_CODES[kind] + token.text)  # the type too: 'select' (a string) is not SELECT
        if kind in _BRACKETS or values_depth is not None:
            depth = len(lists)
            if kind in _OPEN:
                lists.append(previous in _LIST_OPENERS or (values_depth == depth and previous is TokenType.COMMA))
            elif kind in _CLOSE and lists:
                lists.pop()
            if kind is TokenType.VALUES:
                values_depth = depth
            elif values_depth == depth and kind not in _IN_VALUES:
                values_depth = None
        earlier, previous = previous, kind
    return "\x1f".join(parts)


# ---- masking the tree ----------------------------------------------------------------------------------------


def _placeholder() -> exp.Placeholder:
    return exp.Placeholder(jdbc=True)  # renders as ? in every dialect


def _is_value(node: exp.Literal) -> bool:
    parent = node.parent
    if node.arg_key == "unit" or isinstance(parent, exp.DataTypeParam | exp.Interval):
        return False
    return not isinstance(parent, (exp.Group, exp.Ordered))  # GROUP BY 1, ORDER BY 2: ordinals


def _all_placeholders(nodes: Iterable[exp.Expr]) -> bool:
    items = list(nodes)
    return bool(items) and all(isinstance(node, exp.Placeholder) for node in items)


_VALUE_NODES = (exp.Literal, exp.Parameter, exp.Placeholder)


def _mask(tree: exp.Expr) -> None:
    # one walk collects every node the passes below touch (four walks cost a quarter of a parse)
    values_nodes: list[exp.Expr] = []
    negs: list[exp.Expr] = []
    lists: list[exp.Expr] = []
    rows_nodes: list[exp.Expr] = []
    for node in tree.walk():
        if isinstance(node, _VALUE_NODES):
            values_nodes.append(node)
        elif isinstance(node, exp.Neg):
            negs.append(node)
        elif isinstance(node, exp.In | exp.Array):
            lists.append(node)
        elif isinstance(node, exp.Values):
            rows_nodes.append(node)
    for node in values_nodes:
        if isinstance(node.parent, exp.Parameter) or (isinstance(node, exp.Literal) and not _is_value(node)):
            continue  # the inside of $1 / @name (the parameter itself is replaced), or structure
        node.replace(_placeholder())
    for neg in negs:
        if isinstance(neg.this, exp.Placeholder):
            neg.replace(_placeholder())
    for node in lists:
        items = node.expressions
        if len(items) > 1 and _all_placeholders(items):
            node.set("expressions", [_placeholder()])
    for values in rows_nodes:
        rows = values.expressions
        if len(rows) > 1 and all(isinstance(row, exp.Tuple) and _all_placeholders(row.expressions) for row in rows) \
                and len({len(row.expressions) for row in rows}) == 1:
            values.set("expressions", [rows[0]])


def _kind(tree: exp.Expr) -> str:
    if isinstance(tree, exp.Query):
        return "SELECT"
    simple = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Merge: "MERGE"}
    for node_type, kind in simple.items():
        if isinstance(tree, node_type):
            return kind
    if isinstance(tree, exp.Create):
        is_table = str(tree.args.get("kind") or "").upper() == "TABLE"
        return "CTAS" if is_table and isinstance(tree.expression, exp.Query) else "DDL"
    if isinstance(tree, exp.Drop | exp.Alter | exp.TruncateTable | exp.Grant | exp.Comment):
        return "DDL"
    if isinstance(tree, exp.Set | exp.Use | exp.Show | exp.Describe | exp.Transaction | exp.Commit | exp.Rollback
                  | exp.Pragma | exp.Analyze):
        return "NOISE"
    return "OTHER"


def _tables(tree: exp.Expr, dialect: str) -> tuple[str, ...]:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names: dict[str, None] = {}
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func):
            names[f"{table.this.sql(dialect).partition('(')[0].lower()}()"] = None
            continue
        parts = [part.name for part in table.parts]
        if not parts or (len(parts) == 1 and parts[0].lower() in ctes):
            continue
        names[".".join(parts).lower()] = None
    return tuple(sorted(names))


# ---- without a parse -----------------------------------------------------------------------------------------


def _kind_from_words(sql: str) -> tuple[str, bool]:
    """The statement kind from the first words (after comments and parentheses), and whether a parse
    could still tell something (a table read) that matters; OTHER when unsure."""
    match = _FIRST_WORDS_RE.match(sql)
    if not match:
        return "OTHER", True
    first, second = match.group(1).upper(), (match.group(2) or "").upper()
    if (first == "ALTER" and second == "SESSION") or first in _NOISE_WORDS:
        return "NOISE", False
    if first in _DDL_WORDS:
        return "DDL", False
    if first in _OTHER_WORDS:
        return "OTHER", False
    return {"SELECT": "SELECT", "WITH": "SELECT", "VALUES": "SELECT", "TABLE": "SELECT", "INSERT": "INSERT",
            "UPSERT": "INSERT", "REPLACE": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE",
            "MERGE": "MERGE"}.get(first, "OTHER"), True


def regex_mask(sql: str) -> str:
    """Literals, parameters and comments out; whitespace collapsed; common keywords upper-cased."""

    def replace(match: re.Match[str]) -> str:
        group = match.lastgroup
        if group in ("string", "dollar", "param", "number"):
            return "?"
        if group in ("comment", "space"):
            return " "
        text = match.group(0)
        if group == "word" and text.upper() in _KEYWORDS:
            return text.upper()
        return text

    masked = " ".join(_SCAN_RE.sub(replace, sql).split()).rstrip("; ")
    masked = _IN_LIST_RE.sub("IN (?)", masked)
    return _VALUES_RE.sub(r"\1", masked)


def _unquote(name: str) -> str:
    return ".".join(part.strip('"`') for part in name.split(".")).lower()
