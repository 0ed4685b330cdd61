"""Shared by the composition roots (CLI, MCP server, daemon): find the project, build the Runtime.

Kept free of heavy imports at module level: the daemon client path of ``khive request`` imports
this module before it knows whether it will build a Runtime at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from khive.identity import operator_principal
from khive.project.locate import CONFIG_NAME, locate_project

if TYPE_CHECKING:
    from khive.runtime import Runtime

__all__ = ["locate_project", "open_runtime", "operator_principal", "single_threaded_blas"]


def open_runtime(project: Path, env: Mapping[str, str], extra_plugins: Iterable[object] = ()) -> Runtime:
    from khive.plugins import plugins_from_env, selected_from_env
    from khive.project.config import load_config
    from khive.project.envfile import with_env_file
    from khive.results import result_check_from
    from khive.runtime import build_runtime

    config = load_config(project / CONFIG_NAME)
    if any(connection.driver == "snowflake" for connection in config.connections.values()):
        # The Snowflake connector's telemetry probes cloud metadata endpoints (AWS IMDS, GCP, Azure) to name the
        # platform it runs on; a data server has no business sending those, and this is the connector's switch.
        os.environ.setdefault("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
    env = with_env_file(project, env)  # .khive/env: for clients that start the server without the variables
    result_check_from(env)  # KHIVE_RESULT_CHECK=strict: every result checked against its model (ADR 0039)
    return build_runtime(project, config, env, packs=selected_from_env(env),
                         extra_plugins=[*extra_plugins, *plugins_from_env(env)])


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas(env: MutableMapping[str, str]) -> None:
    """One BLAS thread unless the user chose otherwise; must run before numpy is imported.

    khive's numpy work is one matrix-vector product per vector lane over at most a few hundred
    thousand rows: threaded BLAS gains nothing there and, on a busy 2-core machine, costs up to 100x
    (2,000 rows: 8 ms threaded, 0.07 ms single-threaded; docs/benchmarks.md).
    """
    for variable in BLAS_THREAD_VARIABLES:
        env.setdefault(variable, "1")
