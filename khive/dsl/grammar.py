"""Locate ``request.lark``: inside the installed wheel, or in the source tree's ``grammar/``."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

GRAMMAR_NAME = "request.lark"


@cache
def grammar_text() -> str:
    # A wheel carries the grammar at khive/_grammar/ (force-included, ADR 0002); a source
    # checkout or editable install reads it from the top-level grammar/ directory.
    packaged = resources.files("khive").joinpath("_grammar", GRAMMAR_NAME)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = Path(__file__).resolve().parents[2] / "grammar" / GRAMMAR_NAME
    if source.is_file():
        return source.read_text(encoding="utf-8")
    raise FileNotFoundError(f"khive grammar {GRAMMAR_NAME} not found in the package or at {source}")
