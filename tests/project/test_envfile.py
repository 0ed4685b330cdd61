"""``.khive/env``: variables for MCP clients that start the server without them; the environment wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from khive.bootstrap import open_runtime
from khive.errors import ConfigError
from khive.project.envfile import ENV_FILE, is_placeholder, read_env_file, with_env_file
from khive.scaffold import init_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_project(tmp_path, "ann")
    (tmp_path / "khive.yaml").write_text("connections:\n  w: {driver: postgres, url: env:W_URL}\n", encoding="utf-8")
    return tmp_path


def test_lines_comments_export_and_quotes(project: Path) -> None:
    (project / ENV_FILE).write_text('# secrets\n\nexport W_URL="host=db user=me"\nOTHER=\'a b\'\nPLAIN = x=y\n',
                                    encoding="utf-8")
    assert read_env_file(project / ENV_FILE) == {"W_URL": "host=db user=me", "OTHER": "a b", "PLAIN": "x=y"}
    assert read_env_file(project / "missing") == {}


def test_a_bad_line_names_the_file_and_line(project: Path) -> None:
    (project / ENV_FILE).write_text("W_URL=x\nnot a variable\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_env_file(project / ENV_FILE)
    assert info.value.details["line"] == 2 and "VAR=value" in info.value.details["fix"]


@pytest.mark.parametrize("value", ["${W_URL}", "${env:W_URL}", "{env:W_URL}", " ${W_URL:-x} "])
def test_an_unexpanded_reference_is_a_placeholder(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize("value", ["host=db", "postgres://u:p@h/db?x=${y}", "$W_URL", ""])
def test_a_value_is_not_a_placeholder(value: str) -> None:
    assert not is_placeholder(value)


def test_the_environment_wins_and_the_file_fills_in_what_is_missing_or_unexpanded(project: Path) -> None:
    (project / ENV_FILE).write_text("W_URL=from-file\nA=from-file\nB=from-file\n", encoding="utf-8")
    merged = with_env_file(project, {"A": "from-env", "B": "${B}", "C": "c"})
    assert merged == {"A": "from-env", "B": "from-file", "C": "c", "W_URL": "from-file"}


@pytest.mark.anyio
async def test_the_runtime_reads_the_file_and_says_when_a_client_passed_a_placeholder(project: Path) -> None:
    runtime = open_runtime(project, {"W_URL": "${W_URL}"})
    try:
        with pytest.raises(ConfigError) as info:
            runtime.secret("env:W_URL", field="connections.w.url")
        assert "'${W_URL}' unexpanded" in info.value.message and ENV_FILE in info.value.details["fix"]
    finally:
        await runtime.aclose()
    (project / ENV_FILE).write_text("W_URL=host=db\n", encoding="utf-8")
    runtime = open_runtime(project, {"W_URL": "${W_URL}"})
    try:
        assert runtime.secret("env:W_URL", field="connections.w.url") == "host=db"
    finally:
        await runtime.aclose()
