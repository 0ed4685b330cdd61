"""The Runtime: everything a request needs, built once by a composition root and passed down."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pluggy

from khive.audit.config import open_audit_store
from khive.audit.store import AuditStore
from khive.connections.config import ConnectionConfig
from khive.connections.driver import Driver, open_driver
from khive.connections.pool import DriverPools
from khive.envref import resolve
from khive.errors import ConfigError, NotFound, quoted
from khive.gate import Gate, Rule
from khive.hookspecs import EdgeRule, EmbedderSpec, PackInfo
from khive.index.buildprocess import BuildProcess
from khive.index.engine import RetrievalIndex
from khive.limits import Limits
from khive.plugins import (
    apply_schema_plans,
    build_plugin_manager,
    check_pack_config,
    collect_edge_rules,
    collect_embedders,
    collect_verbs,
)
from khive.project.config import KhiveConfig, referenced_variables
from khive.project.envfile import ENV_FILE, is_placeholder
from khive.project.locate import STATE_DIR
from khive.project.store import FileStore, inside
from khive.redact import Redactor
from khive.threads import run_blocking
from khive.verbs import VerbRegistry

T = TypeVar("T")


@dataclass
class Runtime:
    project: Path
    config: KhiveConfig
    plugins: pluggy.PluginManager
    packs: tuple[PackInfo, ...]
    registry: VerbRegistry
    gate: Gate
    audit: AuditStore
    embedders: dict[str, EmbedderSpec]
    edge_rules: tuple[EdgeRule, ...]
    schema_status: dict[str, str]
    max_result_depth: int = 128
    max_parallel_ops: int = 4
    _pack_state: dict[str, Any] = field(default_factory=dict, repr=False)  # pack_state(): one object per key
    secrets: dict[str, str] = field(default_factory=dict, repr=False)  # resolved env: references
    placeholders: dict[str, str] = field(default_factory=dict)  # env: references a client passed unexpanded
    _index: RetrievalIndex | None = field(default=None, repr=False)
    _files: FileStore | None = field(default=None, repr=False)
    _pools: DriverPools | None = field(default=None, repr=False)
    _opening: threading.RLock = field(default_factory=threading.RLock, repr=False)  # opening the index opens files

    @property
    def index(self) -> RetrievalIndex:
        """The shared retrieval index, opened on first use (warm processes open it in the background)."""
        if self._index is None:
            with self._opening:  # two worker threads asking at once must share one index
                if self._index is None:
                    self._index = open_index(self)
        return self._index

    def pack_state(self, key: str, factory: Callable[[], T]) -> T:
        """A pack's per-project object under ``key`` (prefix it with the pack's name), made once by ``factory``."""
        with self._opening:  # worker threads asking at once get the same object
            if key not in self._pack_state:
                self._pack_state[key] = factory()
            found: T = self._pack_state[key]
            return found

    @property
    def redactor(self) -> Redactor:
        """The redaction service with this project's own patterns (``redaction.patterns``; ADR 0035)."""
        return Redactor(self.config.redaction.patterns)  # cheap: the patterns compile once per process

    @property
    def limits(self) -> Limits:
        """The input limits requests run under: the defaults with khive.yaml's ``limits:`` over them."""
        return self.config.limits

    def connection(self, name: str) -> ConnectionConfig:
        found = self.config.connections.get(name)
        if found is None:
            known = ", ".join(sorted(self.config.connections)) or "none configured"
            raise NotFound(f"unknown connection {quoted(name)}; connections in khive.yaml: {known}",
                           code="connection_not_found", details={"connection": name})
        return found

    def open_driver(self, name: str) -> Driver:
        """A driver for connection ``name``: file paths resolved against the project, env: urls resolved."""
        config = self.connection(name)
        secrets: dict[str, str] = {}
        if config.url:
            secrets["url"] = self.secret(config.url, field=f"connections.{name}.url")
        if config.credentials and config.credentials.startswith("env:"):
            secrets["credentials"] = self.secret(config.credentials, field=f"connections.{name}.credentials")
        if config.path:
            path = Path(config.path)
            # an absolute path is the operator's choice in khive.yaml; a project path must stay in the project
            secrets["path"] = str(path if path.is_absolute() else inside(self.project, path))
        return open_driver(name, config, secrets=secrets)

    def secret(self, reference: str, *, field: str) -> str:
        """The value of an ``env:VAR`` reference from khive.yaml; a ConfigError naming the field and the fix."""
        return resolve(reference, self.secrets, field=field, passed=self.placeholders,
                       env_file=self.project / ENV_FILE)

    @property
    def drivers(self) -> DriverPools:
        """The shared driver pools (ADR 0028): every verb path that queries a connection leases from here."""
        if self._pools is None:
            self._pools = DriverPools(self.open_driver, self.pool_size)
        return self._pools

    def pool_size(self, name: str) -> int:
        """Connection ``name``'s pool size: its pool_size, else twice the per-request cap."""
        return self.connection(name).pool_size or 2 * self.max_parallel_ops

    @property
    def files(self) -> FileStore:
        if self._files is None:
            with self._opening:
                if self._files is None:
                    self._files = FileStore(self.project, git_commit=self.config.wiki.git_commit)
        return self._files

    @property
    def state_dir(self) -> Path:
        return self.project / STATE_DIR

    @property
    def config_id(self) -> str:
        return compute_config_id(self.project, self.packs, self.embedders)

    async def aclose(self) -> None:
        # the packs' close hooks may wait for their own threads: never on the event loop, and never cut short
        with anyio.CancelScope(shield=True):
            await run_blocking(self.plugins.hook.khive_runtime_closing, runtime=self)
        if self._pools is not None:
            self._pools.close()
        if self._index is not None:
            self._index.close()
            self._index = None
        await self.audit.aclose()


