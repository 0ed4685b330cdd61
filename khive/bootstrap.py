"""Shared by the composition roots (CLI, MCP server, daemon): find the project, build the Runtime."""

from __future__ import annotations

import getpass
from collections.abc import Iterable, Mapping
from pathlib import Path

from khive.errors import ConfigError
from khive.plugins import selected_from_env
from khive.project.config import CONFIG_NAME, find_project, load_config
from khive.runtime import Runtime, build_runtime


def locate_project(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path:
    """``--project``, then ``KHIVE_PROJECT``, then the nearest khive.yaml upward."""
    chosen = explicit or env.get("KHIVE_PROJECT")
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not (path / CONFIG_NAME).is_file():
            raise ConfigError(f"{path} is not a khive project (no {CONFIG_NAME}); run `khive init {path}`",
                              details={"project": str(path)})
        return path
    found = find_project(cwd)
    if found is None:
        raise ConfigError(f"no khive project found: no {CONFIG_NAME} in {cwd} or above; "
                          "run `khive init`, pass --project DIR or set KHIVE_PROJECT",
                          details={"cwd": str(cwd)})
    return found


def open_runtime(project: Path, env: Mapping[str, str], extra_plugins: Iterable[object] = ()) -> Runtime:
    config = load_config(project / CONFIG_NAME)
    return build_runtime(project, config, env, packs=selected_from_env(env), extra_plugins=extra_plugins)


def operator_principal() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"operator:{user}"
