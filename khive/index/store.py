"""The index's SQLite tables: items (file stamps), documents with an FTS5 mirror, edges, vectors.

Everything here is derived from project files and lives under ``.khive/``: deleting it only costs
a rebuild.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from khive.index import edgestore, leanrows
from khive.index.documents import FIELDS, Document
from khive.index.newrows import INSERT_DOC, INSERT_EDGE, INSERT_FTS, doc_row, fts_row
from khive.sqlite_util import immediate, open_wal, statements

SCHEMA_VERSION = "5"  # 3: implied edges as docs.up/via, lean child rows (ADR 0050); 4: shadowed (ADR 0051);
# 5: docs.id unique through an index of its own, made once after a build from nothing (ADR 0052)

# A build from an empty index drops these and creates them again at its end, one sort each instead of a b-tree
# insert per row (ADR 0048). All are lookups but ``docs_id``, which keeps ids unique: the build's own clash check
# keeps them so meanwhile (ADR 0050's ids written, in memory), and the index made at the end checks it again.
SECONDARY_INDEXES = {"docs_id": "docs (id)",
                     "docs_item": "docs (source, path) WHERE up IS NULL", "docs_kind": "docs (kind)",
                     "docs_up": "docs (up) WHERE up IS NOT NULL", "edges_target": "edges (target_id, relation)",
                     "shadowed_item": "shadowed (source, path)"}

_UNIQUE = frozenset({"docs_id"})


def _create_index(name: str) -> str:
    return f"CREATE {'UNIQUE ' if name in _UNIQUE else ''}INDEX IF NOT EXISTS {name} ON {SECONDARY_INDEXES[name]}"


_CREATE_SECONDARY = "\n".join(f"{_create_index(name)};" for name in SECONDARY_INDEXES)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (name TEXT PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    source TEXT NOT NULL, path TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    sha256 TEXT NOT NULL, error TEXT, PRIMARY KEY (source, path)
);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, kind TEXT NOT NULL, connection TEXT,
    title TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, metadata TEXT NOT NULL,
    up INTEGER, via TEXT,  -- an implied edge (ADR 0050): the rowid of its source and its relation
    lead INTEGER  -- a child row's metadata text starts with this many characters of its parent's (leanrows)
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5 (
    {", ".join(FIELDS)}, scope, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS edges (
    source_id TEXT NOT NULL, relation TEXT NOT NULL, target_id TEXT NOT NULL, metadata TEXT NOT NULL,
    PRIMARY KEY (source_id, relation, target_id)
);
CREATE TABLE IF NOT EXISTS shadowed (  -- a file's document whose id a newer file's holds (ADR 0051)
    id TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (id, source, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors (
    doc_rowid INTEGER PRIMARY KEY, embedder TEXT NOT NULL, vector BLOB NOT NULL
);
{_CREATE_SECONDARY}
"""

# A new index file's page size. A build from nothing writes about 130 MB at 10,000 tables: with 16 KiB pages instead
# of SQLite's 4 KiB its inserts, lookup indexes and commit took about 17% less CPU, for the same rows and reads as
# fast (ADR 0055). An index made before keeps its 4 KiB pages until its file is deleted.
PAGE_SIZE = 16384


