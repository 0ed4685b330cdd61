"""The outline of some kinds of documents: each one's id (and, when asked, connection and title) with the values of
some metadata keys, in one query, for a pack that builds its own in-memory view (discover's catalog lexicon).

A lean child row's metadata text starts in its parent's row (``leanrows``); it is rebuilt once per row for all the
asked keys. A read that asks for ids only leaves the connection and the title unread: at 10,000 tables the
lexicon's read of 199,702 column documents spent about a quarter of its time on them (ADR 0049, sixth session).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from khive.index import leanrows

_META_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def outline(db: sqlite3.Connection, kinds: Sequence[str], keys: Sequence[str], *, titles: bool = True
            ) -> list[tuple[Any, ...]]:
    """(id, connection, title, *values of ``keys``) of every document of ``kinds`` in rowid order; (id, *values)
    when ``titles`` is false. A value is what SQLite's ``json_extract`` gives for the key of the row's metadata."""
    for key in keys:
        if not _META_KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be a plain name")
    heads = "id, connection, title" if titles else "id"
    inner = "d.id, d.connection, d.title" if titles else "d.id"
    picked = "".join(f", json_extract(m, '$.{key}')" for key in keys)
    # OFFSET keeps SQLite from flattening the subquery into the outer select (which would copy the metadata
    # expression back into every json_extract); json_extract parses one text once for all its keys (its
    # per-statement parse cache).
    return db.execute(
        f"SELECT {heads}{picked} FROM (SELECT {inner}, {leanrows.METADATA} AS m FROM docs AS d "
        f"WHERE d.kind IN ({', '.join('?' * len(kinds))}) ORDER BY d.rowid LIMIT -1 OFFSET 0)", tuple(kinds)).fetchall()
