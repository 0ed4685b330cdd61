"""Parse request text (DSL or JSON form) into a ``Request``; every failure is a ``DslSyntaxError``.

The Lark LALR parser runs with the transformer inline, so no parse tree is built and nothing
recurses over the input: nesting is bounded before parsing, which is what keeps arbitrary text
from ever raising anything but ``DslSyntaxError``.
"""

from __future__ import annotations

import json
import math
import re
import threading
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from khive.dsl import jsonform, tables, values
from khive.dsl.errors import excerpt_at, syntax_error
from khive.dsl.nodes import Mode, Op, Ref, Request
from khive.errors import DslSyntaxError

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_OPS = 100

_STRING_RE = values.STRING_RE
_BRACKET_RE = re.compile(r"[\[\]{}()]")
_REF_STEP_RE = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")
_OPENERS = "[{("


class _Bareword:
    """An unquoted word where a value belongs; rejected with a fix hint by its parent."""

    __slots__ = ("token",)

    def __init__(self, token: Token):
        self.token = token


class _Positional:
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class _Build(Transformer[Token, Any]):
    """Inline LALR callbacks: each rule becomes Python values or nodes directly."""

    def __init__(self, current: threading.local):
        super().__init__()
        self._current = current  # per-thread: the text being parsed, for error excerpts

    def _fail(self, token: Token, message: str, reason: str, hint: str = "") -> DslSyntaxError:
        return syntax_error(self._current.text, token.line or 1, token.column or 1, message, reason, hint)

    # values ---------------------------------------------------------------------------------
    def string(self, children: list[Token]) -> str:
        return _decode_string(children[0], self._fail)

    def number(self, children: list[Token]) -> int | float:
        token = children[0]
        raw = str(token)
        if not ("." in raw or "e" in raw or "E" in raw):
            problem = values.integer_problem(raw)
            if problem is not None:
                raise self._fail(token, problem, "number-out-of-range", values.INT_HINT)
            return int(raw)
        value = float(raw)
        if math.isinf(value):
            raise self._fail(token, f"number {raw[:20]}{'...' if len(raw) > 20 else ''} is out of range",
                             "number-out-of-range", "JSON numbers must be finite; pass huge values as strings")
        return value

    def true(self, _: list[Token]) -> bool:
        return True

    def false(self, _: list[Token]) -> bool:
        return False

    def null(self, _: list[Token]) -> None:
        return None

    def ref(self, children: list[Token]) -> Ref:
        token = children[0]
        steps: list[str | int] = []
        for name, index in _REF_STEP_RE.findall(str(token)[len("$prev") :]):
            problem = None if name else values.ref_index_problem(index)
            if problem is not None:
                raise self._fail(token, problem, "number-out-of-range", values.REF_INDEX_HINT)
            steps.append(name if name else int(index))
        return Ref(tuple(steps), token.line or 1, token.column or 1)

    def bareword(self, children: list[Token]) -> _Bareword:
        return _Bareword(children[0])

    def empty_array(self, _: list[Token]) -> list[Any]:
        return []

    def array(self, children: list[Any]) -> list[Any]:
        items = children[1:]
        for item in items:
            if isinstance(item, _Bareword):
                word = str(item.token)
                raise self._fail(item.token, f"bare word {word!r} is not a value", "bareword-value",
                                 f'did you mean "{word}"?')
        return items

    def object(self, children: list[Any]) -> dict[str, Any]:
        if children == [None]:
            return {}
        return dict(children)

    def pair(self, children: list[Any]) -> tuple[str, Any]:
        key_token, value = children
        if isinstance(value, _Bareword):
            word = str(value.token)
            raise self._fail(value.token, f"bare word {word!r} is not a value", "bareword-value",
                             f'did you mean "{word}"?')
        return _decode_string(key_token, self._fail), value

    def bare_pair(self, children: list[Any]) -> tuple[str, Any]:
        token = children[0]
        raise self._fail(token, f"object key {str(token)!r} must be a quoted string", "bareword-key",
                         f'did you mean "{token}": ...?')

    # calls ----------------------------------------------------------------------------------
    def named_arg(self, children: list[Any]) -> tuple[Token, Any]:
        name, value = children
        if isinstance(value, _Bareword):
            word = str(value.token)
            raise self._fail(value.token, f"bare word {word!r} is not a value", "bareword-value",
                             f'did you mean {name}="{word}"?')
        return name, value

    def positional_arg(self, children: list[Any]) -> _Positional:
        return _Positional(children[0])

    def call(self, children: list[Any]) -> Op:
        verb_token: Token = children[0]
        verb = str(verb_token)
        if verb.count(".") > 1:
            raise self._fail(verb_token, f"verb name {verb!r} has more than one dot", "verb-name",
                             "verbs are named verb or pack.verb")
        args: dict[str, Any] = {}
        for position, arg in enumerate(children[1:], start=1):
            if arg is None:
                continue
            if isinstance(arg, _Positional):
                shown = f"bare word {arg.value.token}" if isinstance(arg.value, _Bareword) else "a value"
                raise self._fail(verb_token, f"argument {position} of {verb}(...) is {shown} without a name",
                                 "positional-arg", f"arguments are named: {verb}(name=value)")
            name, value = arg
            if str(name) in args:
                raise self._fail(name, f"argument {str(name)!r} is given twice", "duplicate-arg")
            args[str(name)] = value
        return Op(verb, MappingProxyType(args), verb_token.line or 1, verb_token.column or 1)

    # request shapes -------------------------------------------------------------------------
    def single(self, children: list[Op]) -> Request:
        return Request(Mode.SINGLE, (children[0],))

    def chain(self, children: list[Any]) -> Request:
        ops = tuple(child for child in children if isinstance(child, Op))
        if len(ops) > MAX_OPS:
            raise self._fail(_tok(ops[MAX_OPS]), f"a chain holds at most {MAX_OPS} ops, got {len(ops)}", "too-many-ops")
        return Request(Mode.CHAIN, ops)

    def item(self, children: list[Any]) -> tuple[Op, Token | None]:
        ops = [child for child in children if isinstance(child, Op)]
        pipe = next((child for child in children if isinstance(child, Token)), None)
        return ops[0], pipe

    def trailing_comma(self, children: list[Token]) -> Token:
        return children[0]

    def batch(self, children: list[Any]) -> Request:
        open_token: Token = children[0]
        items = [child for child in children[1:] if isinstance(child, tuple)]
        trailing = next((child for child in children[1:] if isinstance(child, Token)), None)
        if not items:
            raise self._fail(open_token, "empty batch: a batch needs at least one op", "empty-batch",
                             "write [a(), b()] or a single op a()")
        for _op, pipe in items:
            if pipe is not None:
                raise self._fail(pipe, "a chain cannot appear inside a batch", "chain-in-batch",
                                 "run the chain as its own request, or drop the '|'")
        if trailing is not None:
            raise self._fail(trailing, "trailing comma in batch", "trailing-comma", "remove the last ','")
        if len(items) > MAX_OPS:
            raise self._fail(open_token, f"a batch holds at most {MAX_OPS} ops, got {len(items)}",
                             "too-many-ops", "split the batch into several requests")
        return Request(Mode.PARALLEL, tuple(op for op, _ in items))


