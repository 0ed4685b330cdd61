"""The error catalogue (khive/error_codes.py, docs/errors.md) against the codes the code base raises."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from khive.error_codes import CATALOGUE, CODES
from khive.errors import LEGACY_CODES

ROOT = Path(__file__).resolve().parents[2]
NOT_ERRORS = {"ProbeFinding", "finding", "Finding"}  # findings carry codes too, but are no errors
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*\Z")


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def raised_codes(tree: ast.AST) -> Iterator[str]:
    """Literal codes: ``code=...`` in a call that is not a finding, ``code = ...`` in an error class body,
    and the first argument of the daemon's ``protocol.error(...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) not in NOT_ERRORS:
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    yield str(keyword.value.value)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "error" and \
                    _name(node.func.value) == "protocol" and node.args and isinstance(node.args[0], ast.Constant):
                yield str(node.args[0].value)
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else \
                    [item.target] if isinstance(item, ast.AnnAssign) else []
                if any(isinstance(t, ast.Name) and t.id == "code" for t in targets) and \
                        isinstance(item.value, ast.Constant):  # type: ignore[union-attr]
                    yield str(item.value.value)  # type: ignore[union-attr]


def codes_in_source() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for folder in ("khive", "packs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for code in raised_codes(ast.parse(path.read_text(encoding="utf-8"))):
                found.setdefault(code, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_raised_code_is_in_the_catalogue() -> None:
    missing = {code: files for code, files in codes_in_source().items() if code not in CODES}
    assert missing == {}, "add each to khive/error_codes.py (meaning, when, what to do), then run khive.docgen"


def test_every_catalogued_code_is_raised_somewhere() -> None:
    raised = set(codes_in_source()) | {"internal_error"}  # khive.failure passes it by constant
    assert sorted(CODES - raised) == []


def test_codes_have_one_spelling_and_one_entry() -> None:
    codes = [entry.code for entry in CATALOGUE]
    assert len(codes) == len(set(codes))
    assert [code for code in codes if not SNAKE.match(code)] == []
    assert set(LEGACY_CODES.values()) <= CODES and not set(LEGACY_CODES) & CODES


def test_every_entry_says_what_to_do() -> None:
    assert [e.code for e in CATALOGUE if not (e.meaning and e.when and e.fix)] == []
