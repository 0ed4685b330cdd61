"""Pack loading: selection, fail-fast validation, schema plans, config_id."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from testpack import FixturePack

from khive.errors import PackLoadError
from khive.plugins import build_plugin_manager, selected_from_env
from khive.project.config import KhiveConfig
from khive.runtime import build_runtime, compute_config_id


def test_unknown_pack_fails_fast_listing_installed() -> None:
    with pytest.raises(PackLoadError) as info:
        build_plugin_manager(selected_from_env({"KHIVE_PACKS": "core,nosuchpack"}))
    assert "nosuchpack" in info.value.message
    assert "installed packs: core" in info.value.message


def test_missing_requirement_fails_fast() -> None:
    with pytest.raises(PackLoadError) as info:
        build_plugin_manager(["core"], extra=[FixturePack(requires=("wiki",))])
    assert "requires wiki" in info.value.message


def test_plugin_without_pack_info_is_rejected() -> None:
    class Nameless:
        pass

    with pytest.raises(PackLoadError, match="khive_pack_info"):
        build_plugin_manager(["core"], extra=[Nameless()])


def test_core_is_always_loaded() -> None:
    _, infos = build_plugin_manager([])
    assert [info.name for info in infos] == ["core"]


def test_duplicate_verb_names_fail(tmp_path: Path) -> None:
    from testpack import EchoParams, echo

    from khive.hookspecs import PackInfo, hookimpl
    from khive.verbs import Verb

    class Clash:
        @hookimpl
        def khive_pack_info(self) -> PackInfo:
            return PackInfo(name="clash", version="0")

        @hookimpl
        def khive_register_verbs(self) -> list[Verb]:
            return [Verb("ping", EchoParams, echo, "A second ping.")]

    with pytest.raises(PackLoadError, match="'ping' is declared by both 'core' and 'clash'"):
        build_runtime(tmp_path, KhiveConfig(), {}, extra_plugins=[Clash()])


def test_failing_schema_plan_is_logged_and_does_not_stop_start(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.ERROR)
    runtime = build_runtime(tmp_path, KhiveConfig(), {}, extra_plugins=[FixturePack(schema_sql="CREATE TABLE (")])
    try:
        assert runtime.schema_status["t"].startswith("failed")
        assert "t.echo" in runtime.registry.verbs
        assert any("schema plan of pack t failed" in record.message for record in caplog.records)
    finally:
        import anyio

        anyio.run(runtime.aclose)


def test_schema_plan_applies_tables(tmp_path: Path) -> None:
    import sqlite3

    runtime = build_runtime(tmp_path, KhiveConfig(), {}, extra_plugins=[FixturePack()])
    try:
        assert runtime.schema_status["t"] == "ok"
        with sqlite3.connect(tmp_path / ".khive" / "state.sqlite") as db:
            assert db.execute("SELECT name FROM sqlite_master WHERE name = 't'").fetchone() == ("t",)
    finally:
        import anyio

        anyio.run(runtime.aclose)


def test_config_id_depends_on_packs_and_project(tmp_path: Path) -> None:
    _, core_only = build_plugin_manager(["core"])
    _, with_t = build_plugin_manager(["core"], extra=[FixturePack()])
    base = compute_config_id(tmp_path, core_only, {})
    assert base == compute_config_id(tmp_path, core_only, {})
    assert base != compute_config_id(tmp_path, with_t, {})
    assert base != compute_config_id(tmp_path / "other", core_only, {})
