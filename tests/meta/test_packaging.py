"""The grammar lives in grammar/ but must ship inside the wheel (ADR 0002)."""

from __future__ import annotations

import os
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


def test_a_foreign_top_level_packs_package_is_refused_by_name(tmp_path: Path) -> None:
    """ADR 0047: another distribution's ``packs`` first on the path must not be imported as khive's packs."""
    (tmp_path / "packs" / "wiki").mkdir(parents=True)
    (tmp_path / "packs" / "__init__.py").write_text("")
    (tmp_path / "packs" / "wiki" / "__init__.py").write_text("")
    code = ("from khive.errors import PackLoadError\nfrom khive.plugins import build_plugin_manager\n"
            "try:\n    build_plugin_manager(['wiki'])\n"
            "except PackLoadError as exc:\n    print(exc.code, exc.message)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("pack_load_error pack 'core': the top-level package 'packs' at "
                                  f"{tmp_path / 'packs' / '__init__.py'} is not khive's"), done.stdout
