"""The project's env file, ``.khive/env``: variables for MCP clients that cannot pass them.

Clients start ``khive mcp`` with a small environment (the MCP SDKs pass HOME, PATH, SHELL, TERM,
USER, LOGNAME; a desktop app launched from the GUI never read a shell profile), and some of them
cannot expand ``${VAR}`` in their config files. For those, the variables ``khive.yaml`` refers to
(``env:VAR``) can live in ``.khive/env``, one ``VAR=value`` per line, which the server reads at start.
``.khive/`` is git-ignored by ``khive init``; the file holds secrets, so keep it private (0600).

The process environment wins: the file only fills in variables that are missing, or whose value is
a placeholder a client passed through unexpanded (``${VAR}``, ``${env:VAR}``, ``{env:VAR}``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from khive.errors import ConfigError
from khive.project.locate import STATE_DIR

ENV_FILE = f"{STATE_DIR}/env"
_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)\Z")
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{env:[^}]*\}")


def env_file(project: Path) -> Path:
    return project / ENV_FILE


def is_placeholder(value: str) -> bool:
    """True for a value that is still a client's variable reference (the client did not expand it)."""
    return bool(_PLACEHOLDER.fullmatch(value.strip()))


def read_env_file(path: Path) -> dict[str, str]:
    """``VAR=value`` lines (``export`` allowed, ``#`` comments, values optionally in matching quotes)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}", details={"file": str(path)}) from None
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ConfigError(f"{path}:{number}: expected VAR=value, found {line[:40]!r}",
                              details={"file": str(path), "line": number,
                                       "fix": "write one VAR=value per line (# starts a comment)"})
        name, value = match.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    return values


def with_env_file(project: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus the project's env file for what ``env`` lacks or holds only as a placeholder."""
    merged = dict(env)
    for name, value in read_env_file(env_file(project)).items():
        if not merged.get(name) or is_placeholder(merged[name]):
            merged[name] = value
    return merged
