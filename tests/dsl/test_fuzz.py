"""Property-based tests of ``khive.dsl.parse``.

The contract under test: for ANY text, ``parse`` returns a ``Request`` or raises
``DslSyntaxError`` (never another exception, never a hang), and a request generated from random
JSON values parses back to exactly those values, in both the DSL and the JSON form.
"""

from __future__ import annotations

import json
import os
import re
import string
import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from khive.dsl import MAX_DEPTH, Mode, Op, Ref, Request, parse
from khive.dsl.parser import _parse_cached
from khive.errors import DslSyntaxError

# KHIVE_FUZZ_EXAMPLES=5000 for a longer hunt; the default keeps the suite fast.
FUZZ = settings(
    max_examples=int(os.environ.get("KHIVE_FUZZ_EXAMPLES", "300")),
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def parse_or_syntax_error(text: str) -> Request | DslSyntaxError:
    """The property itself: a Request or a well-formed DslSyntaxError, nothing else."""
    try:
        request = parse(text)
    except DslSyntaxError as error:
        assert isinstance(error.reason, str) and error.reason
        assert error.line >= 1 and error.column >= 1
        assert "^" in error.excerpt
        orjson.dumps(error.to_dict())  # the error travels as JSON (CLI, daemon frame, MCP)
        str(error)
        return error
    assert isinstance(request, Request)
    assert request.mode in (Mode.SINGLE, Mode.PARALLEL, Mode.CHAIN)
    assert 1 <= len(request.ops) <= 100
    assert all(isinstance(op, Op) for op in request.ops)
    orjson.dumps([dict(op.args) for op in request.ops], default=str)  # so do its values (frames, audit, MCP)
    return request


# 1. arbitrary text --------------------------------------------------------------------------------
@FUZZ
@given(st.text())
def test_arbitrary_text(text: str) -> None:
    parse_or_syntax_error(text)


@FUZZ
@given(st.binary().map(lambda raw: raw.decode("utf-8", "surrogateescape")))
def test_arbitrary_bytes_with_surrogates(text: str) -> None:
    parse_or_syntax_error(text)


# 2. text from the DSL's own alphabet --------------------------------------------------------------
DSL_PIECES = [
    "(", ")", "[", "]", "{", "}", '"', "'", ",", ":", "=", "|", ".", "-", "+", "$", "$prev",
    "$prev.a", "$prev[0]", "[0]", "\\", "\\\\", '\\"', "\\$", "\\u", "\\u00e9", "\\ud800", "00e9",
    "a", "b", "pack", "verb", "id", "_x", "true", "false", "null", "truex", "e", "E", "0", "1",
    "42", "-1", "1.5", "1e5", " ", "\n", "\t", "\r\n", "é", "\x00", "😀", "#", ";",
    '{"verb": "a"', '"args": {', '{"chain": [', '"$prev"', '"\\\\$prev"',
]
dsl_ish = st.lists(st.sampled_from(DSL_PIECES), max_size=40).map("".join)


@FUZZ
@given(dsl_ish)
def test_dsl_alphabet(text: str) -> None:
    parse_or_syntax_error(text)


@FUZZ
@given(st.lists(st.sampled_from(DSL_PIECES), max_size=30).map(lambda pieces: "a(x=" + "".join(pieces)))
def test_dsl_alphabet_inside_a_call(text: str) -> None:
    parse_or_syntax_error(text)


# 4 (first, it feeds 3). generated valid requests ---------------------------------------------------
KEYWORDS = {"true", "false", "null"}  # lexed as literals: they cannot be argument names
_NAME_START = string.ascii_letters + "_"
names = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_NAME_START),
    st.text(alphabet=_NAME_START + string.digits, max_size=8),
).filter(lambda name: name not in KEYWORDS)
verbs = st.one_of(names, st.tuples(names, names).map(".".join))
whitespace = st.sampled_from(["", "", " ", "  ", "\n", "\t", " \n  "])
ref_paths = st.lists(st.one_of(names, st.integers(0, 10**6)), max_size=4).map(tuple)
interesting_text = st.one_of(
    st.text(),
    st.lists(st.sampled_from(["$prev", "$", "\\", '"', "'", ".", "[0]", "\n", "é", "{", "}", "a"])).map("".join),
)
# Both forms carry integers within 64 bits exactly (-2^63 .. 2^64-1); beyond that is a syntax error
# (test_values_that_cannot_be_carried).
BIG = 2**64 - 1
I64 = 2**63 - 1


