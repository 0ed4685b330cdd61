"""Every hook a khive pack can implement. Hooks return declarations; the core acts on them.

A pack is a module (or object) registered under the ``khive.packs`` entry-point group. It must
define ``khive_pack_info()``; every other hook is optional.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from khive.index.documents import EdgeRule, IndexSource
from khive.project.layout import ProjectDirectory

if TYPE_CHECKING:
    from khive.services import Services
    from khive.verbs import Verb

__all__ = ["ConfigSection", "EdgeRule", "EmbedderSpec", "IndexSource", "OverviewFacts", "OverviewPart", "PackInfo",
           "ProjectDirectory", "SchemaPlan", "WarmTask", "hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("khive")
hookimpl = pluggy.HookimplMarker("khive")


@dataclass(frozen=True, slots=True)
class PackInfo:
    name: str
    version: str
    requires: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True)
class SchemaPlan:
    """Tables a pack needs in the project's state database, applied at start-up."""

    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmbedderSpec:
    name: str
    dimensions: int
    factory: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class WarmTask:
    name: str
    run: Callable[[], Awaitable[None]]
    resources: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class OverviewFacts:
    """One pack's share of ``overview()``, the agent's cheap first call.

    ``connections`` maps a connection name to facts merged into its entry (e.g. ``lastScan``,
    ``tables``); ``counts`` are project-wide totals merged into one map (e.g. ``pages``); ``stale``
    items are ``{"what", "why", "fix"}``; ``extra`` is this pack's own section, under its name.
    """

    connections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    stale: Sequence[Mapping[str, str]] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OverviewPart:
    """How a pack answers its share of ``overview()``: reads its own files, never the index or a
    database (blocking, so callers run it in a worker thread)."""

    name: str
    collect: Callable[[Services], OverviewFacts]


@dataclass(frozen=True, slots=True)
class ConfigSection:
    """A block of each connection in khive.yaml that a pack owns (``connections.<name>.<key>``).

    ``check(connection, block)`` validates the block when the runtime is built, so a mistake stops the
    start with a ConfigError naming the field and the fix, not the first run that reads it.
    """

    key: str
    check: Callable[[str, Mapping[str, Any]], object]


@hookspec
def khive_pack_info() -> PackInfo:  # type: ignore[empty-body]
    """Name, version and required packs of this pack."""


@hookspec
def khive_register_verbs() -> Sequence[Verb]:  # type: ignore[empty-body]
    """The verbs this pack declares."""


@hookspec
def khive_schema_plans() -> Sequence[SchemaPlan]:  # type: ignore[empty-body]
    """Tables this pack needs in the project state database."""


@hookspec
def khive_register_embedders() -> Sequence[EmbedderSpec]:  # type: ignore[empty-body]
    """Embedding providers this pack offers to the retrieval index."""


@hookspec
def khive_edge_rules() -> Sequence[EdgeRule]:  # type: ignore[empty-body]
    """Allowed endpoints of the edges this pack contributes to the index."""


@hookspec
def khive_index_sources(runtime: Services) -> Sequence[IndexSource]:  # type: ignore[empty-body]
    """Document sources this pack contributes to the shared retrieval index."""


@hookspec
def khive_warm(runtime: Services) -> Sequence[WarmTask]:  # type: ignore[empty-body]
    """Work that makes the first request fast (open indexes, connections); run in the background."""


@hookspec
def khive_runtime_closing(runtime: Services) -> None:
    """The runtime closes: finish what this pack left running after an answer (in a worker thread, opening nothing)."""


@hookspec
def khive_config_sections() -> Sequence[ConfigSection]:  # type: ignore[empty-body]
    """Blocks of a connection in khive.yaml this pack owns, validated when the runtime is built."""


@hookspec
def khive_project_directories() -> Sequence[ProjectDirectory]:  # type: ignore[empty-body]
    """Folders of a project this pack owns: what ``khive init`` creates and what it keeps out of git."""


@hookspec
def khive_overview_parts() -> Sequence[OverviewPart]:  # type: ignore[empty-body]
    """What this pack contributes to overview(): cheap facts about its files (counts, times, staleness)."""
