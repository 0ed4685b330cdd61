"""Lean child rows: a document with an implied edge into it keeps in its parent's row what they share.

A table's 20 columns repeated its file (``source``, ``path``: 44 bytes each at 10,000 tables, indexed again
in ``docs_item``) and the start of its metadata text (``{"connectionId":...,"tableRef":{...},`` about 100
bytes). A child row (``up`` set, khive.index.edgestore) stores ``source`` and ``path`` empty (its file is its
parent's) and, when ``lead`` is set, only the end of its metadata text: the first ``lead`` characters are its
parent's. The expressions below give every row's own values back, byte for byte; every read of those three
columns goes through them (ADR 0050). A child's parent is never itself a child, so one lookup suffices.
"""

from __future__ import annotations

# SQL of a docs row aliased ``d``.
SOURCE = "CASE WHEN d.up IS NULL THEN d.source ELSE (SELECT p.source FROM docs AS p WHERE p.rowid = d.up) END"
PATH = "CASE WHEN d.up IS NULL THEN d.path ELSE (SELECT p.path FROM docs AS p WHERE p.rowid = d.up) END"
METADATA = ("CASE WHEN d.lead IS NULL THEN d.metadata ELSE "
            "(SELECT substr(p.metadata, 1, d.lead) FROM docs AS p WHERE p.rowid = d.up) || d.metadata END")

# Docs of one file: its own rows (the ``docs_item`` index, which holds no child), then their children.
OF_FILE = "d.up IS NULL AND d.source = ? AND d.path = ?"
CHILD_OF_FILE = "d.up IN (SELECT p.rowid FROM docs AS p WHERE p.up IS NULL AND p.source = ? AND p.path = ?)"

# Shorter shared starts are not worth a lookup on every read.
MIN_SHARED = 16


def shared_start(parent: str, child: str) -> str:
    """The start of ``parent`` that ``child`` begins with, cut after the last comma in it (so it ends between
    two members at the top level or inside one), or "" when that is short."""
    low, high = 0, min(len(parent), len(child))  # the longest common start, by halves: a C compare per step
    while low < high:
        middle = (low + high + 1) // 2
        if child.startswith(parent[:middle]):
            low = middle
        else:
            high = middle - 1
    cut = parent.rfind(",", 0, low) + 1
    return parent[:cut] if cut >= MIN_SHARED else ""
