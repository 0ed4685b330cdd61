"""The JSON form of a request.

    {"verb": "pack.verb", "args": {...}}          single
    [{"verb": ...}, {"verb": ...}]                parallel
    {"chain": [{"verb": ...}, {"verb": ...}]}     chain

A string argument that is exactly a reference (``"$prev.items[0].id"``) becomes a ``Ref``; a
leading backslash (``"\\\\$prev"`` in JSON text) keeps it a literal string.

The same form carries a parsed request from the edge (CLI, MCP) to the daemon: ``render`` turns a
``Request`` into this form's data and ``from_data`` builds it back, so a request is parsed once, at
the edge, and the daemon only checks the shape. orjson has decoded the frame already, which refuses
lone surrogates but reads an integer beyond 64 bits as a float: ``from_data`` range-checks the
integers of the frame's text itself.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

import orjson

from khive.dsl import values
from khive.dsl.errors import syntax_error
from khive.dsl.nodes import Mode, Op, Ref, Request
from khive.errors import DslSyntaxError

MAX_DEPTH = 64
MAX_OPS = 100
# The JSON form of the largest DSL text (1 MiB) is longer only by quotes around references and a backslash
# before literal "$prev..." strings: under twice as long. A raw socket client gets no more than that.
MAX_SOURCE_CHARS = 2 * 1024 * 1024
_VERB_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?\Z")
# Possessive: a long look-alike ("$prev.a.a...a!") fails in one pass, not by backtracking through every step.
_REF_RE = re.compile(r"\$prev(?:\.[A-Za-z_][A-Za-z0-9_]*+|\[[0-9]++\])*+\Z")
_REF_STEP_RE = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")


def parse_json_form(text: str) -> Request:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        message = str(exc.msg) if hasattr(exc, "msg") else str(exc)
        lowered = message.lower()
        if "surrogate" in lowered:  # an unpaired \uD800-\uDFFF escape
            raise syntax_error(text, exc.lineno or 1, exc.colno or 1, f"string holds a lone surrogate (an unpaired "
                               f"\\u escape): {message}", "lone-surrogate", values.SURROGATE_HINT) from None
        reason = "too-deep" if "recursion" in lowered or "depth" in lowered else "json-error"
        raise syntax_error(text, exc.lineno or 1, exc.colno or 1, f"invalid JSON: {message}", reason) from None
    values.check_json_integers(text)
    _check_depth(text, data)
    return _build(text, data)


def from_data(data: Any, source: str = "") -> Request:
    """The request that ``render`` made ``data`` from; a ``DslSyntaxError`` when ``data`` is not that form.
    Each op's arguments may nest as deep as the DSL allows inside its parentheses (and a batch's brackets,
    a level of the DSL text too). ``source``: the JSON text ``data`` was decoded from, whose integers are
    range-checked (orjson decodes one beyond 64 bits as a float, silently)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise syntax_error(source[:200], 1, 1, f"a parsed request is larger than {MAX_SOURCE_CHARS} characters "
                           "(its text would be over the 1 MiB cap)", "too-large", "split it into several requests")
    if source:
        values.check_decoded_integers(source)
    ops = data.get("chain") if isinstance(data, dict) and "chain" in data else data
    outer = 2 if isinstance(data, list) else 1  # [a(x=...)]: the batch's '[' and the op's '(' are two levels
    for op in ops if isinstance(ops, list) else [ops]:
        if isinstance(op, dict) and isinstance(op.get("args"), dict):
            _check_depth("", op["args"], outer)
    return _build("", data)


def render(request: Request) -> Any:
    """``request`` as this form's data (orjson-encodable): references as ``"$prev..."`` strings, a literal
    string that would read as one escaped with a leading backslash."""
    ops = [{"verb": op.verb, "args": {key: _unrefs(value) for key, value in op.args.items()}} for op in request.ops]
    if request.mode is Mode.CHAIN:
        return {"chain": ops}
    return ops if request.mode is Mode.PARALLEL else ops[0]


def _unrefs(value: Any) -> Any:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, str):
        return "\\" + value if value.lstrip("\\").startswith("$prev") else value
    if isinstance(value, (list, tuple)):
        return [_unrefs(item) for item in value]
    if isinstance(value, (dict, MappingProxyType)):
        return {key: _unrefs(item) for key, item in value.items()}
    return value