def values(int_bound: int, refs: bool) -> st.SearchStrategy[Any]:
    """JSON values (nesting at most ~8 deep, far below the limit), optionally holding references."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(max(-int_bound, -(2**63)), int_bound),
        st.floats(allow_nan=False, allow_infinity=False),
        interesting_text,
        *([ref_paths.map(Ref)] if refs else []),
    )
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(interesting_text, children, max_size=4),
        ),
        max_leaves=8,
    )


VALUES = {(bound, refs): values(bound, refs) for bound in (BIG, I64) for refs in (False, True)}


@st.composite
def dsl_string(draw: st.DrawFn, value: str) -> str:
    """A DSL string literal for ``value``: JSON escapes, sometimes \\$ for '$', sometimes raw non-ASCII."""
    encoded = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        encoded = encoded.replace("$", "\\$")  # never part of a JSON escape, so always safe
    if draw(st.booleans()):  # a raw newline inside a string is allowed: unescape "\n" (not "\\n")
        encoded = re.sub(r"(\\\\)|\\n", lambda m: m.group(1) or "\n", encoded)
    return encoded


@st.composite
def dsl_value(draw: st.DrawFn, value: Any) -> str:
    ws = lambda: draw(whitespace)  # noqa: E731
    if isinstance(value, Ref):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return draw(dsl_string(value))
    if isinstance(value, list):
        return "[" + ws() + ("," + ws()).join(draw(dsl_value(item)) + ws() for item in value) + "]"
    assert isinstance(value, dict)
    pairs = [draw(dsl_string(key)) + ws() + ":" + ws() + draw(dsl_value(item)) + ws() for key, item in value.items()]
    return "{" + ws() + ("," + ws()).join(pairs) + "}"


@st.composite
def dsl_call(draw: st.DrawFn, verb: str, args: dict[str, Any]) -> str:
    ws = lambda: draw(whitespace)  # noqa: E731
    parts = [ws() + name + ws() + "=" + ws() + draw(dsl_value(value)) + ws() for name, value in args.items()]
    return verb + ws() + "(" + ",".join(parts) + ")"


Ops = list[tuple[str, dict[str, Any]]]


@st.composite
def requests(draw: st.DrawFn, int_bound: int = BIG) -> tuple[Mode, Ops]:
    """A valid request as data: its mode and (verb, args) per op; refs only after a chain's first op."""
    mode = draw(st.sampled_from(list(Mode)))
    count = {Mode.SINGLE: 1, Mode.PARALLEL: draw(st.integers(1, 5)), Mode.CHAIN: draw(st.integers(2, 5))}[mode]
    ops = []
    for index in range(count):
        arg_values = VALUES[int_bound, mode is Mode.CHAIN and index > 0]
        ops.append((draw(verbs), draw(st.dictionaries(names, arg_values, max_size=5))))
    return mode, ops


@st.composite
def dsl_requests(draw: st.DrawFn) -> tuple[str, tuple[Mode, Ops]]:
    """A valid request rendered as DSL text with random whitespace and string encodings."""
    mode, ops = draw(requests())
    ws = lambda: draw(whitespace)  # noqa: E731
    calls = [draw(dsl_call(verb, args)) for verb, args in ops]
    if mode is Mode.SINGLE:
        text = ws() + calls[0] + ws()
    elif mode is Mode.CHAIN:
        text = ws() + (ws() + "|" + ws()).join(calls) + ws()
    else:
        text = ws() + "[" + ws() + ("," + ws()).join(call + ws() for call in calls) + "]" + ws()
    return text, (mode, ops)


_REF_LIKE = re.compile(r"\$prev(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*\Z")


def json_form_value(value: Any) -> Any:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, str) and (_REF_LIKE.match(value) or
                                   (value.startswith("\\") and value.lstrip("\\").startswith("$prev"))):
        return "\\" + value
    if isinstance(value, list):
        return [json_form_value(item) for item in value]
    if isinstance(value, dict):
        return {key: json_form_value(item) for key, item in value.items()}
    return value


def json_form_text(mode: Mode, ops: Ops, indent: int | None) -> str:
    rendered = [{"verb": verb, "args": json_form_value(args)} for verb, args in ops]
    if mode is Mode.SINGLE:
        return json.dumps(rendered[0], indent=indent)
    if mode is Mode.CHAIN:
        return json.dumps({"chain": rendered}, indent=indent)
    return json.dumps(rendered, indent=indent)


def strict(value: Any) -> Any:
    """A form in which equal means the same JSON (1, 1.0, True and -0.0 vs 0.0 all differ)."""
    if isinstance(value, Ref):
        return ("ref", value.path)
    if value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, list):
        return ("list", tuple(strict(item) for item in value))
    return ("dict", tuple(sorted((key, strict(item)) for key, item in value.items())))


