"""Keep the house honest: import boundaries, config/env access, hook docs."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from khive import hookspecs

ROOT = Path(__file__).resolve().parents[2]
COMPOSITION_ROOTS = {"khive/mcp_server.py", "khive/bootstrap.py", "khive/__main__.py"}
COMPOSITION_ROOTS |= {"khive/site/cli.py"}  # `khive site build|serve`: opens the project like the CLI does


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


# DESIGN.md's layers, top to bottom; a module not named here is a shared service (the bottom layer). A module
# imports only from its own layer or below; packs sit between the pack system and dispatch.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("composition roots", ("khive.__main__", "khive.cli", "khive.mcp_server", "khive.daemon", "khive.bootstrap",
                           "khive.runtime", "khive.mcp_sampling", "khive.http_sessions", "khive.docgen",
                           "khive.guide", "khive.agent_guide", "khive.agent_brief", "khive.site")),
    ("dispatch", ("khive.dispatch", "khive.dsl", "khive.audit", "khive.present", "khive.guard", "khive.execution",
                  "khive.failure")),
    ("packs", ("packs",)),
    # the gate is a policy value over verbs (no I/O), applied by dispatch: it sits beside the registry (ADR 0040)
    ("pack system", ("khive.hookspecs", "khive.plugins", "khive.verbs", "khive.gate", "khive.context",
                     "khive.services", "khive.overview", "khive.scaffold")),
)
SHARED_SERVICES = ("khive.audit.store", "khive.audit.events", "khive.audit.process")  # the audit store itself


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def layer_of(name: str) -> int:
    """0 for the shared services, higher for layers further up."""
    if within(name, SHARED_SERVICES):
        return 0
    return next((len(LAYERS) - rank for rank, (_, prefixes) in enumerate(LAYERS) if within(name, prefixes)), 0)


def test_imports_point_down_the_layers() -> None:
    upward = []
    for folder in ("khive", "packs"):
        for path in python_files(folder):
            me = module_name(path)
            for name in imported_modules(path):
                if name.startswith(("khive.", "packs.")) and not name.startswith("packs.") \
                        and layer_of(name) > layer_of(me):
                    upward.append(f"{me} imports {name}")
    assert upward == []


def test_packs_reach_no_dispatch_audit_or_transport_module() -> None:
    above = ("khive.dispatch", "khive.audit", "khive.mcp_server", "khive.mcp_sampling", "khive.http_sessions",
             "khive.daemon", "khive.cli", "khive.runtime", "khive.bootstrap", "khive.plugins")
    reaching = {f"{path.relative_to(ROOT)}: {name}" for path in python_files("packs")
                for name in imported_modules(path) if within(name, above) and not within(name, SHARED_SERVICES)}
    assert reaching == set()


def top_level_imports(path: Path, modules: set[str]) -> set[str]:
    """Modules imported outside functions (module level and ``if TYPE_CHECKING:``); ``from a import b`` is a.b
    when that is one of ``modules`` (a package importing its own modules is no cycle)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                for alias in child.names:
                    submodule = f"{child.module}.{alias.name}"
                    names.add(submodule if submodule in modules else child.module)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return names


def test_core_has_no_import_cycle() -> None:
    modules = {module_name(path): path for path in python_files("khive")}
    known = set(modules)
    graph = {name: sorted((top_level_imports(path, known) & known) - {name}) for name, path in modules.items()}
    done: set[str] = set()

    def cycle_from(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return [*trail[trail.index(name):], name]
        if name in done:
            return None
        for target in graph[name]:
            found = cycle_from(target, [*trail, name])
            if found:
                return found
        done.add(name)
        return None

    for name in sorted(graph):
        assert cycle_from(name, []) is None, " -> ".join(cycle_from(name, []) or [])


def test_the_daemon_never_imports_the_command_line() -> None:
    for path in python_files("khive/daemon"):
        assert not {name for name in imported_modules(path) if within(name, ("khive.cli",))}, path


# Modules loaded by a name in a string, each for a reason; everything else is a plain import statement.
IMPORTS_BY_STRING = {
    "khive/connections/driver.py": "DRIVERS, the one declared list: optional client libraries load only when used",
    "khive/plugins.py": "KHIVE_EXTRA_PACKS=module:attr, packs named by the operator",
    "khive/index/minilm.py": "the optional minilm extra, typed the same with or without it installed",
    "khive/redact.py": "the standard library's private regex parser (re._parser), which has no stub",
}


def loads_by_string(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in {"import_module", "__import__"}:
                return True
    return False


def test_modules_are_loaded_by_string_only_where_declared() -> None:
    loading = {str(path.relative_to(ROOT)) for folder in ("khive", "packs") for path in python_files(folder)
               if loads_by_string(path)}
    assert loading <= IMPORTS_BY_STRING.keys(), f"load by a plain import instead: {loading - IMPORTS_BY_STRING.keys()}"


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