def compute_config_id(project: Path, packs: Iterable[PackInfo], embedders: Mapping[str, EmbedderSpec]) -> str:
    """A fingerprint of what answers requests: packs and versions, project path, embedders."""
    parts = [str(project.resolve())]
    parts += sorted(f"pack:{info.name}={info.version}" for info in packs)
    parts += sorted(f"embedder:{name}:{spec.dimensions}" for name, spec in embedders.items())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def build_runtime(project: Path, config: KhiveConfig, env: Mapping[str, str], *,
                  packs: Sequence[str] | None = None, extra_plugins: Iterable[object] = (),
                  audit: AuditStore | None = None) -> Runtime:
    pm, infos = build_plugin_manager(packs if packs is not None else config.packs, extra_plugins)
    check_pack_config(pm, config.connections)  # a pack's block with a mistake stops the start, naming the field
    state_dir = inside(project, STATE_DIR)  # .khive/ linked out of the project would take state and audit with it
    schema_status = apply_schema_plans(pm, state_dir / "state.sqlite")
    gate = Gate(tuple(Rule(**rule.model_dump()) for rule in config.auth.rules), default=config.auth.default)
    referenced = referenced_variables(config)  # only these travel with the Runtime, not the environment
    return Runtime(
        project=project,
        config=config,
        plugins=pm,
        packs=infos,
        registry=collect_verbs(pm),
        gate=gate,
        audit=audit if audit is not None else open_audit_store(project, config, env),
        embedders=collect_embedders(pm),
        edge_rules=collect_edge_rules(pm),
        schema_status=schema_status,
        max_result_depth=config.server.max_result_depth,
        max_parallel_ops=config.server.max_parallel_ops,
        secrets={name: env[name] for name in referenced if env.get(name) and not is_placeholder(env[name])},
        placeholders={name: env[name] for name in referenced if env.get(name) and is_placeholder(env[name])},
    )


def open_index(runtime: Runtime) -> RetrievalIndex:
    sources = [source for contributed in runtime.plugins.hook.khive_index_sources(runtime=runtime)
               for source in contributed]
    embedder = None
    section = runtime.config.index
    if section.vector:
        spec = runtime.embedders.get(section.embedder)
        if spec is None:
            raise ConfigError(f"index.embedder {section.embedder!r} is not registered by any pack",
                              details={"available": sorted(runtime.embedders),
                                       "fix": f"use one of: {', '.join(sorted(runtime.embedders))}"})
        embedder = spec.factory()
    build_process = BuildProcess(min_bytes=int(section.build_process_min_mb * 1024 * 1024),
                                 max_load=section.build_process_max_load) if section.build_process else None
    return RetrievalIndex(runtime.project, sources, embedder=embedder, edge_rules=runtime.edge_rules,
                          watch=section.watch, limits=runtime.limits, build_process=build_process)
