"""khive.yaml validation: errors name the file, the line and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from khive.bootstrap import locate_project
from khive.envref import resolve
from khive.errors import ConfigError
from khive.project.config import load_config, parse_config, referenced_variables
from khive.project.layout import STARTER_CONFIG
from khive.scaffold import init_project


def error_for(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, Path("khive.yaml"))
    return info.value


def test_starter_config_is_valid(tmp_path: Path) -> None:
    init_project(tmp_path, "ann")
    config = load_config(tmp_path / "khive.yaml")
    assert config.auth.default == "allow" and config.audit.store == "sqlite"
    for directory in ("wiki/global", "wiki/users/ann", "semantic-layer", "raw-sources", "_schema", ".khive"):
        assert (tmp_path / directory).is_dir()
    ignored = (tmp_path / ".gitignore").read_text().splitlines()
    assert {".khive/", "raw-sources/*/live-database/", "raw-sources/*/historic-sql/"} <= set(ignored)
    assert STARTER_CONFIG in (tmp_path / "khive.yaml").read_text()


def test_init_makes_the_folders_of_the_packs_it_loads(tmp_path: Path) -> None:
    """Each pack declares its folders (khive_project_directories): a wiki-only project gets no scan folders."""
    created = init_project(tmp_path, "ann", packs=["wiki"])
    assert {"wiki/global/", "wiki/users/ann/", ".khive/"} <= set(created)
    assert not (tmp_path / "_schema").exists() and not (tmp_path / "semantic-layer").exists()
    assert "raw-sources/*/live-database/" not in (tmp_path / ".gitignore").read_text()


def test_init_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "khive.yaml").write_text("version: 1\nname: mine\n")
    created = init_project(tmp_path, "ann")
    assert "khive.yaml" not in created
    assert load_config(tmp_path / "khive.yaml").name == "mine"


def test_unknown_key_reports_line_and_known_keys() -> None:
    error = error_for("version: 1\nauth:\n  default: allow\n  rulez: []\n")
    assert error.details["line"] == 4
    assert "khive.yaml:4" in error.message and "auth.rulez" in error.message
    assert "default, rules" in error.details["fix"]


def test_wrong_type_reports_line() -> None:
    error = error_for("version: 1\nserver:\n  max_result_depth: deep\n")
    assert error.details["line"] == 3
    assert "server.max_result_depth" in error.message


def test_literal_secret_is_refused_with_env_fix() -> None:
    error = error_for("server:\n  tokens:\n    - token: hunter2\n      principal: bot\n")
    assert error.details["line"] == 3
    assert "env:VAR" in error.message


def test_bad_rule_effect_reports_nested_line() -> None:
    error = error_for("auth:\n  rules:\n    - effect: allow\n    - effect: maybe\n")
    assert error.details["line"] == 4
    assert "auth.rules.1.effect" in error.message


def test_invalid_yaml_reports_line() -> None:
    error = error_for("version: 1\nauth: [unclosed\n")
    assert "invalid YAML" in error.message and error.details["line"] >= 2


def test_missing_env_variable_is_named() -> None:
    with pytest.raises(ConfigError, match="KHIVE_NOPE"):
        resolve("env:KHIVE_NOPE", {}, field="audit.url")
    assert resolve("env:X", {"X": "v"}, field="x") == "v"


def test_project_discovery_order(tmp_path: Path) -> None:
    init_project(tmp_path / "a", "ann")
    init_project(tmp_path / "b", "ann")
    nested = tmp_path / "a" / "wiki" / "global"
    assert locate_project(None, {}, nested) == (tmp_path / "a").resolve()
    assert locate_project(None, {"KHIVE_PROJECT": str(tmp_path / "b")}, nested) == (tmp_path / "b").resolve()
    assert locate_project(str(tmp_path / "a"), {"KHIVE_PROJECT": str(tmp_path / "b")}, nested) == (
        tmp_path / "a").resolve()
    with pytest.raises(ConfigError, match="no khive project found"):
        locate_project(None, {}, tmp_path)
    with pytest.raises(ConfigError, match="not a khive project"):
        locate_project(str(tmp_path), {}, tmp_path)


def test_a_typo_inside_a_connection_lists_that_connections_keys() -> None:
    error = error_for("connections:\n  warehouse:\n    driver: postgres\n    urll: env:DATABASE_URL\n")
    assert error.details["line"] == 4 and "connections.warehouse.urll" in error.message
    fix = error.details["fix"]
    assert "did you mean 'url'?" in fix and "statement_timeout_s" in fix and "sample_values" in fix
    assert "auth" not in fix and "audit" not in fix  # not the top-level keys
    nested = error_for("connections:\n  w: {driver: duckdb, path: x.duckdb, schemas: {includ: [a]}}\n")
    assert "use one of: exclude, include" in nested.details["fix"]


def test_init_shows_one_commented_connection_per_driver(tmp_path: Path) -> None:
    init_project(tmp_path, "ann")
    text = (tmp_path / "khive.yaml").read_text(encoding="utf-8")
    head, _, examples = text.partition("connections: {}\n")
    uncommented = [line[2:] for line in examples.splitlines() if line.startswith("#   ")]
    config = parse_config(head + "connections:\n" + "\n".join(uncommented) + "\n", Path("khive.yaml"))
    drivers = {connection.driver for connection in config.connections.values()}
    assert drivers == {"postgres", "duckdb", "sqlite", "mysql", "bigquery", "snowflake"}
    assert all(c.url is None or c.url.startswith("env:") for c in config.connections.values())
    assert referenced_variables(config) == ("DATABASE_HISTORY_URL", "DATABASE_URL", "GOOGLE_APPLICATION_CREDENTIALS",
                                            "MYSQL_URL", "SNOWFLAKE_URL")


def test_referenced_variables_are_what_the_server_reads() -> None:
    config = parse_config(
        "audit: {store: postgres, url: env:AUDIT_URL}\n"
        "server:\n  tokens:\n    - {token: env:HTTP_TOKEN, principal: bot}\n"
        "connections:\n"
        "  a: {driver: postgres, url: env:A_URL, historicSql: {enabled: true, url: env:A_HISTORY_URL}}\n"
        "  b: {driver: postgres, url: env:A_URL}\n"
        "  c: {driver: sqlite, path: c.sqlite}\n", Path("khive.yaml"))
    assert referenced_variables(config) == ("AUDIT_URL", "A_HISTORY_URL", "A_URL")  # not the HTTP token


def test_a_pool_no_larger_than_the_per_request_cap_is_refused_with_line_and_fix() -> None:
    text = ("version: 1\nserver:\n  max_parallel_ops: 4\nconnections:\n"
            "  wh:\n    driver: sqlite\n    path: x.db\n    pool_size: 4\n")
    with pytest.raises(ConfigError) as info:
        parse_config(text, Path("khive.yaml"))
    assert "khive.yaml:8: connections.wh.pool_size (4) must be larger than server.max_parallel_ops (4)" \
        in info.value.message
    assert info.value.details["fix"] == "set connections.wh.pool_size above 4, or lower server.max_parallel_ops"
    config = parse_config(text.replace("pool_size: 4", "pool_size: 5"), Path("khive.yaml"))
    assert config.connections["wh"].pool_size == 5 and config.server.max_parallel_ops == 4


def test_a_khive_yaml_that_is_not_utf8_names_line_byte_and_position(tmp_path: Path) -> None:
    path = tmp_path / "khive.yaml"
    path.write_bytes(b"version: 1\nname: caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"{path}:2: byte 0xe9 at position 20 is not UTF-8" in info.value.message
