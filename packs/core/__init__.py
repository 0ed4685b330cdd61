"""The core pack: introspection (``verbs``), a no-op (``ping``) and the audit trail (``audit.query``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive import __version__
from khive.hookspecs import EmbedderSpec, PackInfo, WarmTask, hookimpl
from khive.index import minilm
from khive.index.embed import HashingEmbedder
from khive.threads import run_blocking
from khive.verbs import Verb
from packs.core.verbs import VERBS

if TYPE_CHECKING:
    from khive.services import Services


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="core", version=__version__, description="introspection and audit")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    return VERBS


@hookimpl
def khive_register_embedders() -> Sequence[EmbedderSpec]:
    # The default embedder: deterministic feature hashing, so the vector lane works offline.
    specs = [EmbedderSpec(name="hash-fnv1a-256", dimensions=256, factory=lambda: HashingEmbedder(256))]
    # A real model when the optional extra is installed (khive[minilm]); the check imports nothing.
    if minilm.available():
        specs.append(EmbedderSpec(name=minilm.NAME, dimensions=minilm.DIMENSIONS, factory=minilm.MiniLMEmbedder))
    return specs


@hookimpl
def khive_warm(runtime: Services) -> Sequence[WarmTask]:
    """A warm process (the daemon) opens the shared index and walks its sources before anyone searches."""

    async def warm_index() -> None:
        # Opening, the walk and the vector table load run in a worker, as a request's would; a search
        # that arrives meanwhile waits on the index's own lock, nothing else does.
        await run_blocking(_prime, runtime)

    return [WarmTask("index", warm_index, resources=("index",))]


def _prime(runtime: Services) -> None:
    index = runtime.index
    index.refresh()
    index.search("khive", limit=1)  # loads the vector table and exercises the embedder once