def _build(text: str, data: Any) -> Request:
    if isinstance(data, list):
        if not data:
            raise syntax_error(text, 1, 1, "empty batch: a batch needs at least one op", "empty-batch")
        if len(data) > MAX_OPS:
            raise syntax_error(text, 1, 1, f"a batch holds at most {MAX_OPS} ops, got {len(data)}", "too-many-ops")
        ops = tuple(_op(text, item, f"[{i}]") for i, item in enumerate(data))
        if any(_has_ref(op.args) for op in ops):
            raise syntax_error(text, 1, 1, "$prev is only available inside a chain", "prev-outside-chain",
                               'use {"chain": [...]} to pass results along')
        return Request(Mode.PARALLEL, ops)
    if isinstance(data, dict) and "chain" in data:
        if set(data) != {"chain"} or not isinstance(data["chain"], list) or not data["chain"]:
            raise syntax_error(text, 1, 1, 'a chain is {"chain": [op, op, ...]} with at least one op',
                               "json-shape")
        if len(data["chain"]) > MAX_OPS:
            raise syntax_error(text, 1, 1, f"a chain holds at most {MAX_OPS} ops", "too-many-ops")
        ops = tuple(_op(text, item, f"chain[{i}]") for i, item in enumerate(data["chain"]))
        if _has_ref(ops[0].args):
            raise syntax_error(text, 1, 1, "the first op of a chain has no $prev", "prev-in-first-op")
        return Request(Mode.CHAIN, ops)
    op = _op(text, data, "request")
    if _has_ref(op.args):
        raise syntax_error(text, 1, 1, "$prev is only available inside a chain", "prev-outside-chain")
    return Request(Mode.SINGLE, (op,))


def _op(text: str, item: Any, where: str) -> Op:
    if not isinstance(item, dict) or "verb" not in item:
        raise syntax_error(text, 1, 1, f'{where}: an op is an object {{"verb": "...", "args": {{...}}}}',
                           "json-shape")
    unknown = set(item) - {"verb", "args"}
    if unknown:
        raise syntax_error(text, 1, 1, f"{where}: unknown key(s) {sorted(unknown)}; an op has verb and args",
                           "json-shape")
    verb, args = item["verb"], item.get("args", {})
    if not isinstance(verb, str) or not _VERB_RE.match(verb):
        raise syntax_error(text, 1, 1, f"{where}: verb must be a name like pack.verb, got {verb!r}", "verb-name")
    if not isinstance(args, dict):
        raise syntax_error(text, 1, 1, f"{where}: args must be an object", "json-shape")
    return Op(verb, MappingProxyType({key: _refs(value) for key, value in args.items()}))


def _refs(value: Any) -> Any:
    if isinstance(value, str):
        if _REF_RE.match(value):  # finditer, not findall: a path of a million steps is not one long GIL hold
            return Ref(tuple(step[1] or _ref_index(step[2]) for step in _REF_STEP_RE.finditer(value, len("$prev"))))
        if value.startswith("\\") and value.lstrip("\\").startswith("$prev"):
            return value[1:]  # one backslash less: "\\$prev" -> "$prev", "\\\\$prev" -> "\\$prev"
        return value
    if isinstance(value, list):
        return [_refs(item) for item in value]
    if isinstance(value, dict):
        return {key: _refs(item) for key, item in value.items()}
    return value


def _ref_index(raw: str) -> int:
    problem = values.ref_index_problem(raw)
    if problem is not None:
        raise syntax_error("", 1, 1, problem, "number-out-of-range", values.REF_INDEX_HINT)
    return int(raw)


def _has_ref(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Ref):
            return True
        if isinstance(item, (dict, MappingProxyType)):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _check_depth(text: str, data: Any, depth: int = 1) -> None:
    """Whether ``data``, itself at nesting level ``depth``, nests no deeper than ``MAX_DEPTH``."""
    if text and text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # cannot nest deeper than the number of openers
    stack: list[tuple[Any, int]] = [(data, depth)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue  # scalars are not a nesting level
        if depth > MAX_DEPTH:
            raise syntax_error(text, 1, 1, f"nesting deeper than {MAX_DEPTH} levels", "too-deep",
                               "flatten the value")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


__all__ = ["DslSyntaxError", "from_data", "parse_json_form", "render"]
