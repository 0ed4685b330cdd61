"""The semantic layer's share of ``overview()``: how many sources each connection has (a file listing;
parsing every source would make the cheap first call as slow as ``sl.list``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from khive.hookspecs import OverviewFacts, OverviewPart
from packs.sl.store import list_sources


def collect(runtime: Any) -> OverviewFacts:
    per = Counter(connection for connection, _, _ in list_sources(runtime.files))
    return OverviewFacts(connections={name: {"sources": count} for name, count in per.items()},
                         counts={"sources": sum(per.values())})


PART = OverviewPart("sl", collect)
