"""The index's SQLite tables: items (file stamps), documents with an FTS5 mirror, edges, vectors.

Everything here is derived from project files and lives under ``.khive/``: deleting it only costs
a rebuild.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from khive.index import edgestore, leanrows
from khive.index.documents import FIELDS, Document, DocumentBatch, Item
from khive.sqlite_util import immediate, open_wal, statements

SCHEMA_VERSION = "4"  # 3: implied edges as docs.up/via, lean child rows (ADR 0050); 4: shadowed (ADR 0051)

# Lookups only, no constraint: a build from an empty index drops them and creates them again at its end, one
# sort each instead of a b-tree insert per row (ADR 0048).
SECONDARY_INDEXES = {"docs_item": "docs (source, path) WHERE up IS NULL", "docs_kind": "docs (kind)",
                     "docs_up": "docs (up) WHERE up IS NOT NULL", "edges_target": "edges (target_id, relation)",
                     "shadowed_item": "shadowed (source, path)"}

_CREATE_SECONDARY = "\n".join(f"CREATE INDEX IF NOT EXISTS {name} ON {on};" for name, on in SECONDARY_INDEXES.items())

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (name TEXT PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    source TEXT NOT NULL, path TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    sha256 TEXT NOT NULL, error TEXT, PRIMARY KEY (source, path)
);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, connection TEXT,
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

@lru_cache(maxsize=4096)
def scope_token(prefix: str, value: str) -> str:
    """One token per kind or connection (``kxslsource``, ``cxwarehouse``): lets a MATCH intersect with it."""
    return prefix + "".join(ch for ch in value.lower() if ch.isalnum())


@lru_cache(maxsize=4096)
def scope_tokens(kind: str, connection: str | None) -> str:
    return " ".join([scope_token("kx", kind), *([scope_token("cx", connection)] if connection else [])])


def connect(path: Path) -> sqlite3.Connection:
    db = open_wal(path)
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
    for name, on in SECONDARY_INDEXES.items():  # one by one: executescript would commit the build's transaction
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")


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
    cursor = db.execute(_INSERT_DOC, _doc_row(None, source, path, doc))
    rowid = int(cursor.lastrowid or 0)
    db.execute(_INSERT_FTS, _fts_row(rowid, doc))
    db.executemany(_INSERT_EDGE, edgestore.edge_rows(doc.id, edges))
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


def insert_new_docs(db: sqlite3.Connection, source: str, path: str, items: Sequence[Item],
                    edges: Sequence[Sequence[tuple[str, str, Any]]],
                    implied: frozenset[tuple[str, str]] = frozenset()) -> list[int]:
    """Insert documents whose ids are in neither the index nor twice in ``items``, one statement per table;
    the rowids of every document, in order.

    The rowids are the ones ``insert_doc`` one by one would get (SQLite gives a new row max(rowid) + 1).
    An edge whose (source kind, relation) is in ``implied`` is kept as its target's ``up``/``via`` when
    ``edgestore.Implied`` can (ADR 0050). A batch's rows are made column by column, as its documents' would be.
    """
    rowid = int(db.execute("SELECT coalesce(max(rowid), 0) FROM docs").fetchone()[0]) + 1
    first = rowid
    doc_values: list[tuple[Any, ...]] = []
    fts_values: list[tuple[Any, ...]] = []
    links = edgestore.Implied(implied)
    parent: tuple[int, Document, str, bool] | None = None  # the last document: (rowid, it, metadata, a child)
    for item, item_edges in zip(items, edges, strict=True):  # one pass builds the three tables' rows
        if isinstance(item, DocumentBatch):
            if item.from_previous:  # checked by the caller: the item before is a document
                assert parent is not None and parent[0] == rowid - 1
                links.adopt(parent[0], parent[1], item.from_previous, item.ids, parent[2], parent[3])
            rowids = range(rowid, rowid + len(item))
            metadata = [orjson.dumps(meta if type(meta) is dict else dict(meta)).decode() for meta in item.metadata]
            doc_values.extend(_batch_rows(links, rowids, source, path, item, metadata))
            fts_values.extend(zip(rowids, *map(item.field_texts, FIELDS),
                                  repeat(scope_tokens(item.kind, item.connection))))
            rowid += len(item)
            continue
        up, via = links.claim(item.id)
        row = _doc_row(rowid, source, path, item)
        parent = (rowid, item, row[7], up is not None)
        if up is not None:
            row = _child_row(links, row, up, via)
        doc_values.append(row)
        fts_values.append(_fts_row(rowid, item))
        if item_edges:
            links.add(rowid, item, item_edges, parent[2], parent[3])
        rowid += 1
    db.executemany(_INSERT_DOC, doc_values)
    db.executemany(_INSERT_FTS, fts_values)
    db.executemany(_INSERT_EDGE, links.rows())
    return list(range(first, rowid))


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
_INSERT_DOC = ("INSERT INTO docs (rowid, id, kind, connection, title, source, path, metadata, up, via, lead) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_FTS = (f"INSERT INTO docs_fts (rowid, {', '.join(FIELDS)}, scope) "
               f"VALUES (?, {', '.join('?' * len(FIELDS))}, ?)")
_INSERT_EDGE = "INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?)"
_FIELD_TEXTS = itemgetter(*FIELDS)


def _doc_row(rowid: int | None, source: str, path: str, doc: Document) -> tuple[Any, ...]:
    metadata = doc.metadata if type(doc.metadata) is dict else dict(doc.metadata)
    return (rowid, doc.id, doc.kind, doc.connection, doc.title, source, path, orjson.dumps(metadata).decode(), None,
            None, None)


def _child_row(links: edgestore.Implied, row: tuple[Any, ...], up: int, via: str | None) -> tuple[Any, ...]:
    """A claimed document's row: its file in its parent's row, its metadata text lean (leanrows)."""
    metadata, lead = links.lean(up, row[7])
    return (*row[:5], "", "", metadata, up, via, lead)


def _batch_rows(links: edgestore.Implied, rowids: range, source: str, path: str, batch: DocumentBatch,
                metadata: list[str]) -> Iterable[tuple[Any, ...]]:
    kind, connection, ids, titles = batch.kind, batch.connection, batch.ids, batch.titles
    claims = links.claims(ids)
    first = claims[0] if claims else None
    if first is not None and claims.count(first) == len(claims):  # every one a child of the same row: at once
        lean = links.lean_all(first[0], metadata)
        if lean is not None:
            return zip(rowids, ids, repeat(kind), repeat(connection), titles, repeat(""), repeat(""), lean[0],
                       repeat(first[0]), repeat(first[2]), lean[1])
    rows: list[tuple[Any, ...]] = []
    for rowid, doc_id, title, text, claim in zip(rowids, ids, titles, metadata, claims, strict=True):
        if claim is None:
            rows.append((rowid, doc_id, kind, connection, title, source, path, text, None, None, None))
        else:
            stored, lead = links.lean(claim[0], text)
            rows.append((rowid, doc_id, kind, connection, title, "", "", stored, claim[0], claim[2], lead))
    return rows


def _fts_row(rowid: int, doc: Document) -> tuple[Any, ...]:
    try:
        texts = _FIELD_TEXTS(doc.fields)  # every field given, as the scan's documents do: one C call
    except KeyError:
        texts = tuple(doc.fields.get(name, "") for name in FIELDS)
    return (rowid, *texts, scope_tokens(doc.kind, doc.connection))




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
