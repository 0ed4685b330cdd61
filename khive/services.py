"""What a verb handler and a pack's hooks may use: the shared services, typed (ADR 0040).

``Context.runtime`` and the ``runtime`` argument of ``khive_index_sources``, ``khive_warm`` and an
``OverviewPart`` are a ``Services``: the project's files, the retrieval index, the connections and their
driver pools, the redactor, the limits, the audit store. ``khive.runtime.Runtime`` is the one
implementation; it is built by the composition roots and satisfies this Protocol structurally.

This module sits below the pack system: it imports the services' own modules and nothing that imports
it back (no runtime, context, hookspecs, plugins or dispatch), so the Runtime is no longer at the
centre of an import circle (tests/meta/test_architecture.py checks there is none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import pluggy

    from khive.audit.store import AuditStore
    from khive.connections.config import ConnectionConfig
    from khive.connections.driver import Driver
    from khive.connections.pool import DriverPools
    from khive.gate import Gate
    from khive.index.engine import RetrievalIndex
    from khive.limits import Limits
    from khive.project.config import KhiveConfig
    from khive.project.store import FileStore
    from khive.redact import Redactor
    from khive.verbs import VerbRegistry

T = TypeVar("T")


class Sampler(Protocol):
    """The MCP client's own model, when the request came over MCP (``Context.sampler``; khive/mcp_sampling.py).

    ``available`` says whether the client declared the sampling capability; a call answers the model's
    text, or None when the answer comes in the next round of a multi-round-trip call.
    """

    @property
    def available(self) -> bool: ...

    async def __call__(self, key: str, *, system: str, prompt: str, max_tokens: int = 2000) -> str | None: ...


class Services(Protocol):
    """The shared services of one project, as handlers and hooks see them."""

    @property
    def project(self) -> Path: ...

    @property
    def config(self) -> KhiveConfig: ...

    @property
    def files(self) -> FileStore: ...

    @property
    def index(self) -> RetrievalIndex: ...

    @property
    def drivers(self) -> DriverPools: ...

    @property
    def redactor(self) -> Redactor: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def state_dir(self) -> Path: ...

    @property
    def audit(self) -> AuditStore: ...

    @property
    def registry(self) -> VerbRegistry: ...

    @property
    def gate(self) -> Gate: ...

    @property
    def plugins(self) -> pluggy.PluginManager: ...

    @property
    def max_result_depth(self) -> int: ...

    @property
    def max_parallel_ops(self) -> int: ...

    def connection(self, name: str) -> ConnectionConfig:
        """Connection ``name`` from khive.yaml; NotFound naming the configured ones."""
        ...

    def open_driver(self, name: str) -> Driver:
        """A fresh driver for connection ``name`` (most callers lease one from ``drivers`` instead)."""
        ...

    def secret(self, reference: str, *, field: str) -> str:
        """The value of an ``env:VAR`` reference; a ConfigError naming ``field`` and the fix."""
        ...

    def pack_state(self, key: str, factory: Callable[[], T]) -> T:
        """A pack's per-project object (a cache, a lock), made once by ``factory``; thread-safe."""
        ...
