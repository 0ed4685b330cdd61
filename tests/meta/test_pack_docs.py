"""docs/packs.md is enough to write a pack: every hook is documented there, and its example is a tested file."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from khive import hookspecs

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "packs.md"
TRACKED_TOP = {".ci", "bench", "docs", "grammar", "khive", "packs", "tests"}  # not .venv, caches


def hooks() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in inspect.getmembers(hookspecs, inspect.isfunction)
            if name.startswith("khive_")}


def test_every_hook_has_a_row_with_its_signature() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(khive_\w+)\((.*?)\) -> ", text, flags=re.MULTILINE))
    assert sorted(rows) == sorted(hooks()), "add a row per hook to docs/packs.md, section 2"
    for name, signature in hooks().items():
        assert rows[name] == ", ".join(str(p).replace("'", "") for p in signature.parameters.values()), name


def test_the_files_the_guide_points_to_exist() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:tests|khive|packs)/[\w/.]+\.py)`", text))
    named |= {link.removeprefix("../") for link in re.findall(r"\]\((\.\./[\w/.]+)\)", text)}
    assert named and sorted(path for path in named if not (ROOT / path).exists()) == []
    assert "tests/packs/example/notes_pack.py" in named


def test_the_readme_layout_lists_every_folder() -> None:
    """Every top-level folder, and every folder of khive/ and packs/, has a line in the README's Layout."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    listed = {line.split()[0] for line in block.splitlines() if line.strip() and not line.startswith(" " * 6)}
    folders = {f"{path.name}/" for path in ROOT.iterdir() if path.is_dir() and path.name in TRACKED_TOP}
    folders |= {f"{path.name}/" for parent in ("khive", "packs") for path in (ROOT / parent).iterdir()
                if path.is_dir() and (path / "__init__.py").exists()}
    assert sorted(folders - listed) == [], "add a line per folder to the README's Layout section"

