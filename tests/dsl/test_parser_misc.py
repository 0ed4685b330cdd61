"""The parser's surroundings: the parse cache, thread safety, error excerpts and the error's shape."""

from __future__ import annotations

import json
import threading
from types import MappingProxyType

import pytest

from khive.dsl import Mode, Ref, Request, parse
from khive.dsl.errors import excerpt_at
from khive.dsl.parser import _parse_cached
from khive.errors import DslSyntaxError, KhiveError


def syntax_error(text: str) -> DslSyntaxError:
    with pytest.raises(DslSyntaxError) as caught:
        parse(text)
    return caught.value


# the parse cache ---------------------------------------------------------------------------------
def test_same_text_returns_the_identical_request() -> None:
    text = 'cache.probe(x=[1, {"k": "v"}]) | other(y=$prev.id)'
    first = parse(text)
    assert parse(text) is first
    assert parse("".join(list(text))) is first  # an equal string built separately, not just the same object


def test_cache_hit_is_counted() -> None:
    text = "cache.counted(n=1)"
    parse(text)
    hits = _parse_cached.cache_info().hits
    parse(text)
    assert _parse_cached.cache_info().hits == hits + 1


def test_different_text_gives_a_different_request() -> None:
    assert parse("cache.a(x=1)") is not parse("cache.a(x=2)")
    assert parse("cache.a(x=1)") is not parse("cache.a( x=1 )")
    assert parse("cache.a(x=1)") == parse("cache.a( x=1 )")  # equal values, separate cache entries


def test_uncached_parse_builds_an_equal_new_request() -> None:
    text = "cache.fresh(x=[1, 2])"
    cached = parse(text)
    fresh = _parse_cached.__wrapped__(text)
    assert fresh == cached and fresh is not cached


def test_errors_are_raised_every_time() -> None:
    first = syntax_error("cache.bad(x=bad)")
    second = syntax_error("cache.bad(x=bad)")
    assert (first.reason, first.line, first.column) == (second.reason, second.line, second.column)


def test_cached_request_args_are_read_only() -> None:
    request = parse("cache.ro(x=1)")
    assert isinstance(request.ops[0].args, MappingProxyType)
    with pytest.raises(TypeError):
        request.ops[0].args["x"] = 2  # type: ignore[index]


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        parse(b"ping()")  # type: ignore[arg-type]


# thread safety -----------------------------------------------------------------------------------
THREADS = 8
PER_THREAD = 150


def _expected(thread: int, index: int) -> tuple[str, object]:
    """A text unique to (thread, index) and what parsing it must give: a value or an error position."""
    kind = index % 3
    if kind == 0:
        return f't{thread}.op{index}(n={index}, s="{thread}-{index}", l=[{thread}, {{"i": {index}}}])', (
            "ok", Mode.SINGLE, {"n": index, "s": f"{thread}-{index}", "l": [thread, {"i": index}]})
    if kind == 1:
        return f"a{thread}(x={index}) | b{index}(y=$prev.k{thread}[{index}])", (
            "ok", Mode.CHAIN, {"y": Ref((f"k{thread}", index))})
    # errors raised from inside the transformer read the text from a thread-local: the excerpt
    # must show this thread's own text
    prefix = f"t{thread}(i={index},{' ' * (thread + index % 7)}k="
    return f"{prefix}word{thread}x{index})", ("error", 1, len(prefix) + 1)


def _check(thread: int, index: int, parse_fn: object) -> None:
    text, expected = _expected(thread, index)
    if expected[0] == "ok":
        request = parse_fn(text)  # type: ignore[operator]
        assert isinstance(request, Request)
        assert request.mode is expected[1]
        assert dict(request.ops[-1].args) == expected[2]
    else:
        with pytest.raises(DslSyntaxError) as caught:
            parse_fn(text)  # type: ignore[operator]
        error = caught.value
        assert error.reason == "bareword-value"
        assert (error.line, error.column) == expected[1:]
        assert error.excerpt.split("\n")[0] == text
        assert error.hint == f'did you mean k="word{thread}x{index}"?'


@pytest.mark.parametrize("parse_fn", [parse, _parse_cached.__wrapped__], ids=["cached", "uncached"])
def test_parse_from_many_threads(parse_fn: object) -> None:
    barrier = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            barrier.wait()
            for _round in range(2):  # the second round hits the cache when parse_fn is cached
                for index in range(PER_THREAD):
                    _check(thread, index, parse_fn)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(thread,)) for thread in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, repr(failures[:3])


def test_threads_share_one_cached_request() -> None:
    text = "shared.text(x=[1, 2, 3])"
    results: list[Request] = []
    barrier = threading.Barrier(THREADS)

    def work() -> None:
        barrier.wait()
        results.append(parse(text))

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == THREADS
    assert all(result == results[0] for result in results)
    assert parse(text) in results