def _tok(op: Op) -> Token:
    return Token("VERB", op.verb, line=op.line, column=op.column)


def _decode_string(token: Token, fail: Any) -> str:
    body = str(token)[1:-1]
    if "\\" not in body:
        return body
    # JSON escapes, plus \$ (a literal dollar sign, e.g. "\$prev").
    prepared = re.sub(r"\\(\\|\$)", lambda m: "\\\\" if m.group(1) == "\\" else "$", body)
    try:
        value: str = json.loads(f'"{prepared}"', strict=False)
    except json.JSONDecodeError as exc:
        raise fail(token, f"bad escape in string: {exc.msg}", "bad-escape",
                   'strings use JSON escapes: \\" \\\\ \\n \\t \\uXXXX (and \\$)') from None
    problem = values.string_problem(value)
    if problem is not None:
        raise fail(token, problem, "lone-surrogate", values.SURROGATE_HINT)
    return value


@cache
def _parser() -> tuple[Lark, threading.local]:
    current = threading.local()
    return tables.build(_Build(current)), current


CACHE_MAX_CHARS = 16 * 1024


def parse(text: str) -> Request:
    """Parse one request; small texts are cached (requests are immutable), large ones parsed afresh."""
    if not isinstance(text, str):
        raise TypeError("request text must be str")
    if len(text) > CACHE_MAX_CHARS:
        return _parse_cached.__wrapped__(text)
    return _parse_cached(text)


@lru_cache(maxsize=2048)
def _parse_cached(text: str) -> Request:
    _check_size(text)
    values.check_text(text)  # before anything quotes the text back in an error
    stripped = text.lstrip()
    if stripped.startswith("{") or (stripped.startswith("[") and stripped[1:].lstrip().startswith("{")):
        return jsonform.parse_json_form(text)
    _check_depth(text)
    parser, current = _parser()
    current.text = text
    try:
        request: Request = parser.parse(text)  # type: ignore[assignment]  # the inline transformer builds it
    except DslSyntaxError:
        raise
    except UnexpectedInput as exc:
        raise _from_lark(text, exc) from None
    _check_refs(text, request)
    return request