def plain_dsl_text(mode: Mode, ops: Ops) -> str:
    """The same request as canonical DSL text (no random whitespace or encodings)."""
    calls = [f"{verb}({', '.join(f'{name}={plain_dsl(value)}' for name, value in args.items())})"
             for verb, args in ops]
    if mode is Mode.CHAIN:
        return " | ".join(calls)
    if mode is Mode.PARALLEL:
        return "[" + ", ".join(calls) + "]"
    return calls[0]


def plain_dsl(value: Any) -> str:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(plain_dsl(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(key)}: {plain_dsl(item)}" for key, item in value.items()) + "}"
    return json.dumps(value)


def assert_parses_to(text: str, mode: Mode, ops: Ops) -> None:
    request = parse(text)
    assert request.mode is mode
    assert [op.verb for op in request.ops] == [verb for verb, _ in ops]
    for op, (_verb, args) in zip(request.ops, ops, strict=True):
        assert strict(dict(op.args)) == strict(args)


def _any_value(ops: Ops, predicate: Any) -> bool:
    stack: list[Any] = [args for _, args in ops]
    while stack:
        value = stack.pop()
        if predicate(value):
            return True
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


@FUZZ
@given(dsl_requests())
def test_generated_dsl_round_trip(generated: tuple[str, tuple[Mode, Ops]]) -> None:
    text, (mode, ops) = generated
    assert_parses_to(text, mode, ops)


@FUZZ
@given(requests(int_bound=I64), st.sampled_from([None, 2]))
def test_generated_json_form_round_trip(generated: tuple[Mode, Ops], indent: int | None) -> None:
    mode, ops = generated
    assert_parses_to(json_form_text(mode, ops, indent), mode, ops)


@FUZZ
@given(requests(int_bound=I64))
def test_dsl_and_json_form_agree(generated: tuple[Mode, Ops]) -> None:
    mode, ops = generated
    from_dsl, from_json = parse(plain_dsl_text(mode, ops)), parse(json_form_text(mode, ops, None))
    assert from_dsl.mode is from_json.mode is mode
    assert [(op.verb, strict(dict(op.args))) for op in from_dsl.ops] == \
        [(op.verb, strict(dict(op.args))) for op in from_json.ops]


OUT_OF_RANGE = st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1))
LONE_SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@FUZZ
@given(OUT_OF_RANGE, LONE_SURROGATE, st.booleans(), st.booleans())
def test_values_that_cannot_be_carried(big: int, surrogate: str, json_form: bool, escaped: bool) -> None:
    """An integer beyond 64 bits or a lone surrogate (escaped or raw) is a syntax error in both forms."""
    number = {"verb": "a", "args": {"x": [1, big]}} if json_form else f"a(x=[1, {big}])"
    with pytest.raises(DslSyntaxError) as caught:
        parse(json.dumps(number) if json_form else str(number))
    assert caught.value.reason == "number-out-of-range"
    literal = f'"\\u{ord(surrogate):04x}"' if escaped else f'"{surrogate}"'
    text = f'{{"verb": "a", "args": {{"x": {literal}}}}}' if json_form else f"a(x={literal})"
    with pytest.raises(DslSyntaxError) as caught:
        parse(text)
    assert caught.value.reason == "lone-surrogate"
    caught.value.excerpt.encode("utf-8")  # the error itself can travel


# 3. mutations of valid requests --------------------------------------------------------------------
SEEDS = [
    "ping()",
    'pack.verb(name="x", opts={"k": [1, 2.5, true, null]})',
    "[a(x=1), b(y=2)]",
    'search(q="x") | fetch(id=$prev.items[0].id) | c(v=[$prev, {"k": $prev[0]}])',
    'a(s="caf\\u00e9 \\"q\\" \\$prev\nline", n=-1.5e-3)',
    '{"verb": "a", "args": {"x": [1, {"y": "$prev"}]}}',
    '[{"verb": "a"}, {"verb": "b", "args": {"x": "\\\\$prev"}}]',
    '{"chain": [{"verb": "a"}, {"verb": "b", "args": {"id": "$prev.id"}}]}',
]
MUTATION_CHARS = st.sampled_from(list("()[]{}\"',:=|.-$\\ \n") + list(string.ascii_letters[:6]) + ["0", "9", "é"])


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.one_of(st.sampled_from(SEEDS), dsl_requests().map(lambda generated: generated[0])))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        position = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:position] + draw(MUTATION_CHARS) + text[position:]
        elif kind == "delete":
            end = position + draw(st.integers(1, 3))
            text = text[:position] + text[end:]
        elif kind == "replace":
            text = text[:position] + draw(MUTATION_CHARS) + text[position + 1 :]
        else:
            end = position + draw(st.integers(1, 8))
            text = text[:position] + text[position:end] * 2 + text[end:]
    return text


