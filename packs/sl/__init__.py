"""The semantic layer pack: sources, search, dictionary, bootstrap, dbt import, compiled metric queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive import __version__
from khive.hookspecs import EdgeRule, IndexSource, OverviewPart, PackInfo, ProjectDirectory, hookimpl
from khive.verbs import Verb
from packs.sl.store import SL_ROOT

if TYPE_CHECKING:
    from khive.services import Services


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="sl", version=__version__, requires=("scan",),
                    description="semantic-layer sources, search, value dictionary, bootstrap from scans")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    from packs.sl.verbs import VERBS

    return VERBS


@hookimpl
def khive_index_sources(runtime: Services) -> Sequence[IndexSource]:
    from packs.sl.index import SOURCE

    return [SOURCE]


@hookimpl
def khive_edge_rules() -> Sequence[EdgeRule]:
    from packs.sl.index import EDGE_RULES

    return EDGE_RULES


@hookimpl
def khive_overview_parts() -> Sequence[OverviewPart]:
    from packs.sl.overview import PART

    return [PART]


@hookimpl
def khive_project_directories() -> Sequence[ProjectDirectory]:
    return (ProjectDirectory(SL_ROOT, purpose="semantic-layer sources, a folder per connection"),)
