"""The semantic layer's share of ``overview()``: how many sources each connection has (a file listing;
parsing every source would make the cheap first call as slow as ``sl.list``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from khive.hookspecs import OverviewFacts, OverviewPart
from packs.sl.store import list_sources

if TYPE_CHECKING:
    from khive.services import Services


def collect(runtime: Services) -> OverviewFacts:
    per = Counter(connection for connection, _, _ in list_sources(runtime.files))
    return OverviewFacts(connections={name: {"sources": count} for name, count in per.items()},
                         counts={"sources": sum(per.values())})


PART = OverviewPart("sl", collect)
