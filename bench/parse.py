"""Parse benchmark: our full DSL parse path against a bare Lark LALR parse of the same text.

    .venv/bin/python bench/parse.py            # prints ONE JSON line
    .venv/bin/python bench/parse.py --quick    # fewer rounds, for a smoke test

For each case it measures, in microseconds per parse (median of several rounds):

* ``ours_us``      ``khive.dsl.parser._parse_cached.__wrapped__(text)``: the whole uncached path
                   (size and depth checks, Lark LALR with the inline transformer, $prev checks);
* ``bare_lark_us`` ``Lark(BARE_GRAMMAR, parser="lalr", lexer="contextual").parse(text)``: the same
                   language with plain tree building and no transformer (a JSON grammar for the JSON
                   form), i.e. what Lark alone costs;
* ``ratio``        ours / bare (goal: at most ``goal_ratio``);
* ``json_loads_us`` / ``orjson_loads_us`` for the JSON-form case;
* ``cached_us``    ``khive.dsl.parse(text)`` repeated on identical text (goal: ``goal_cached_us``).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable

import orjson
from lark import Lark

from khive.dsl import parse
from khive.dsl.parser import _parse_cached

GOAL_RATIO = 1.3
GOAL_CACHED_US = 5

# The request language with plain tree building: same tokens and rules as grammar/request.lark,
# without the aliases the transformer needs.
BARE_GRAMMAR = r"""
?start: call
      | call (PIPE call)+
      | LSQB [item (_COMMA item)* [_COMMA]] _RSQB
item: call (PIPE call)*
call: VERB _LPAR [arg (_COMMA arg)*] _RPAR
arg: NAME _EQUAL value
   | value
?value: STRING | NUMBER | TRUE | FALSE | NULL | REF | BAREWORD
      | LSQB [value (_COMMA value)*] _RSQB     -> array
      | _LBRACE [pair (_COMMA pair)*] _RBRACE  -> object
pair: (STRING | BAREWORD) _COLON value

VERB: /[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
BAREWORD.-1: /[A-Za-z_][A-Za-z0-9_.\-]*/
REF: /\$prev(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])*/
STRING: /"(?:[^"\\]|\\.)*"/s
NUMBER: /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/
TRUE.2: /true\b/
FALSE.2: /false\b/
NULL.2: /null\b/
PIPE: "|"
_COMMA: ","
_EQUAL: "="
_COLON: ":"
_LPAR: "("
_RPAR: ")"
LSQB: "["
_RSQB: "]"
_LBRACE: "{"
_RBRACE: "}"
%import common.WS
%ignore WS
"""

# Plain JSON, tree only: the baseline for the JSON form.
BARE_JSON_GRAMMAR = r"""
?start: value
?value: object | array | STRING | NUMBER | "true" -> true | "false" -> false | "null" -> null
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
STRING: /"(?:[^"\\]|\\.)*"/
NUMBER: /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/
%import common.WS
%ignore WS
"""

COMPLEX = (
    'pack.search(query="caf\\u00e9 \\"quoted\\" \\$prev\\n", limit=25, offset=-3, score=1.5e-3, '
    'exact=true, deleted=false, cursor=null, tags=["a", "b", "c\\td"], '
    'filter={"kind": ["doc", "note"], "range": {"from": 1, "to": [2, 3.5]}, "meta": {}})'
)
CASES: dict[str, str] = {
    "single_simple": "ping()",
    "single_complex": COMPLEX,
    "batch_3": '[a(x=1), pack.b(y="two", z=[1, 2]), c(q={"k": null})]',
    "batch_10": "[" + ", ".join(f'op{i}(id={i}, name="n{i}", flags=[true, false])' for i in range(10)) + "]",
    "chain_2": 'search(q="x", limit=5) | fetch(id=$prev.items[0].id)',
    "chain_5": (
        'search(q="x") | fetch(id=$prev.items[0].id) | summarize(text=$prev.body, n=3) '
        '| tag(doc=$prev, tags=["a", $prev.tag]) | save(record={"id": $prev.id, "at": $prev[0]})'
    ),
    "json_form_3": json.dumps(
        {"chain": [
            {"verb": "search", "args": {"q": "x", "limit": 5}},
            {"verb": "fetch", "args": {"id": "$prev.items[0].id"}},
            {"verb": "summarize", "args": {"text": "$prev.body", "opts": {"n": 3, "tags": ["a", "b"]}}},
        ]}
    ),
}


def per_call_us(fn: Callable[[], object], rounds: int, target_round_s: float) -> float:
    """Median µs per call over ``rounds`` rounds of N calls, N sized so a round takes ~target_round_s."""
    for _ in range(200):  # warm up (caches, branch predictors, lazy imports)
        fn()
    n, elapsed = 1, 0
    while True:
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter_ns() - start
        if elapsed >= target_round_s * 1e9 / 4 or n >= 1 << 22:
            break
        n *= 2
    n = max(1, int(n * target_round_s * 1e9 / max(elapsed, 1)))
    samples = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.perf_counter_ns()
            for _ in range(n):
                fn()
            samples.append((time.perf_counter_ns() - start) / n / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(samples)


def main() -> None:
    quick = "--quick" in sys.argv
    rounds, target = (3, 0.02) if quick else (9, 0.1)
    bare = Lark(BARE_GRAMMAR, parser="lalr", lexer="contextual")
    bare_json = Lark(BARE_JSON_GRAMMAR, parser="lalr", lexer="contextual")
    uncached = _parse_cached.__wrapped__
    results: dict[str, dict[str, float]] = {}
    for name, text in CASES.items():
        is_json = name.startswith("json")
        baseline = bare_json if is_json else bare
        # both must accept the text before timing it
        uncached(text)
        baseline.parse(text)
        parse(text)
        ours_us = per_call_us(lambda text=text: uncached(text), rounds, target)
        bare_us = per_call_us(lambda text=text, baseline=baseline: baseline.parse(text), rounds, target)
        row = {
            "ours_us": round(ours_us, 2),
            "bare_lark_us": round(bare_us, 2),
            "ratio": round(ours_us / bare_us, 3),
            "cached_us": round(per_call_us(lambda text=text: parse(text), rounds, target), 3),
            "chars": len(text),
        }
        if is_json:
            row["json_loads_us"] = round(per_call_us(lambda text=text: json.loads(text), rounds, target), 2)
            row["orjson_loads_us"] = round(per_call_us(lambda text=text: orjson.loads(text), rounds, target), 2)
            row["ratio_vs_json_loads"] = round(ours_us / row["json_loads_us"], 3)
        results[name] = row
    dsl_ratios = [row["ratio"] for name, row in results.items() if not name.startswith("json")]
    print(json.dumps({
        "bench": "parse",
        "cases": results,
        "cached_us": max(row["cached_us"] for row in results.values()),
        "max_dsl_ratio": max(dsl_ratios),
        "goal_ratio": GOAL_RATIO,
        "goal_cached_us": GOAL_CACHED_US,
        "python": sys.version.split()[0],
        "quick": quick,
    }))


if __name__ == "__main__":
    main()
