"""The plugin manager factory: discover packs, select them, validate them, fail fast.

Built-in packs are registered through the same ``khive.packs`` entry points as third-party ones.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from khive import hookspecs
from khive.connections.config import ConnectionConfig
from khive.errors import PackLoadError
from khive.hookspecs import ConfigSection, EdgeRule, EmbedderSpec, PackInfo, ProjectDirectory, SchemaPlan
from khive.sqlite_util import open_wal
from khive.verbs import Verb, VerbRegistry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "khive.packs"
ALWAYS_LOADED = ("core",)
BUILTIN_ROOT, BUILTIN_MARKER = "packs", "KHIVE_BUILTIN_PACKS"  # the top-level package's name is generic (ADR 0047)


def available_packs() -> dict[str, Any]:
    """Pack name -> entry point, for every installed pack."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load(name: str, entry_point: Any) -> object:
    """Load one pack; a built-in one only from khive's own ``packs`` package (ADR 0047)."""
    if entry_point.value.split(":", 1)[0].split(".", 1)[0] == BUILTIN_ROOT:
        root = importlib.import_module(BUILTIN_ROOT)  # the package the entry point would import from
        if not getattr(root, BUILTIN_MARKER, False):
            where = getattr(root, "__file__", None) or "an unknown location"
            raise PackLoadError(
                f"pack {name!r}: the top-level package {BUILTIN_ROOT!r} at {where} is not khive's (another "
                f"distribution installs a package of that name); uninstall it or use a separate virtualenv",
                details={"pack": name, "module": entry_point.value, "file": where})
    plugin: object = entry_point.load()
    return plugin


def build_plugin_manager(selected: Sequence[str] | None = None,
                         extra: Iterable[object] = ()) -> tuple[pluggy.PluginManager, tuple[PackInfo, ...]]:
    """Load the selected packs (default: all installed) plus ``extra`` plugin objects."""
    available = available_packs()
    names = list(dict.fromkeys([*ALWAYS_LOADED, *(selected if selected is not None else sorted(available))]))
    unknown = [name for name in names if name not in available]
    if unknown:
        raise PackLoadError(
            f"unknown pack(s) {', '.join(unknown)} in KHIVE_PACKS; installed packs: {', '.join(sorted(available))}",
            details={"unknown": unknown, "available": sorted(available)},
        )
    plugins: list[object] = [_load(name, available[name]) for name in names]
    plugins.extend(extra)

    pm = pluggy.PluginManager("khive")
    pm.add_hookspecs(hookspecs)
    infos: list[PackInfo] = []
    for plugin in plugins:
        info = _pack_info(plugin)
        if pm.get_plugin(info.name) is not None:
            raise PackLoadError(f"pack {info.name!r} is registered twice")
        pm.register(plugin, name=info.name)
        infos.append(info)
    loaded = {info.name for info in infos}
    for info in infos:
        missing = [name for name in info.requires if name not in loaded]
        if missing:
            raise PackLoadError(
                f"pack {info.name!r} requires {', '.join(missing)}, which is not loaded; add it to KHIVE_PACKS",
                details={"pack": info.name, "missing": missing},
            )
    pm.check_pending()
    return pm, tuple(infos)


def _pack_info(plugin: object) -> PackInfo:
    hook = getattr(plugin, "khive_pack_info", None)
    if hook is None:
        shown = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__
        raise PackLoadError(f"plugin {shown} does not define khive_pack_info()")
    info = hook()
    if not isinstance(info, PackInfo):
        raise PackLoadError(f"khive_pack_info() of {plugin!r} must return a PackInfo")
    return info


def collect_verbs(pm: pluggy.PluginManager) -> VerbRegistry:
    registry = VerbRegistry()
    for impl in pm.hook.khive_register_verbs.get_hookimpls():
        declared: Sequence[Verb] = impl.function()  # type: ignore[assignment]  # pluggy is untyped here
        for verb in declared:
            registry.add(replace(verb, pack=impl.plugin_name))
    return registry


def collect_embedders(pm: pluggy.PluginManager) -> dict[str, EmbedderSpec]:
    found: dict[str, EmbedderSpec] = {}
    for specs in pm.hook.khive_register_embedders():
        for spec in specs:
            found[spec.name] = spec
    return found


def collect_edge_rules(pm: pluggy.PluginManager) -> tuple[EdgeRule, ...]:
    return tuple(rule for rules in pm.hook.khive_edge_rules() for rule in rules)


def collect_project_directories(pm: pluggy.PluginManager) -> tuple[ProjectDirectory, ...]:
    """Every pack's folders, in pack order, each path once."""
    found: dict[str, ProjectDirectory] = {}
    for declared in reversed(pm.hook.khive_project_directories()):  # pluggy calls the last registered first
        for directory in declared:
            found.setdefault(directory.path, directory)
    return tuple(found.values())


def check_pack_config(pm: pluggy.PluginManager, connections: Mapping[str, ConnectionConfig]) -> None:
    """Every connection's pack-owned blocks, validated by the packs that own them (a ConfigError stops the start)."""
    sections: list[ConfigSection] = [section for declared in pm.hook.khive_config_sections() for section in declared]
    for name, connection in connections.items():
        declared = connection.model_dump(by_alias=True)
        for section in sections:
            block = declared.get(section.key)
            if block is not None:
                section.check(name, block)


def apply_schema_plans(pm: pluggy.PluginManager, database: Path) -> dict[str, str]:
    """Apply every pack's schema plans; a failing pack is logged and reported, never fatal."""
    status: dict[str, str] = {}
    database.parent.mkdir(parents=True, exist_ok=True)
    for impl in pm.hook.khive_schema_plans.get_hookimpls():
        pack = impl.plugin_name
        try:
            plans: Sequence[SchemaPlan] = impl.function()  # type: ignore[assignment]  # pluggy is untyped here
            db = open_wal(database)
            try:
                for plan in plans:
                    for statement in plan.statements:
                        db.execute(statement)
            finally:
                db.close()
            status[pack] = "ok"
        except Exception as exc:  # one pack's bad plan must not stop the server
            log.error("schema plan of pack %s failed: %s", pack, exc)
            status[pack] = f"failed: {exc}"
    return status


def selected_from_env(env: Mapping[str, str]) -> list[str] | None:
    raw = env.get("KHIVE_PACKS", "").strip()
    if not raw:
        return None
    return [name.strip() for name in raw.split(",") if name.strip()]


def plugins_from_env(env: Mapping[str, str]) -> list[object]:
    """``KHIVE_EXTRA_PACKS=module:attr,...``: packs loaded by import path, without an entry point.

    For development and for tests that run packs in other processes (a spawned daemon); the
    variable is part of the daemon identity, so a client and a daemon always agree on it.
    """
    raw = env.get("KHIVE_EXTRA_PACKS", "").strip()
    found: list[object] = []
    for spec in (item.strip() for item in raw.split(",")):
        if not spec:
            continue
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
            found.append(getattr(module, attr) if attr else module)
        except (ImportError, AttributeError) as exc:
            raise PackLoadError(f"KHIVE_EXTRA_PACKS entry {spec!r} cannot be loaded: {exc}; "
                                "use module.path:object with the module on PYTHONPATH",
                                details={"entry": spec}) from None
    return found
