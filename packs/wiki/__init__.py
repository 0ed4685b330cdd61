"""The wiki pack: markdown knowledge pages with frontmatter, searchable through the shared index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive import __version__
from khive.hookspecs import EdgeRule, IndexSource, OverviewPart, PackInfo, ProjectDirectory, hookimpl
from khive.verbs import Verb
from packs.wiki.index import EDGE_RULES, SOURCE
from packs.wiki.verbs import VERBS

if TYPE_CHECKING:
    from khive.services import Services


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="wiki", version=__version__, description="markdown knowledge pages")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    return VERBS


@hookimpl
def khive_index_sources(runtime: Services) -> Sequence[IndexSource]:
    return [SOURCE]


@hookimpl
def khive_edge_rules() -> Sequence[EdgeRule]:
    return EDGE_RULES


@hookimpl
def khive_overview_parts() -> Sequence[OverviewPart]:
    from packs.wiki.overview import PART

    return [PART]


@hookimpl
def khive_project_directories() -> Sequence[ProjectDirectory]:
    return (ProjectDirectory("wiki/global", purpose="pages every agent and person reads"),
            ProjectDirectory("wiki/users/{user}", purpose="the operator's own pages"))
