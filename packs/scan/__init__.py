"""The scan pack: live database catalogs into reviewable artifacts, and read-only SQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from khive import __version__
from khive.hookspecs import EdgeRule, OverviewPart, PackInfo, hookimpl
from khive.verbs import Verb


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="scan", version=__version__, description="database scans and read-only SQL")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    from packs.scan.verbs import VERBS

    return VERBS


@hookimpl
def khive_index_sources(runtime: Any) -> Sequence[Any]:
    from packs.scan.index import source_for

    return [source_for(runtime.files, runtime.project, runtime.redactor)]


@hookimpl
def khive_edge_rules() -> Sequence[EdgeRule]:
    from packs.scan.index import EDGE_RULES

    return EDGE_RULES


@hookimpl
def khive_overview_parts() -> Sequence[OverviewPart]:
    from packs.scan.overview import PART

    return [PART]
