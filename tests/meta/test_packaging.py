"""The grammar lives in grammar/ but must ship inside the wheel (ADR 0002)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_grammar_and_packs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(ROOT)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("khive-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "khive/_grammar/request.lark" in names
        assert archive.read("khive/_grammar/request.lark") == (ROOT / "grammar" / "request.lark").read_bytes()
        assert "packs/core/__init__.py" in names
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "[khive.packs]" in archive.read(entry_points).decode()


def test_grammar_text_is_the_source_grammar() -> None:
    from khive.dsl.grammar import grammar_text

    assert grammar_text() == (ROOT / "grammar" / "request.lark").read_text(encoding="utf-8")
