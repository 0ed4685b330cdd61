"""The parsed request as the daemon frame carries it (ADR 0044): ``render`` then ``from_data`` gives back
the request the edge parsed, value for value, for every golden case and for the strings that only look
like references."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from test_golden import canonical, golden_files, load_file, render_request

from khive.dsl import MAX_DEPTH, MAX_OPS, parse
from khive.dsl.jsonform import MAX_SOURCE_CHARS, from_data, render
from khive.errors import DslSyntaxError


def _parsed_cases() -> list[Any]:
    cases = []
    for path in golden_files():
        for case in load_file(path)[1]:
            try:
                parse(case.text)
            except DslSyntaxError:
                continue
            cases.append(pytest.param(case.text, id=case.id))
    return cases


def _through_the_wire(text: str) -> tuple[str, str]:
    request = parse(text)
    encoded = orjson.dumps(render(request)).decode()  # exactly what a frame carries
    return canonical(render_request(request)), canonical(render_request(from_data(orjson.loads(encoded), encoded)))


@pytest.mark.parametrize("text", _parsed_cases())
def test_every_golden_request_survives_the_wire(text: str) -> None:
    parsed, received = _through_the_wire(text)
    assert received == parsed


@pytest.mark.parametrize("text", [
    r'a(x="$prev.items[0]", y="\$prev", z="$previous", w="\\\\$prev.x", v=["$prev", {"k": "\$prev.k"}])',
    r'a(x=1) | b(y=$prev.items[0].id, z=[$prev, {"k": $prev.k}], w="$prev.id")',
    '[a(x=1.0, y=1, z=true, n=null), b(s="\\u00e9\\n\\"", big=18446744073709551615, neg=-9223372036854775808)]',
    r'a(x=-0.0, y=1e300, z=[], w={})',
])
def test_references_and_lookalike_strings_keep_their_meaning(text: str) -> None:
    parsed, received = _through_the_wire(text)
    assert received == parsed


def test_arguments_may_nest_as_deep_as_the_dsl_allows_and_no_deeper() -> None:
    deepest = "a(x=" + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + ")"
    chained = f"b() | {deepest}"
    for text in (deepest, chained):
        parsed, received = _through_the_wire(text)
        assert received == parsed
    too_deep: Any = []
    for _ in range(MAX_DEPTH):
        too_deep = [too_deep]
    with pytest.raises(DslSyntaxError) as info:
        from_data({"verb": "a", "args": {"x": too_deep}})
    assert info.value.reason == "too-deep"


@pytest.mark.parametrize(("data", "reason"), [
    ([], "empty-batch"),
    ([{"verb": "a"}] * (MAX_OPS + 1), "too-many-ops"),
    ({"verb": "a b"}, "verb-name"),
    ({"verb": "a", "args": [1]}, "json-shape"),
    ({"verb": "a", "args": {}, "extra": 1}, "json-shape"),
    ("a()", "json-shape"),
    ({"verb": "a", "args": {"x": "$prev.id"}}, "prev-outside-chain"),
    ({"chain": [{"verb": "a", "args": {"x": "$prev"}}]}, "prev-in-first-op"),
    ({"chain": [{"verb": "a"}, {"verb": "b", "args": {"x": "$prev[" + "9" * 5000 + "]"}}]}, "number-out-of-range"),
])
def test_data_that_is_not_a_parsed_request_is_refused_by_reason(data: Any, reason: str) -> None:
    with pytest.raises(DslSyntaxError) as info:
        from_data(data)
    assert info.value.reason == reason


def test_a_batch_nests_its_arguments_one_level_less_as_its_text_does() -> None:
    """DSL depth counts a batch's '[' too (golden/limits.txt): 63 lists fit in a single op, not in a batch."""
    value: Any = 1
    for _ in range(MAX_DEPTH - 1):
        value = [value]
    shown = orjson.dumps(value).decode()
    for text, data in ((f"a(x={shown})", {"verb": "a", "args": {"x": value}}),
                       (f"[a(x={shown}), a()]", [{"verb": "a", "args": {"x": value}}, {"verb": "a"}])):
        try:
            expected = parse(text)
        except DslSyntaxError as error:
            with pytest.raises(DslSyntaxError) as info:
                from_data(data)
            assert info.value.reason == error.reason == "too-deep"
        else:
            assert from_data(data) == expected


def test_a_parsed_request_longer_than_any_text_could_make_is_refused() -> None:
    """A raw socket client may send up to the 4 MiB frame; a parsed request holds what a 1 MiB text can."""
    largest_text = "a(x=[" + ",".join(["$prev"] * 174_000) + "])"  # just under 1 MiB of references
    parsed, received = _through_the_wire("b() | " + largest_text)
    assert received == parsed
    data = {"verb": "a", "args": {"x": "y" * MAX_SOURCE_CHARS}}
    with pytest.raises(DslSyntaxError) as info:
        from_data(data, orjson.dumps(data).decode())
    assert info.value.reason == "too-large"
