"""Find a project directory without loading its configuration (the daemon client path stays lean)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from khive.errors import ConfigError
from khive.textcheck import not_utf8, shown

CONFIG_NAME = "khive.yaml"
STATE_DIR = ".khive"


def find_project(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a khive.yaml."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate
    return None


def locate_project(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path:
    """``--project``, then ``KHIVE_PROJECT``, then the nearest khive.yaml upward; its path must be UTF-8."""
    found = _locate(explicit, env, cwd)
    problem = not_utf8(str(found))
    if problem is not None:
        raise ConfigError(f"the project directory {shown(str(found), 120)}: {problem.describe()}; khive records "
                          "paths as UTF-8 text: rename the directory", details={"project": shown(str(found), 400)})
    return found


def _locate(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path:
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
