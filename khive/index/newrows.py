"""The rows of one file's new documents (ADR 0050): ``docs``, ``docs_fts`` and ``edges`` rows, made in one pass.

The rowids are the ones one-by-one inserts would get (SQLite gives a new row max(rowid) + 1).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from operator import itemgetter
from typing import Any

import orjson

from khive.index import edgestore
from khive.index.documents import FIELDS, Document, DocumentBatch, Item

INSERT_DOC = ("INSERT INTO docs (rowid, id, kind, connection, title, source, path, metadata, up, via, lead) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_FTS = (f"INSERT INTO docs_fts (rowid, {', '.join(FIELDS)}, scope) "
              f"VALUES (?, {', '.join('?' * len(FIELDS))}, ?)")
INSERT_EDGE = "INSERT OR REPLACE INTO edges VALUES (?, ?, ?, ?)"
_FIELD_TEXTS = itemgetter(*FIELDS)
# Documents per part of a file's rows (``FileRows.part``): a writer process starts on a file's first part while the
# rest is made (ADR 0059); a part's statements cost the same however they are cut.
PART_DOCS = 8192


@dataclass(frozen=True, slots=True)
class Rows:
    """A file's rows of the three tables; ``rowids``: its documents', in order."""

    rowids: range
    docs: list[tuple[Any, ...]]
    fts: list[tuple[Any, ...]]
    edges: list[tuple[str, str, str, str]]

    def write(self, db: sqlite3.Connection) -> None:
        db.executemany(INSERT_DOC, self.docs)
        db.executemany(INSERT_FTS, self.fts)
        db.executemany(INSERT_EDGE, self.edges)


class FileRows:
    """The rows of one file's documents whose ids are in neither the index nor twice in the file, from
    ``first_rowid`` on, made a part at a time (``part``) so a build can write each part while it makes the next
    (ADR 0059). An edge whose (source kind, relation) is in ``implied`` is kept as its target's ``up``/``via``
    when ``edgestore.Implied`` can; a claim no later part takes is an edge row of ``rest``. A batch's rows are
    made column by column, as its documents' would be."""

    def __init__(self, source: str, path: str, first_rowid: int, implied: frozenset[tuple[str, str]]):
        self._source, self._path, self._rowid = source, path, first_rowid
        self._links = edgestore.Implied(implied)
        self._parent: tuple[int, Document, str, bool] | None = None  # the last document: (rowid, it, metadata, claimed)

    def part(self, items: Sequence[Item], edges: Sequence[Sequence[tuple[str, str, Any]]]) -> Rows:
        """The rows of the next ``items`` (``edges``: each item's checked edges); a batch follows its document
        in the same part. The edge rows are those decided so far."""
        source, path, links, first = self._source, self._path, self._links, self._rowid
        rowid, parent = first, self._parent
        doc_values: list[tuple[Any, ...]] = []
        fts_values: list[tuple[Any, ...]] = []
        for item, item_edges in zip(items, edges, strict=True):  # one pass builds the three tables' rows
            if isinstance(item, DocumentBatch):
                if item.from_previous:  # checked by the caller: the item before is a document
                    assert parent is not None and parent[0] == rowid - 1
                    links.adopt(parent[0], parent[1], item.from_previous, item.ids, parent[2], parent[3])
                rowids = range(rowid, rowid + len(item))
                metadata = [orjson.dumps(meta if type(meta) is dict else dict(meta)).decode()
                            for meta in item.metadata]
                doc_values.extend(_batch_rows(links, rowids, source, path, item, metadata))
                fts_values.extend(zip(rowids, *map(item.field_texts, FIELDS),
                                      repeat(scope_tokens(item.kind, item.connection))))
                rowid += len(item)
                continue
            up, via = links.claim(item.id)
            row = doc_row(rowid, source, path, item)
            parent = (rowid, item, row[7], up is not None)
            if up is not None:
                row = _child_row(links, row, up, via)
            doc_values.append(row)
            fts_values.append(fts_row(rowid, item))
            if item_edges:
                links.add(rowid, item, item_edges, parent[2], parent[3])
            rowid += 1
        self._rowid, self._parent = rowid, parent
        return Rows(range(first, rowid), doc_values, fts_values, links.take_rows())

    def rest(self) -> Rows:
        """The edge rows left after the last part: the claims no target took."""
        return Rows(range(self._rowid, self._rowid), [], [], self._links.rows())


def parts(items: Sequence[Item], size: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive parts of ``items`` of about ``size`` documents each, cut only before a
    document (a batch stays with the document before it)."""
    bounds: list[tuple[int, int]] = []
    start, count = 0, 0
    for n, item in enumerate(items):
        if count >= size and isinstance(item, Document):
            bounds.append((start, n))
            start, count = n, 0
        count += len(item) if isinstance(item, DocumentBatch) else 1
    if start < len(items):
        bounds.append((start, len(items)))
    return bounds


def doc_row(rowid: int | None, source: str, path: str, doc: Document) -> tuple[Any, ...]:
    metadata = doc.metadata if type(doc.metadata) is dict else dict(doc.metadata)
    return (rowid, doc.id, doc.kind, doc.connection, doc.title, source, path, orjson.dumps(metadata).decode(), None,
            None, None)


def fts_row(rowid: int, doc: Document) -> tuple[Any, ...]:
    try:
        texts = _FIELD_TEXTS(doc.fields)  # every field given, as the scan's documents do: one C call
    except KeyError:
        texts = tuple(doc.fields.get(name, "") for name in FIELDS)
    return (rowid, *texts, scope_tokens(doc.kind, doc.connection))


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


@lru_cache(maxsize=4096)
def scope_token(prefix: str, value: str) -> str:
    """One token per kind or connection (``kxslsource``, ``cxwarehouse``): lets a MATCH intersect with it."""
    return prefix + "".join(ch for ch in value.lower() if ch.isalnum())


@lru_cache(maxsize=4096)
def scope_tokens(kind: str, connection: str | None) -> str:
    return " ".join([scope_token("kx", kind), *([scope_token("cx", connection)] if connection else [])])