def _check_size(text: str) -> None:
    if len(text) > MAX_BYTES or (len(text) * 4 > MAX_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES):
        raise syntax_error(text[:200], 1, 1, f"request is larger than {MAX_BYTES} bytes", "too-large",
                           "split it into several requests")
    if not text.strip():
        raise syntax_error(text, 1, 1, "empty request", "empty", 'write a call such as verbs()')


def _check_depth(text: str) -> None:
    if len(text) <= MAX_DEPTH:
        return  # too short to hold MAX_DEPTH + 1 openers
    if sum(text.count(opener) for opener in _OPENERS) <= MAX_DEPTH:
        return  # cannot be deeper than the number of openers
    # Blank out strings (keeping offsets) so brackets inside them do not count.
    blanked = _STRING_RE.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    depth = 0
    for match in _BRACKET_RE.finditer(blanked):
        if match.group() in _OPENERS:
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
                raise syntax_error(text, line, column, f"nesting deeper than {MAX_DEPTH} levels",
                                   "too-deep", "flatten the value")
        else:
            depth = max(depth - 1, 0)


def _check_refs(text: str, request: Request) -> None:
    if "$prev" not in text:
        return
    for index, op in enumerate(request.ops):
        ref = _first_ref(op.args)
        if ref is None:
            continue
        if request.mode is not Mode.CHAIN:
            raise syntax_error(text, ref.line, ref.column, "$prev is only available inside a chain",
                               "prev-outside-chain", 'chain ops with "|": a(...) | b(x=$prev.id)')
        if index == 0:
            raise syntax_error(text, ref.line, ref.column, "the first op of a chain has no $prev",
                               "prev-in-first-op", "move the reference to a later op")


def _first_ref(value: Any) -> Ref | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Ref):
            return item
        if isinstance(item, (dict, MappingProxyType)):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


_TERMINAL_NAMES = {
    "_COMMA": "','", "_EQUAL": "'='", "_COLON": "':'", "_LPAR": "'('", "_RPAR": "')'", "LSQB": "'['",
    "_RSQB": "']'", "_LBRACE": "'{'", "_RBRACE": "'}'", "PIPE": "'|'", "STRING": "a string",
    "NUMBER": "a number", "TRUE": "true", "FALSE": "false", "NULL": "null", "REF": "$prev",
    "VERB": "a verb name", "NAME": "an argument name", "BAREWORD": "a value", "$END": "end of input",
    "<END-OF-FILE>": "end of input",
}


def _expected(names: set[str] | frozenset[str]) -> str:
    shown = sorted({_TERMINAL_NAMES.get(name, name) for name in names if name != "BAREWORD"})
    return ", ".join(shown) if shown else "something else"


def _from_lark(text: str, exc: UnexpectedInput) -> DslSyntaxError:
    line, column = exc.line if exc.line > 0 else 1, exc.column if exc.column > 0 else 1
    if isinstance(exc, UnexpectedCharacters):
        char = exc.char
        if char == '"':
            return syntax_error(text, line, column, "unterminated string", "unterminated-string",
                                'close the string with "')
        if char == "'":
            return syntax_error(text, line, column, "strings use double quotes", "single-quote",
                                "write \"value\" instead of 'value'")
        if char == "$":
            return syntax_error(text, line, column, "a reference must be $prev, $prev.field or $prev[0]",
                                "bad-ref", "write $prev.items[0].id")
        allowed = _expected(exc.allowed or set())
        return syntax_error(text, line, column, f"unexpected character {char!r}; expected {allowed}",
                            "unexpected-character")
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        expected = set(exc.expected)
        if token.type == "$END":
            # Lark gives $END the last token's position; point past the end of the input instead.
            line = text.count("\n") + 1
            column = len(text) - (text.rfind("\n") + 1) + 1
            if "_LPAR" in expected:  # a bare verb: "ping"
                return syntax_error(text, line, column, "expected '(' after the verb name", "missing-parens",
                                    "call verbs with parentheses: verbs()")
            return syntax_error(text, line, column, f"request ends early; expected {_expected(expected)}",
                                "unexpected-end")
        if expected == {"_EQUAL"}:
            return syntax_error(text, line, column, f"argument has no value: expected '=' before {str(token)!r}",
                                "positional-arg", "arguments are named: verb(name=value)")
        if "_LPAR" in expected and token.type != "_LPAR":
            return syntax_error(text, line, column, f"expected '(' after the verb name, got {str(token)!r}",
                                "missing-parens", "call verbs with parentheses: verbs()")
        return syntax_error(text, line, column, f"unexpected {str(token)!r}; expected {_expected(expected)}",
                            "unexpected-token")
    if isinstance(exc, UnexpectedEOF):
        return syntax_error(text, line, column, "request ends early", "unexpected-end")
    return syntax_error(text, line, column, str(exc).splitlines()[0], "syntax-error")


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_OPS", "excerpt_at", "parse"]
