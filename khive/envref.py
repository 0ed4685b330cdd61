"""``env:VAR`` references: the one way khive.yaml names a secret, and the one place they are resolved.

khive.yaml never holds a secret; it names the environment variable that does (``url: env:DATABASE_URL``).
The config models check the shape here (``require_reference``), ``khive.project.config`` lists every
variable a project refers to, and ``resolve`` turns a reference into its value with one error for every
caller: the connections' url and credentials (through ``Runtime.secret``), ``audit.url`` and
``server.tokens``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from khive.errors import ConfigError

REFERENCE = re.compile(r"env:[A-Za-z_][A-Za-z0-9_]*\Z")


def is_reference(value: object) -> bool:
    return isinstance(value, str) and REFERENCE.match(value) is not None


def require_reference(value: str, why: str, example: str) -> str:
    """``value`` when it is an ``env:VAR`` reference; a ValueError for a model validator otherwise."""
    if not is_reference(value):
        raise ValueError(f"must be an env:VAR reference ({why}), e.g. {example}")
    return value


def variable_of(reference: str) -> str:
    return reference.removeprefix("env:")


def resolve(reference: str, values: Mapping[str, str], *, field: str, passed: Mapping[str, str] | None = None,
            env_file: Path | None = None) -> str:
    """The value of ``reference`` in ``values``; a ConfigError naming the variable, ``field`` and the fix.

    ``passed`` holds what an MCP client handed over unexpanded (``${VAR}``), so the error can say so;
    ``env_file`` is the project's ``.khive/env``, offered as the other place to set the variable.
    """
    variable = variable_of(reference)
    value = values.get(variable)
    if value:
        return value
    unexpanded = (passed or {}).get(variable)
    why = (f"the MCP client passed {unexpanded!r} unexpanded (it does not expand that syntax, or {variable} is "
           "not set where the client runs)" if unexpanded else "which is not set")
    fix = f"export {variable}=..."
    if env_file is not None:
        fix += (f" before starting the client, or put {variable}=... in {env_file} (git-ignored; see "
                "khive setup-agents)")
    raise ConfigError(f"{field} refers to environment variable {variable}, {why}",
                      details={"variable": variable, "field": field, "fix": fix})
