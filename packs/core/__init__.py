"""The core pack: introspection (``verbs``), a no-op (``ping``) and the audit trail (``audit.query``)."""

from __future__ import annotations

from collections.abc import Sequence

from khive import __version__
from khive.hookspecs import EmbedderSpec, PackInfo, hookimpl
from khive.index import minilm
from khive.index.embed import HashingEmbedder
from khive.verbs import Verb
from packs.core.verbs import VERBS


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
