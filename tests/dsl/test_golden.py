"""Golden DSL cases: request text beside the parse result it must produce.

Each ``tests/dsl/golden/<group>.txt`` holds cases. Text before the first ``----`` line is a
free-form preamble. Every case starts with a ``----`` line::

    ----
    # name: nested-object          (required; the test id is "<group>/<name>")
    # note: free text              (optional, any number; kept on regeneration)
    # expand: yes                  (optional; see below)
    # xfail: BUG ...               (optional; a known parser bug, strict xfail, expected output kept)
    a(x={"k": [1, 2]})             <- the input: every line up to "=>", joined with "\\n"
    =>
    {"mode": "single", "ops": [{"verb": "a", "args": {"x": {"k": [1, 2]}}}]}

The input has no trailing newline unless a blank line precedes ``=>``; it cannot contain a
line that is exactly ``----`` or ``=>`` and cannot begin with ``# ``.

Expected output, as JSON:

* success: ``{"mode": "single|parallel|chain", "ops": [{"verb": ..., "args": {...}}, ...]}``,
  a ``$prev`` reference rendered as ``{"$ref": ["items", 0, "id"]}``;
* failure: ``{"error": {"reason": ..., "line": N, "column": N, "hint": ...}}`` (``hint`` only
  when the error has one). Any exception other than ``DslSyntaxError`` fails the case.

Comparison is on canonical JSON text, so ``1`` and ``1.0`` and ``true`` stay distinct.

``# expand: yes`` turns each ``{{"json string" * N}}`` (or ``{{"json string"}}``) in the input
into that string repeated N times: for inputs too big or too unprintable to store literally
(1 MiB requests, 64 nested brackets, ``\\r``). The stored text keeps the macro.

Regenerate the expected outputs from the parser's actual results (review the diff!)::

    KHIVE_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/dsl/test_golden.py

Regeneration rewrites every golden file at collection time; it leaves alone cases marked
``# xfail`` (their expected output is the *correct* result, written by hand) and cases whose
parse raises something other than ``DslSyntaxError``. A case with an empty expected output
(nothing after ``=>``) fails until regenerated, so new cases can be added input-first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from khive.dsl import Ref, Request, parse
from khive.errors import DslSyntaxError

GOLDEN_DIR = Path(__file__).parent / "golden"
SEPARATOR = "----"
ARROW = "=>"
_HEADER_RE = re.compile(r"# (name|note|expand|xfail): ?(.*)\Z")
_MACRO_RE = re.compile(r'\{\{("(?:[^"\\]|\\.)*")(?:\s*\*\s*([0-9]+))?\}\}')
_ONE_LINE = 100


@dataclass
class Case:
    group: str
    name: str
    raw_input: str  # as stored, macros unexpanded
    expected: str  # JSON text, "" when not yet generated
    notes: list[str] = field(default_factory=list)
    expand: bool = False
    xfail: str = ""

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"

    @property
    def text(self) -> str:
        if not self.expand:
            return self.raw_input
        return _MACRO_RE.sub(lambda m: json.loads(m.group(1)) * int(m.group(2) or 1), self.raw_input)


# loading ------------------------------------------------------------------------------------------
def load_file(path: Path) -> tuple[str, list[Case]]:
    """Return (preamble, cases) of one golden file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line == SEPARATOR:
            chunks.append([])
        else:
            chunks[-1].append(line)
    preamble = "\n".join(chunks[0]).rstrip("\n")
    return preamble, [_parse_case(path, chunk) for chunk in chunks[1:]]


def _parse_case(path: Path, chunk: list[str]) -> Case:
    while chunk and not chunk[0].strip():
        chunk = chunk[1:]
    headers: dict[str, list[str]] = {}
    index = 0
    while index < len(chunk) and chunk[index].startswith("# "):
        match = _HEADER_RE.match(chunk[index])
        if not match:
            raise ValueError(f"{path.name}: bad header line {chunk[index]!r}")
        headers.setdefault(match.group(1), []).append(match.group(2).strip())
        index += 1
    where = f"{path.name}: case {headers.get('name', ['?'])[0]!r}"
    if len(headers.get("name", [])) != 1 or not headers["name"][0]:
        raise ValueError(f"{where}: needs exactly one '# name:' line (got {chunk[:3]!r})")
    try:
        arrow = chunk.index(ARROW, index)
    except ValueError:
        raise ValueError(f"{where}: no '{ARROW}' line") from None
    return Case(
        group=path.stem,
        name=headers["name"][0],
        raw_input="\n".join(chunk[index:arrow]),
        expected="\n".join(chunk[arrow + 1 :]).strip(),
        notes=headers.get("note", []),
        expand=headers.get("expand", ["no"])[0].lower() in {"yes", "true", "1"},
        xfail=headers.get("xfail", [""])[0],
    )