def connect(path: Path) -> sqlite3.Connection:
    db = open_wal(path, page_size=PAGE_SIZE)
    # One write transaction: two processes opening an index of an old layout at once drop it once (the second
    # sees the first's version), and a process killed midway leaves the old layout whole, not a part of it.
    with immediate(db):
        if _schema_version(db) != SCHEMA_VERSION and _has_docs(db):
            # A derived store of another layout (or of none recorded): dropped and rebuilt from the files.
            for table in ("meta", "sources", "items", "docs", "docs_fts", "edges", "vectors", "shadowed"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in statements(SCHEMA):
            db.execute(statement)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
    return db


def _has_docs(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'docs'").fetchone() is not None


def _schema_version(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.OperationalError:
        return None
    return str(row[0]) if row else None


# The page cache of a build from nothing, SQLite's cache_size: negative is KiB. It is taken only as pages are
# touched, about the size of the index written (220 MB at 10,000 tables); with the 2 MB default, pages written
# early were evicted and read back before the commit (ADR 0048).
BUILD_PAGE_CACHE = -1024 * 1024


def page_cache_size(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA cache_size").fetchone()[0])


def set_page_cache_size(db: sqlite3.Connection, size: int) -> None:
    db.execute(f"PRAGMA cache_size = {int(size)}")


def is_empty(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is None


def drop_secondary_indexes(db: sqlite3.Connection) -> None:
    for name in SECONDARY_INDEXES:
        db.execute(f"DROP INDEX IF EXISTS {name}")


def create_secondary_indexes(db: sqlite3.Connection) -> None:
    for name in SECONDARY_INDEXES:  # one by one: executescript would commit the build's transaction
        db.execute(_create_index(name))


def create_id_index(db: sqlite3.Connection) -> None:
    """The ``docs.id`` index now, when a build from nothing needs to look ids up (a clash) before its end."""
    db.execute(_create_index("docs_id"))


def delete_item_docs(db: sqlite3.Connection, source: str, path: str) -> list[str]:
    """Remove one file's documents; the ids it held (another file's document of one of them may come back)."""
    rows = db.execute(f"SELECT rowid, id FROM docs AS d WHERE {leanrows.OF_FILE} UNION ALL "
                      f"SELECT rowid, id FROM docs AS d WHERE {leanrows.CHILD_OF_FILE}", (source, path) * 2).fetchall()
    for rowid, doc_id in rows:
        db.execute("DELETE FROM docs_fts WHERE rowid = ?", (rowid,))
        db.execute("DELETE FROM vectors WHERE doc_rowid = ?", (rowid,))
        db.execute("DELETE FROM edges WHERE source_id = ?", (doc_id,))
        db.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))
    db.execute("DELETE FROM shadowed WHERE source = ? AND path = ?", (source, path))
    return [str(row[1]) for row in rows]


def insert_doc(db: sqlite3.Connection, source: str, path: str, doc: Document,
               edges: Iterable[tuple[str, str, Any]], mtime_ns: int) -> int | None:
    """Insert ``doc`` of the file ``path`` (last written at ``mtime_ns``); its rowid. A document of the same id
    from another file is replaced when that file is not newer, else ``doc`` waits in ``shadowed`` (None)."""
    old = db.execute(f"SELECT d.rowid, {leanrows.SOURCE}, {leanrows.PATH} FROM docs AS d WHERE d.id = ?",
                     (doc.id,)).fetchone()
    if old is not None:
        if (old[1], old[2]) != (source, path):
            if _newer(db, (old[1], old[2]), (mtime_ns, path)):
                db.execute("INSERT OR IGNORE INTO shadowed VALUES (?, ?, ?)", (doc.id, source, path))
                return None
            db.execute("INSERT OR IGNORE INTO shadowed VALUES (?, ?, ?)", (doc.id, old[1], old[2]))
        edgestore.keep_implied_edges(db, old[0])
        db.execute("DELETE FROM docs_fts WHERE rowid = ?", (old[0],))
        db.execute("DELETE FROM vectors WHERE doc_rowid = ?", (old[0],))
        db.execute("DELETE FROM edges WHERE source_id = ?", (doc.id,))
        db.execute("DELETE FROM docs WHERE rowid = ?", (old[0],))
    cursor = db.execute(INSERT_DOC, doc_row(None, source, path, doc))
    rowid = int(cursor.lastrowid or 0)
    db.execute(INSERT_FTS, fts_row(rowid, doc))
    db.executemany(INSERT_EDGE, edgestore.edge_rows(doc.id, edges))
    return rowid


def _newer(db: sqlite3.Connection, holder: tuple[str, str], stamp: tuple[int, str]) -> bool:
    """Whether the file ``holder`` (source, path) was written after ``stamp`` (mtime_ns, path; the path breaks
    a tie), as recorded when it was last indexed."""
    row = db.execute("SELECT mtime_ns FROM items WHERE source = ? AND path = ?", holder).fetchone()
    return row is not None and (int(row[0]), holder[1]) > stamp


def is_shadowed(db: sqlite3.Connection, source: str, path: str) -> bool:
    """Whether a document of this file waits in ``shadowed`` behind another file's of the same id."""
    return db.execute("SELECT 1 FROM shadowed WHERE source = ? AND path = ? LIMIT 1", (source, path)).fetchone() \
        is not None


def shadowed_files(db: sqlite3.Connection, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(source, path) of the files with a document waiting in ``shadowed`` for one of ``ids`` no file holds now."""
    if not ids:
        return []
    rows = db.execute("SELECT DISTINCT s.source, s.path FROM shadowed AS s WHERE s.id IN (SELECT value FROM "
                      "json_each(?)) AND NOT EXISTS (SELECT 1 FROM docs WHERE docs.id = s.id) ORDER BY 1, 2",
                      (orjson.dumps(list(ids)).decode(),)).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


MAX_ROWID = "SELECT coalesce(max(rowid), 0) FROM docs"


def next_rowid(db: sqlite3.Connection) -> int:
    """The rowid SQLite gives the next ``docs`` row (max(rowid) + 1)."""
    return int(db.execute(MAX_ROWID).fetchone()[0]) + 1


def existing_ids(db: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` the index holds, in chunks under SQLite's bound-parameter limit."""
    found: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        found.update(str(r[0]) for r in db.execute(
            f"SELECT id FROM docs WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk)))
    return found


def kinds_of(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    """doc id -> kind of those of ``ids`` the index holds."""
    found: dict[str, str] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        found.update((str(r[0]), str(r[1])) for r in db.execute(
            f"SELECT id, kind FROM docs WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk)))
    return found


_CHUNK = 500


def doc_rows(db: sqlite3.Connection, where: str = "", params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The rows (a child's with its file and whole metadata, leanrows) of ``docs AS d`` matching ``where``."""
    sql = f"SELECT d.rowid, d.id, d.kind, d.connection, d.title, {leanrows.SOURCE}, {leanrows.PATH}, " \
          f"{leanrows.METADATA} FROM docs AS d"
    if where:
        sql += " WHERE " + where
    return [
        {"rowid": r[0], "id": r[1], "kind": r[2], "connection": r[3], "title": r[4], "source": r[5],
         "path": r[6], "metadata": orjson.loads(r[7])}
        for r in db.execute(sql, tuple(params)).fetchall()
    ]


# Every table a build writes, each with the key its rows are read in: a digest of them is the same for two indexes
# holding the same rows (rowids included), whatever wrote them and in which order.
_ROW_ORDER = {"docs": "rowid", "docs_fts": "rowid", "edges": "source_id, relation, target_id", "vectors": "doc_rowid",
              "items": "source, path", "shadowed": "id, source, path", "sources": "name"}


def rows_digest(db: sqlite3.Connection) -> str:
    """sha256 of every stored row of the tables a build writes (ADR 0055, 0056: two ways of building compared)."""
    digest = hashlib.sha256()
    for table, key in _ROW_ORDER.items():
        columns = "rowid, *" if key == "rowid" else "*"
        digest.update(table.encode())
        for row in db.execute(f"SELECT {columns} FROM {table} ORDER BY {key}"):
            digest.update(pickle.dumps(tuple(row), protocol=5))
    return digest.hexdigest()


def stored_item(db: sqlite3.Connection, source: str, path: str) -> tuple[int, int, str] | None:
    """(mtime_ns, size, sha256) of one indexed file, or None."""
    row = db.execute("SELECT mtime_ns, size, sha256 FROM items WHERE source = ? AND path = ?",
                     (source, path)).fetchone()
    return (int(row[0]), int(row[1]), str(row[2])) if row else None


def stored_items(db: sqlite3.Connection) -> dict[tuple[str, str], tuple[int, int, str]]:
    """(source, path) -> (mtime_ns, size, sha256) of every indexed file."""
    rows = db.execute("SELECT source, path, mtime_ns, size, sha256 FROM items").fetchall()
    return {(r[0], r[1]): (int(r[2]), int(r[3]), str(r[4])) for r in rows}