# the excerpt and its caret -----------------------------------------------------------------------
def caret_target(error: DslSyntaxError) -> str:
    """The character of the excerpt's source line that the caret points at."""
    shown, caret = error.excerpt.split("\n")
    assert caret.strip() == "^", error.excerpt
    return shown[caret.index("^")]


@pytest.mark.parametrize(
    ("text", "line", "column", "char"),
    [
        ("get(id=abc)", 1, 8, "a"),
        ("a(x=1, y=2, x=3)", 1, 13, "x"),
        ("a(x='s')", 1, 5, "'"),
        ("a(\n  x=1,\n  y=oops\n)", 3, 5, "o"),
        ('a(s="ééé😀", t=bad)', 1, 15, "b"),  # columns count characters, not bytes
        ("a() | b(x=$next)", 1, 11, "$"),
        ("[a(), b(),]", 1, 10, ","),
        ("a(x=" + "[" * 64 + "]" * 64 + ")", 1, 68, "["),
        ("a(\r\n  y=bad\r\n)", 2, 5, "b"),
    ],
)
def test_caret_points_at_the_offending_character(text: str, line: int, column: int, char: str) -> None:
    error = syntax_error(text)
    assert (error.line, error.column) == (line, column)
    assert caret_target(error) == char
    assert error.excerpt.split("\n")[0] in text.split("\n")[line - 1] or error.excerpt.startswith("...")


@pytest.mark.parametrize("column", [1, 2, 30, 31, 32, 100, 150, 199, 200])
def test_caret_in_a_long_line_is_windowed(column: int) -> None:
    source = "".join(chr(ord("A") + i % 26) for i in range(200))
    shown, caret = excerpt_at(source, 1, column).split("\n")
    assert len(shown) <= 60 + 6  # the window plus "..." on either side
    assert shown[caret.index("^")] == source[column - 1]
    assert shown.startswith("...") == (column - 1 - 30 > 0)


def test_caret_at_the_end_of_a_long_request() -> None:
    text = 'a(x="' + "y" * 100 + '", z=bad)'
    error = syntax_error(text)
    assert error.column == text.index("bad") + 1
    assert caret_target(error) == "b"
    assert error.excerpt.startswith("...")


def test_excerpt_shows_the_right_line_of_a_multiline_request() -> None:
    error = syntax_error('search(q="x")\n  | fetch(id=$prev.items[0].id)\n  | keep(when=soon)')
    assert error.line == 3
    assert error.excerpt.split("\n")[0] == "  | keep(when=soon)"
    assert caret_target(error) == "s"


def test_excerpt_of_a_too_large_request_is_small() -> None:
    error = syntax_error("ping()" + " " * (1024 * 1024))
    assert error.reason == "too-large"
    assert len(error.excerpt) < 300


# the error's shape -------------------------------------------------------------------------------
def test_to_dict_shape_with_hint() -> None:
    error = syntax_error("get(id=abc)")
    assert isinstance(error, KhiveError)
    as_dict = error.to_dict()
    assert as_dict == {
        "code": "parse_error",
        "message": "bare word 'abc' is not a value",
        "details": {
            "reason": "bareword-value",
            "line": 1,
            "column": 8,
            "excerpt": "get(id=abc)\n       ^",
            "hint": 'did you mean id="abc"?',
        },
    }
    assert json.loads(json.dumps(as_dict)) == as_dict


def test_to_dict_shape_without_hint() -> None:
    error = syntax_error("a(x=1, x=2)")
    details = error.to_dict()["details"]
    assert set(details) == {"reason", "line", "column", "excerpt"}
    assert details["reason"] == "duplicate-arg" and error.hint == ""


def test_str_carries_position_reason_excerpt_and_hint() -> None:
    error = syntax_error("get(id=abc)")
    text = str(error)
    assert "(line 1, column 8) [bareword-value]" in text
    assert "get(id=abc)\n       ^" in text
    assert text.endswith('hint: did you mean id="abc"?')
    assert error.code == "parse_error"


def test_json_form_errors_have_the_same_shape() -> None:
    error = syntax_error('{"verb": "a",\n "args": {"x": }}')
    details = error.to_dict()["details"]
    assert details["reason"] == "json-error" and (details["line"], details["column"]) == (2, 16)
    assert caret_target(error) == "}"


# positions carried by the parsed request ---------------------------------------------------------
def test_ops_and_refs_carry_their_positions() -> None:
    request = parse("search(q=1)\n  | fetch(id=$prev.items[0].id)")
    assert [(op.line, op.column) for op in request.ops] == [(1, 1), (2, 5)]
    ref = request.ops[1].args["id"]
    assert isinstance(ref, Ref) and (ref.line, ref.column) == (2, 14)
    assert str(ref) == "$prev.items[0].id"


def test_refs_compare_by_path_only() -> None:
    assert Ref(("a", 0), line=1, column=2) == Ref(("a", 0), line=9, column=9)
    assert Ref(("a",)) != Ref(("a", 0))
