"""One template per query shape: literals masked, keywords and whitespace normalized, a stable id.

``Normalizer(dialect, redaction_patterns).normalize(sql)`` tokenizes the text with sqlglot and prints
the tokens back with every literal in a value position (and every parameter) masked as ``?``
(``fingerprint.canonical``: what is masked and what is structure). ``template_id`` is the first 16
hex digits of the sha256 of that canonical text, taken before the core redaction service
(khive/redact.py: built-in credential rules plus the configured patterns) replaces what it finds with an
identifier marker such as ``__redacted_custom__`` in the stored SQL (so changing redaction never
renumbers templates, and a redacted template still parses).

The kind and the tables come from one sqlglot parse of the first text of each template: texts that
differ only in literal values have the same canonical text, so the second one costs a tokenize and no
parse. With an ``analyzer`` set (the batch path), the same tree is also resolved against the scan
catalog (``analyses``), so attribution needs no second parse either. Results are cached by the BLAKE2b
digest of the raw text (bounded, oldest out first: it never holds raw SQL). Statements that cannot
carry table usage (``SET``, ``SHOW``, ``BEGIN``, ``DROP``...) are recognised by their first word and
never tokenized.

pg_stat_statements texts get two repairs: ``$1,$2`` is spaced (sqlglot 30 cannot tokenize it) and,
for the parse only, ``DATE $1`` (its spelling of ``DATE '2020-01-01'``, which no parser reads) becomes
``CAST($1 AS DATE)``, the tree the literal itself gives; both spellings print ``CAST(? AS DATE)``.

Never raises: text sqlglot cannot tokenize is masked with regular expressions instead, and text it
cannot parse as one statement keeps its token canonical; either way the result says ``parse_failed``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import Token, exp

from khive.redact import CUSTOM, Redactor, marker
from packs.historic_sql import fingerprint

# SELECT | INSERT | UPDATE | DELETE | MERGE | CTAS (CREATE TABLE ... AS SELECT) | DDL | NOISE | OTHER
ANALYTICAL_KINDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CTAS"})
REDACTED = marker(CUSTOM, sql=True)  # what a configured pattern's match becomes in stored SQL
NORMALIZER_VERSION = "4"  # bump whenever a change here changes a canonical text (cached results go stale)
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


def text_digest(text: str) -> str:
    """The 128-bit BLAKE2b of a raw text, in hex: how the caches and seeds outside this module name it."""
    return _digest(text).hex()


def template_id(canonical_sql: str) -> str:
    return hashlib.sha256(canonical_sql.encode("utf-8")).hexdigest()[:16]


class Normalizer:
    """Per dialect and redaction list; cheap to keep for a whole read (it is the cache)."""

    def __init__(self, dialect: str, redaction_patterns: Sequence[str] = (), *, cache_size: int = 50_000):
        self.dialect = dialect
        self._dialect = sqlglot.Dialect.get_or_raise(dialect)
        self._tokenizer = self._dialect.tokenizer()  # reusable; building one costs as much as a tokenize
        self._redactor = Redactor(redaction_patterns)  # the core service: built-in rules plus these patterns
        self._cache_size = cache_size
        self._by_raw: dict[bytes, NormalizedSql] = {}  # keyed by digests: raw texts can be large
        self._by_id: dict[str, NormalizedSql] = {}
        self.parses = 0  # sqlglot parses actually run (the rest came from a cache)
        # set by the batch path: resolve each parsed template from this tree too, so the batch parse
        # need not parse the canonical text again; it returns (parse result, tables as written or None)
        self.analyzer: Callable[[exp.Expr], tuple[object, tuple[str, ...] | None]] | None = None
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
        if "$" in sql:
            sql = _GLUED_PARAM_RE.sub(" $", sql)
        try:
            tokens = self._tokenizer.tokenize(sql)
        except Exception:  # sqlglot raises TokenError and, on odd input, others: the regex path takes over
            return self._fallback(sql, kind, failed=True)
        canonical = fingerprint.canonical(tokens, sql)
        template = template_id(canonical)
        seen = self._by_id.get(template)  # the same text but for literal values: parsed already
        if seen is not None:
            return seen
        tree = self._parse(sql, tokens)
        if tree is None:
            return NormalizedSql(template, self._redacted(canonical), kind, _regex_tables(canonical),
                                 parse_failed=True)
        tables = None
        if self.analyzer is not None:  # it reads the tables from its scopes: no walk of our own
            analysis, tables = self.analyzer(tree)
            self.analyses.setdefault(template, analysis)
        if tables is None:
            tables = _tables(tree, self.dialect)
        return NormalizedSql(template, self._redacted(canonical), _kind(tree), tables)

    def _parse(self, sql: str, tokens: list[Token]) -> exp.Expr | None:
        """The one statement ``sql`` holds, or None when sqlglot cannot read it as one."""
        if "$" in sql:  # pg_stat_statements' DATE $1: parse it as the tree its literal gives
            repaired = _TYPED_PARAM_RE.sub(r"CAST(\2 AS \1)", sql)
            if repaired != sql:
                try:
                    sql, tokens = repaired, self._tokenizer.tokenize(repaired)
                except Exception:
                    return None
        try:
            self.parses += 1
            statements = [tree for tree in self._dialect.parser().parse(tokens, sql) if tree is not None]
        except Exception:  # ParseError, and RecursionError on pathological nesting
            return None
        if len(statements) != 1 or isinstance(statements[0], exp.Command):
            return None
        return statements[0]

    def _fallback(self, sql: str, kind: str, *, failed: bool) -> NormalizedSql:
        canonical = regex_mask(sql)
        return NormalizedSql(template_id(canonical), self._redacted(canonical), kind, _regex_tables(canonical),
                             parse_failed=failed)

    def _redacted(self, sql: str) -> str:
        return self._redactor.sql(sql)

    def _remember(self, cache: dict[bytes, NormalizedSql], key: bytes, value: NormalizedSql) -> None:
        if len(cache) >= self._cache_size:
            del cache[next(iter(cache))]  # oldest first: dicts keep insertion order
        cache[key] = value


# ---- facts from the tree ------------------------------------------------------------------------------------


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
    found, ctes = tables_and_ctes(tree)
    return table_names(found, {cte.alias_or_name.lower() for cte in ctes}, dialect)


def tables_and_ctes(tree: exp.Expr) -> tuple[list[exp.Table], list[exp.CTE]]:
    """Every table node and every CTE of ``tree``, in one walk."""
    tables: list[exp.Table] = []
    ctes: list[exp.CTE] = []
    for node in tree.find_all(exp.Table, exp.CTE):
        if isinstance(node, exp.CTE):
            ctes.append(node)
        elif isinstance(node, exp.Table):
            tables.append(node)
    return tables, ctes


def table_names(tables: Iterable[exp.Table], ctes: set[str], dialect: str) -> tuple[str, ...]:
    """Sorted, lower-cased names as written (``db.name``; table functions as ``name()``), CTE references
    (a one-part name in ``ctes``) left out."""
    names: dict[str, None] = {}
    for table in tables:
        if isinstance(table.this, exp.Func):
            names[f"{table.this.sql(dialect).partition('(')[0].lower()}()"] = None
            continue
        parts = [part.name for part in table.parts]
        if parts and not (len(parts) == 1 and parts[0].lower() in ctes):
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


def _regex_tables(canonical: str) -> tuple[str, ...]:
    return tuple(sorted({_unquote(name) for name in _FROM_RE.findall(canonical)}))


def _unquote(name: str) -> str:
    return ".".join(part.strip('"`') for part in name.split(".")).lower()
