"""A query's canonical text from its token stream: literals in value positions masked, no parse needed.

``canonical(tokens, sql)`` prints sqlglot's tokens of ``sql`` back as one line: keywords and function
names upper-cased, identifiers as written (quotes kept), comments gone (they carry run ids: dbt's
invocation id, Metabase's query hash), one space between tokens except around ``.``, ``::``, ``:``,
inside brackets and before a call's ``(``. A number or string literal becomes ``?``, and so do
parameters (``$1``, ``%s``, ``%(name)s``, ``:name``, ``@name``) and ``?``; a unary minus folds into its
``?``; ``DATE '2024-01-01'`` (and ``DATE $1``, pg_stat_statements' spelling) prints as
``CAST(? AS DATE)``, which parses; an IN list, ARRAY or multi-row VALUES of placeholders collapses to
one. Literals that are structure rather than values keep their text:

* ``GROUP BY 1`` / ``ORDER BY 2`` ordinals (a number that is a whole item of the list);
* type parameters (``NUMERIC(12, 2)`` after ``::`` or ``AS``);
* INTERVAL values (``INTERVAL '30 days'``: several dialects spell the unit inside the string);
* date-part units and JSON paths: the first string argument of ``DATE_TRUNC``, ``DATE_PART``,
  ``DATEDIFF``... and the path of ``JSON_EXTRACT``-style functions and of ``->`` / ``->>`` / ``#>``.

Why tokens and not the tree: the template id must be known before deciding to parse (texts that
differ only in literal values share a template and one parse), and printing tokens costs a fraction
of masking and regenerating a tree (ADR 0024).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import Token, TokenType
from sqlglot.parser import Parser

T = TokenType
_STRINGS = frozenset({T.STRING, T.BIT_STRING, T.HEX_STRING, T.BYTE_STRING, T.NATIONAL_STRING, T.RAW_STRING,
                      T.NATIONAL_RAW_STRING, T.HEREDOC_STRING, T.UNICODE_STRING})
_LITERALS = _STRINGS | {T.NUMBER}
# a token after which an operand ends: a following "-" is binary, "[" an index, ":" a path
_VALUE_END = frozenset({T.VAR, T.IDENTIFIER, T.NAME, T.NUMBER, T.R_PAREN, T.R_BRACKET, T.PLACEHOLDER, T.STAR,
                        T.NULL, T.TRUE, T.FALSE}) | _STRINGS
_TYPES = frozenset(Parser.TYPE_TOKENS)
_TYPED_LITERAL = frozenset({T.DATE, T.TIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.DATETIME})
_JSON_ARROWS = frozenset({T.ARROW, T.DARROW, T.HASH_ARROW, T.DHASH_ARROW})
_BY_LISTS = frozenset({T.GROUP_BY, T.ORDER_BY})
_BY_LIST_END = frozenset({T.HAVING, T.LIMIT, T.OFFSET, T.QUALIFY, T.WINDOW, T.UNION, T.EXCEPT, T.INTERSECT,
                          T.FETCH})
_ITEM_END = frozenset({  # what may follow an ordinal (VAR: NULLS FIRST)
    T.COMMA, T.R_PAREN, T.SEMICOLON, T.ASC, T.DESC, T.VAR, T.HAVING, T.LIMIT, T.OFFSET, T.QUALIFY, T.WINDOW,
    T.UNION, T.EXCEPT, T.INTERSECT, T.ORDER_BY, T.FETCH})
_NAMES_A_TABLE = frozenset({T.INTO, T.DOT, T.TABLE, T.ALIAS})  # INTO t (a, b), AS t (a, b): no call
_OPEN = frozenset({T.L_PAREN, T.L_BRACKET})
_CLOSE = frozenset({T.R_PAREN, T.R_BRACKET})
_LIST_TOKENS = _OPEN | _CLOSE | _BY_LISTS | _BY_LIST_END | {T.COMMA}  # what the bracket stack follows
_AS_WRITTEN = _LITERALS | {T.IDENTIFIER}
_BEFORE_TYPE = frozenset({T.DCOLON, T.ALIAS})  # x::NUMERIC(10, 2), CAST(x AS NUMERIC(10, 2))
_MAY_START_VALUE = _LITERALS | _TYPED_LITERAL | {T.PLACEHOLDER, T.PARAMETER, T.SESSION_PARAMETER, T.COLON, T.MOD,
                                                 T.DOT}
_TIGHT_BEFORE = frozenset({T.COMMA, T.R_PAREN, T.R_BRACKET, T.DOT, T.DCOLON, T.COLON})
_TIGHT_AFTER = frozenset({T.L_PAREN, T.L_BRACKET, T.DOT, T.DCOLON, T.COLON})
# what a "(" follows with a space (a name that is no call: INTO t (a, b)); the rest are calls: CAST(...)
_SPACED_PARENS = frozenset({
    T.IN, T.VALUES, T.ALIAS, T.ON, T.USING, T.FROM, T.JOIN, T.WHERE, T.AND, T.OR, T.NOT, T.SELECT, T.UNION,
    T.ALL, T.EXCEPT, T.INTERSECT, T.OVER, T.THEN, T.ELSE, T.WHEN, T.GROUP_BY, T.ORDER_BY, T.PARTITION_BY,
    T.LATERAL, T.INTO, T.TABLE, T.RETURNING, T.WITH, T.HAVING, T.IS, T.BETWEEN, T.EQ, T.NEQ, T.LT, T.LTE, T.GT,
    T.GTE, T.PLUS, T.DASH, T.STAR, T.SLASH, T.COMMA, T.CASE, T.DISTINCT, T.LIKE, T.ILIKE, T.VAR, T.IDENTIFIER,
    T.PLACEHOLDER,
})
# function name -> index of the argument whose string literal is structure (a unit, a JSON path)
STRUCTURE_ARGS = {
    "DATE_TRUNC": 0, "DATE_PART": 0, "DATETRUNC": 0, "DATEPART": 0, "DATEDIFF": 0, "DATE_DIFF": 0, "DATEADD": 0,
    "DATE_ADD": 0, "TIMESTAMPDIFF": 0, "TIMESTAMPADD": 0, "TIMESTAMP_DIFF": 0, "TIME_BUCKET": 0,
    "JSON_EXTRACT": 1, "JSON_EXTRACT_SCALAR": 1, "JSON_EXTRACT_PATH": 1, "JSON_EXTRACT_PATH_TEXT": 1,
    "JSONB_EXTRACT_PATH": 1, "JSONB_EXTRACT_PATH_TEXT": 1, "JSON_VALUE": 1, "JSON_QUERY": 1, "GET_PATH": 1,
    "JSON_EXTRACT_STRING": 1,
}
_IN_LIST_RE = re.compile(r"\bIN \(\?(?:, \?)+\)")
_ARRAY_RE = re.compile(r"\bARRAY\[\?(?:, \?)+\]")
_VALUES_RE = re.compile(r"(\(\?(?:, \?)*\))(?:, \(\?(?:, \?)*\))+")


_PARAMETERS = frozenset({T.PARAMETER, T.SESSION_PARAMETER})
# token types the value checks compare by identity, bound once (an enum attribute lookup is slow)
_T_SEMICOLON = T.SEMICOLON
_T_COLON = T.COLON
_T_COMMA = T.COMMA
_T_DASH = T.DASH
_T_DCOLON = T.DCOLON
_T_DOT = T.DOT
_T_GROUP_BY = T.GROUP_BY
_T_INTERVAL = T.INTERVAL
_T_L_PAREN = T.L_PAREN
_T_MOD = T.MOD
_T_NAME = T.NAME
_T_NUMBER = T.NUMBER
_T_ORDER_BY = T.ORDER_BY
_T_PARAMETER = T.PARAMETER
_T_PLACEHOLDER = T.PLACEHOLDER
_T_R_PAREN = T.R_PAREN
_T_SESSION_PARAMETER = T.SESSION_PARAMETER
_T_VAR = T.VAR


class _Bracket:
    """One open ( or [: what it belongs to, and which argument of a call the tokens are in."""

    __slots__ = ("argument", "by_list", "function", "type_params")

    def __init__(self, function: str | None, type_params: bool) -> None:
        self.function = function
        self.argument = 0
        self.type_params = type_params
        self.by_list = False


def canonical(tokens: Sequence[Token], sql: str) -> str:
    # Hot loop (every token of every distinct text): a plain token costs a few set lookups; only
    # tokens that may start a value go through _value, only brackets and list words touch the stack.
    # Token types are bound to locals: an enum attribute lookup costs four set lookups.
    var, name, l_paren, l_bracket, comma, dash, placeholder, array = (
        T.VAR, T.NAME, T.L_PAREN, T.L_BRACKET, T.COMMA, T.DASH, T.PLACEHOLDER, T.ARRAY)
    may_start_value, as_written, tight_before, tight_after = _MAY_START_VALUE, _AS_WRITTEN, _TIGHT_BEFORE, _TIGHT_AFTER
    out: list[str] = []  # pieces, each with its leading space
    append = out.append
    stack: list[_Bracket] = [_Bracket(None, False)]
    count = len(tokens)
    while count and tokens[count - 1].token_type is _T_SEMICOLON:
        count -= 1
    previous: TokenType | None = None  # the last piece printed (PLACEHOLDER for a masked value)
    earlier: TokenType | None = None  # the one before it
    glued = True  # no space before the next piece (start, unary minus, a call's name before its "(")
    call = False  # the last piece is a call's name
    i = 0
    while i < count:
        token = tokens[i]
        kind = token.token_type
        if kind in may_start_value:
            masked, taken = _value(tokens, i, count, kind, previous, earlier, stack[-1])
            if masked is not None:
                if previous is dash and glued and out:  # -5 is one value
                    out.pop()
                    previous, glued = earlier, not out or earlier in tight_after
                append(masked if glued else " " + masked)
                earlier, previous, glued, call = previous, placeholder, False, False
                i += taken
                continue
        was_call, call = call, False
        if kind is var or kind is name:
            text = token.text
            if i + 1 < count and tokens[i + 1].token_type is l_paren and previous not in _NAMES_A_TABLE:
                text, call = text.upper(), True  # function names are case-insensitive
        elif kind in as_written:
            text = sql[token.start:token.end + 1]  # quoted identifiers; literals kept as structure
        else:
            text = token.text.upper()
        if glued or kind in tight_before:
            append(text)
        elif kind is l_paren:  # a call's ( is tight: COUNT(*), CAST(x AS ...); after IN, AS, ON... not
            append(" " + text if previous in _SPACED_PARENS else text)
        elif kind is l_bracket:  # an index, or ARRAY[...]
            append(text if previous in _VALUE_END or previous is array else " " + text)
        else:
            append(" " + text)
        if kind in _LIST_TOKENS:
            frame = stack[-1]
            if kind in _OPEN:
                function = tokens[i - 1].text.upper() if was_call else None
                stack.append(_Bracket(function, previous in _TYPES and earlier in _BEFORE_TYPE))
            elif kind in _CLOSE:
                if len(stack) > 1:
                    stack.pop()
            elif kind is comma:
                frame.argument += 1
            else:
                frame.by_list = kind in _BY_LISTS
        glued = call or kind in tight_after or (kind is dash and (previous is None or previous not in _VALUE_END))
        earlier, previous = previous, kind
        i += 1
    text = "".join(out)
    if "?," in text:
        text = _VALUES_RE.sub(r"\1", _ARRAY_RE.sub("ARRAY[?]", _IN_LIST_RE.sub("IN (?)", text)))
    return text


def _adjacent(tokens: Sequence[Token], i: int) -> bool:
    return tokens[i + 1].start == tokens[i].end + 1


def _value(tokens: Sequence[Token], i: int, count: int, kind: TokenType, previous: TokenType | None,
           earlier: TokenType | None, frame: _Bracket) -> tuple[str | None, int]:
    """(``?`` or ``CAST(? AS type)``, tokens consumed) when tokens[i] starts a value; (None, 0) otherwise."""
    nxt = tokens[i + 1].token_type if i + 1 < count else None
    if kind in _LITERALS:
        if _structure(tokens, i, count, kind, previous, earlier, frame, nxt):
            return None, 0
        return "?", 1
    if kind is _T_PLACEHOLDER:
        return "?", 1
    if kind in _TYPED_LITERAL and previous is not _T_DCOLON and nxt is not None:
        if nxt in _STRINGS:
            return f"CAST(? AS {tokens[i].text.upper()})", 2
        if nxt is _T_PARAMETER and i + 2 < count and tokens[i + 2].token_type is _T_NUMBER:
            return f"CAST(? AS {tokens[i].text.upper()})", 3
        return None, 0
    if kind is _T_PARAMETER or kind is _T_SESSION_PARAMETER:  # $1, @name, @@name
        j = i
        while j + 1 < count and tokens[j + 1].token_type in _PARAMETERS and _adjacent(tokens, j):
            j += 1
        if j + 1 < count and tokens[j + 1].token_type in (_T_NUMBER, _T_VAR, _T_NAME) and _adjacent(tokens, j):
            return "?", j - i + 2
        return None, 0
    if previous in _VALUE_END or nxt is None or not _adjacent(tokens, i):
        return None, 0
    if kind is _T_COLON and nxt in (_T_VAR, _T_NAME):  # :name
        return "?", 2
    if kind is _T_MOD:  # %s, %(name)s
        if nxt is _T_VAR and tokens[i + 1].text == "s":
            return "?", 2
        if (nxt is _T_L_PAREN and i + 4 < count and tokens[i + 2].text.isidentifier()
                and tokens[i + 3].token_type is _T_R_PAREN and tokens[i + 4].text == "s" and _adjacent(tokens, i + 3)):
            return "?", 5
    if kind is _T_DOT and nxt is _T_NUMBER:  # .5
        return "?", 2
    return None, 0


def _structure(tokens: Sequence[Token], i: int, count: int, kind: TokenType, previous: TokenType | None,
               earlier: TokenType | None, frame: _Bracket, nxt: TokenType | None) -> bool:
    """Is this literal structure (kept) rather than a value (masked)?"""
    if previous is _T_INTERVAL or (previous is _T_DASH and earlier is _T_INTERVAL):
        return True
    if previous in _JSON_ARROWS:
        return True
    if kind is _T_NUMBER:
        if frame.type_params:
            return True
        if frame.by_list and previous in (_T_GROUP_BY, _T_ORDER_BY, _T_COMMA) and (nxt is None or nxt in _ITEM_END):
            return True
        return False
    wanted = STRUCTURE_ARGS.get(frame.function or "")
    return wanted is not None and wanted == frame.argument and previous in (_T_L_PAREN, _T_COMMA)