@FUZZ
@given(mutated())
def test_mutated_requests(text: str) -> None:
    parse_or_syntax_error(text)


@FUZZ
@given(mutated())
def test_uncached_parse_matches_cached(text: str) -> None:
    """The cache is transparent: same outcome with and without it."""
    first = parse_or_syntax_error(text)
    try:
        second: Request | DslSyntaxError = _parse_cached.__wrapped__(text)
    except DslSyntaxError as error:
        second = error
    if isinstance(first, DslSyntaxError):
        assert isinstance(second, DslSyntaxError)
        assert (first.reason, first.line, first.column) == (second.reason, second.line, second.column)
    else:
        assert second == first


# very deep nesting -------------------------------------------------------------------------------
DEEP = 100_000
DEEP_TEXTS = {
    "dsl-list-unclosed": "a(x=" + "[" * DEEP,
    "dsl-list-balanced": "a(x=" + "[" * DEEP + "]" * DEEP + ")",
    "dsl-object": "a(x=" + '{"k": ' * DEEP + "1" + "}" * DEEP + ")",
    "dsl-batch-brackets": "[" * DEEP,
    "dsl-parens": "a" + "(" * DEEP,
    "dsl-mixed": "a(x=" + "[{(" * DEEP,
    "json-list": '{"verb": "a", "args": {"x": ' + "[" * DEEP + "]" * DEEP + "}}",
    "json-object": '{"verb": "a", "args": {"x": ' + '{"k": ' * DEEP + "1" + "}" * DEEP + "}}",
    "json-parallel": "[" + '{"k": ' * DEEP,
}


@pytest.mark.parametrize("name", list(DEEP_TEXTS))
def test_very_deep_nesting_is_a_syntax_error(name: str) -> None:
    with pytest.raises(DslSyntaxError):
        _parse_cached.__wrapped__(DEEP_TEXTS[name])


@pytest.mark.parametrize("name", list(DEEP_TEXTS))
def test_very_deep_nesting_reason_is_too_deep(name: str) -> None:
    with pytest.raises(DslSyntaxError) as caught:
        _parse_cached.__wrapped__(DEEP_TEXTS[name])
    assert caught.value.reason == "too-deep", caught.value


def test_depth_limit_is_the_documented_one() -> None:
    assert MAX_DEPTH == 64
    parse("a(x=" + "[" * 63 + "]" * 63 + ")")
    with pytest.raises(DslSyntaxError, match="deeper"):
        parse("a(x=" + "[" * 64 + "]" * 64 + ")")


# no hang on adversarial input ---------------------------------------------------------------------
# Each text is built inside a child process that must finish within HANG_TIMEOUT_S: a hang (or a
# quadratic blow-up) shows as a timeout instead of stalling the suite. The pieces stay well under
# 1 MiB; the full 1 MiB is what an attacker would send, so quadratic behaviour here means hours there.
HANG_TIMEOUT_S = 4
ADVERSARIAL = {
    # Over 64 brackets, then an unterminated string full of escaped quotes: parser._check_depth's
    # string-blanking regex restarts at every '"' and scans to the end each time.
    "unterminated-escaped-quotes": r"""'[' * 65 + '"' + '\\"' * 64_000""",
    "unterminated-escaped-quotes-trailing-backslash": r"""'a(x=' + '[' * 65 + '"' + '\\"' * 64_000 + '\\'""",
}
HARMLESS = {
    "many-closed-strings": """'a(x=' + '[' * 65 + '"a", ' * 40_000""",
    "many-brackets-in-strings": """'a(x="' + '[{(' * 100_000 + '")'""",
    "many-tokens": """'a(x=[' + '1, ' * 50_000 + '1])'""",
    "many-quotes-no-brackets": r"""'a(x="' + '\\"' * 200_000""",
    "many-dollars": """'a() | b(x=' + '$prev.a' * 30_000 + ')'""",
    "many-backslashes": r"""'a(x="' + '\\' * 300_001 + '")'""",
}


def _parse_in_child(expression: str) -> None:
    code = (
        "from khive.dsl import parse\n"
        "from khive.errors import DslSyntaxError\n"
        f"text = {expression}\n"
        "try:\n    parse(text)\nexcept DslSyntaxError:\n    pass\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=HANG_TIMEOUT_S, capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"parse did not finish within {HANG_TIMEOUT_S} s")


@pytest.mark.parametrize(
    "expression",
    [pytest.param(expr, id=name, marks=[]) for name, expr in ADVERSARIAL.items()]
    + [pytest.param(expr, id=name) for name, expr in HARMLESS.items()],
)
def test_adversarial_input_does_not_hang(expression: str) -> None:
    _parse_in_child(expression)
