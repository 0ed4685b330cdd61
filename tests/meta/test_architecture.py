"""Keep the house honest: import boundaries, config/env access, hook docs."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from khive import hookspecs

ROOT = Path(__file__).resolve().parents[2]
COMPOSITION_ROOTS = {"khive/mcp_server.py", "khive/bootstrap.py", "khive/__main__.py"}


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_never_imports_packs() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in python_files("khive")
                 if any(name == "packs" or name.startswith("packs.") for name in imported_modules(p))]
    assert offenders == []


def test_packs_never_import_each_other() -> None:
    for pack_dir in sorted(p for p in (ROOT / "packs").iterdir() if p.is_dir() and p.name != "__pycache__"):
        for path in python_files(f"packs/{pack_dir.name}"):
            others = {name.split(".")[1] for name in imported_modules(path)
                      if name.startswith("packs.") and len(name.split(".")) > 1}
            assert others <= {pack_dir.name}, f"{path.relative_to(ROOT)} imports packs {others - {pack_dir.name}}"


def test_lower_layers_do_not_import_composition_roots() -> None:
    roots = {"khive.cli", "khive.mcp_server", "khive.bootstrap", "khive.daemon"}
    for path in python_files("khive"):
        relative = str(path.relative_to(ROOT))
        if relative in COMPOSITION_ROOTS or relative.startswith(("khive/daemon/", "khive/cli/")):
            continue
        bad = {name for name in imported_modules(path) if any(name == r or name.startswith(r + ".") for r in roots)}
        assert not bad, f"{relative} imports composition roots {bad}"


def test_only_composition_roots_read_the_environment() -> None:
    for folder in ("khive", "packs"):
        for path in python_files(folder):
            relative = str(path.relative_to(ROOT))
            if relative in COMPOSITION_ROOTS or relative.startswith(("khive/daemon/", "khive/cli/")):
                continue
            source = path.read_text(encoding="utf-8")
            assert "os.environ" not in source and "os.getenv" not in source, f"{relative} reads the environment"


def test_every_hook_is_prefixed_and_documented() -> None:
    hooks = [name for name, member in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(member, "khive_spec")]
    assert len(hooks) >= 7
    for name in hooks:
        assert name.startswith("khive_")
        doc = getattr(hookspecs, name).__doc__ or ""
        assert doc.strip() and len(doc.strip().splitlines()) == 1, f"{name} needs a one-line docstring"


def test_modules_stay_small() -> None:
    for folder in ("khive", "packs"):
        for path in python_files(folder):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            assert lines <= 600, f"{path.relative_to(ROOT)} has {lines} lines; split the concept out"
