"""What the index does with symlinks: it never reads through one (ADR 0032, amendment of 2026-12-01).

A link out of the project is refused as every verb refuses it. A link that stays inside is readable by the verbs
that open one file by its key, but is not indexed: the watcher reports changes to the file a link points at, not
to the link, so a link's documents would go stale unseen. Either way the reason is kept as the item's error, so
``wiki.list``, ``sl.list`` and ``discover.doctor`` say why the file is missing from search.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from khive.project.store import PathOutsideProject, inside

log = logging.getLogger(__name__)

LINK_NOT_INDEXED = ("a symlink: not indexed, so search and list leave it out (reading it by its key still works); "
                    "replace the link with the file itself to have it found")


def readable(project: Path, relative: str) -> Path | str:
    """The real path of a project file the index may read, or why it may not."""
    try:
        path = inside(project, relative)
    except PathOutsideProject as exc:
        return f"{exc.message}; not indexed"
    return LINK_NOT_INDEXED if os.path.islink(project / relative) else path


def stays_inside(project: Path, root: Path) -> bool:
    """Whether an index root is the project's own (a root linked elsewhere is not indexed)."""
    try:
        inside(project, root)
    except PathOutsideProject as exc:
        log.warning("index: not indexing %s: %s", root, exc.message)
        return False
    return True
