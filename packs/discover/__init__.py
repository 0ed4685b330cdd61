"""The discover pack: one ranked, budgeted search and lookup across every pack's documents, and a doctor.

It reads the shared retrieval index and project files only; it never imports another pack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive import __version__
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Verb

if TYPE_CHECKING:
    from khive.services import Services


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="discover", version=__version__,
                    description="ranked search and lookup across wiki, semantic layer and raw schema")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    from packs.discover.verbs import VERBS

    return VERBS


@hookimpl
def khive_runtime_closing(runtime: Services) -> None:
    from packs.discover import later

    later.finish(runtime.project)  # the kept lexicon a search left to write after its answer