def dump_file(path: Path, preamble: str, cases: list[Case]) -> None:
    out = [preamble] if preamble else []
    for case in cases:
        out.append(SEPARATOR)
        out.append(f"# name: {case.name}")
        out.extend(f"# note: {note}" for note in case.notes)
        if case.expand:
            out.append("# expand: yes")
        if case.xfail:
            out.append(f"# xfail: {case.xfail}")
        out.append(case.raw_input)
        out.append(ARROW)
        out.append(case.expected)
        out.append("")
    path.write_text("\n".join(out) + ("\n" if out and out[-1] != "" else ""), encoding="utf-8")


# rendering ----------------------------------------------------------------------------------------
def render_value(value: Any) -> Any:
    if isinstance(value, Ref):
        return {"$ref": list(value.path)}
    if isinstance(value, Mapping):
        assert all(isinstance(key, str) for key in value), f"non-str key in {value!r}"
        return {key: render_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item) for item in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise AssertionError(f"parse produced a non-JSON value {value!r} ({type(value).__name__})")


def render_request(request: Request) -> dict[str, Any]:
    assert isinstance(request, Request), f"parse returned {type(request).__name__}"
    return {
        "mode": request.mode.value,
        "ops": [{"verb": op.verb, "args": render_value(op.args)} for op in request.ops],
    }


def render_error(error: DslSyntaxError) -> dict[str, Any]:
    body: dict[str, Any] = {"reason": error.reason, "line": error.line, "column": error.column}
    if error.hint:
        body["hint"] = error.hint
    return {"error": body}


def actual_result(text: str) -> dict[str, Any]:
    """The rendered outcome of parsing ``text``; exceptions other than DslSyntaxError propagate."""
    try:
        request = parse(text)
    except DslSyntaxError as error:
        return render_error(error)
    return render_request(request)


def canonical(result: Any) -> str:
    return json.dumps(result, sort_keys=True, ensure_ascii=False)


def pretty(result: dict[str, Any]) -> str:
    """One line when short; otherwise one op per line (the stored form of expected output)."""
    one_line = json.dumps(result, ensure_ascii=False)
    if "ops" not in result or len(one_line) <= _ONE_LINE:
        return one_line
    ops = ",\n".join("  " + json.dumps(op, ensure_ascii=False) for op in result["ops"])
    return f'{{"mode": {json.dumps(result["mode"])}, "ops": [\n{ops}\n]}}'


# collection (and regeneration) --------------------------------------------------------------------
def golden_files() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("*.txt"))


def regenerate(path: Path) -> None:
    preamble, cases = load_file(path)
    for case in cases:
        if case.xfail:
            continue
        try:
            case.expected = pretty(actual_result(case.text))
        except Exception:  # a crash: keep the stored expectation, the test will show the crash
            continue
    dump_file(path, preamble, cases)


def all_cases() -> list[Case]:
    regen = os.environ.get("KHIVE_REGEN_GOLDEN") == "1"
    cases: list[Case] = []
    for path in golden_files():
        if regen:
            regenerate(path)
        cases.extend(load_file(path)[1])
    seen: set[str] = set()
    for case in cases:
        assert case.id not in seen, f"duplicate golden case id {case.id}"
        seen.add(case.id)
    return cases


CASES = all_cases()


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_golden(case: Case) -> None:
    assert case.expected, f"{case.id}: no expected output; run KHIVE_REGEN_GOLDEN=1 (see module docstring)"
    expected = json.loads(case.expected)
    actual = actual_result(case.text)
    assert canonical(actual) == canonical(expected), f"{case.id}: input {case.text[:200]!r}"


def test_golden_files_exist() -> None:
    groups = {path.stem for path in golden_files()}
    assert {"single", "batch", "chain", "json_form", "errors", "limits"} <= groups


def test_golden_round_trip(tmp_path: Path) -> None:
    """The loader and writer agree: dumping what was loaded reproduces each file byte for byte."""
    for path in golden_files():
        preamble, cases = load_file(path)
        copy = tmp_path / path.name
        dump_file(copy, preamble, cases)
        assert copy.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), path.name
