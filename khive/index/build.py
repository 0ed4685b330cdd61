"""What a build from nothing knows without asking the index (ADR 0050, ADR 0052).

The index held nothing when such a build began, so what it holds at any point is what this build wrote: the ids
and kinds are kept in memory while the ``docs.id`` index waits for the build's end (one sort instead of a b-tree
insert per row, ADR 0052) and a file's ids are checked for clashes without a query per 500 of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


class NeedsOneByOne(Exception):
    """A build from nothing in a second process met what only the one-by-one path does (an id in two files or twice
    in one): that path reads the build's own rows, which only the writer process sees (ADR 0056)."""


@dataclass
class BuildState:
    # every id a file of this build gave: a superset of the index's (a file that failed keeps its ids here), so a
    # false clash only takes the slower one-by-one path
    written: set[str] = field(default_factory=set)
    # id -> kind of every document the index holds now: the targets of a file's edges are checked against it
    kinds: dict[str, str] = field(default_factory=dict)
    # the writes go to a second process (khive.index.buildprocess): reads see none of them
    in_child: bool = False

    def forget(self, ids: Iterable[str]) -> None:
        """``ids`` left the index (a file's documents deleted)."""
        for doc_id in ids:
            self.kinds.pop(doc_id, None)
