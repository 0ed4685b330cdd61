"""Edges as stored and as read: rows of ``edges``, and implied edges kept on their target's ``docs`` row.

A table's ``contains`` edges to its columns were most of the index's edge rows (200,000 at 10,000 tables), each
with a text primary key. An edge rule marked ``implied`` lets the index keep such an edge as two cells of the
target's row instead (``up``: the source's rowid, ``via``: the relation) when the target is a later document
of the same file and the edge has no metadata (ADR 0050). Every read here answers from both, in the order
the edge rows alone gave.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

import orjson

from khive.index import leanrows
from khive.index.documents import Document

# Every edge, implied ones as if rows: (source_id, relation, target_id, metadata). The implied half is read
# from the child's side (``c``) or, through the ``docs_up`` index, from the parent's (``p``).
_IMPLIED = "SELECT p.id AS source_id, c.via AS relation, c.id AS target_id, '{}' AS metadata " \
           "FROM docs AS c JOIN docs AS p ON p.rowid = c.up"


def edge_rows(doc_id: str, edges: Iterable[tuple[str, str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(doc_id, relation, target, orjson.dumps(meta).decode() if meta else "{}")
            for relation, target, meta in edges]


class Implied:
    """One batch of new documents, in insertion order: which edges become their target's ``up``/``via``.

    An edge of an implied (source kind, relation) without metadata claims its target when the target has not
    been seen yet in the batch and no other edge claimed it; the target's row takes the claim when it comes.
    A claim whose target never comes, or that a second copy of the same edge meets, is an edge row again.
    A claimed row is a child: it keeps its file in its parent's row and may keep only the end of its metadata
    text (``lean``, khive.index.leanrows); so that one lookup finds them, a child claims no children."""

    def __init__(self, implied: frozenset[tuple[str, str]]):
        self._implied = implied
        self._seen: set[str] = set()
        self._pending: dict[str, tuple[int, str, str]] = {}  # target -> (source rowid, source id, relation)
        self._rows: list[tuple[str, str, str, str]] = []
        self._parents: dict[int, str] = {}  # rowid -> metadata text of a row that claimed a child
        self._leads: dict[int, str] = {}  # rowid -> the start of its metadata text its children share

    def claim(self, doc_id: str) -> tuple[int | None, str | None]:
        """(up, via) for the row of ``doc_id``, about to be inserted."""
        self._seen.add(doc_id)
        claimed = self._pending.pop(doc_id, None)
        return (claimed[0], claimed[2]) if claimed else (None, None)

    def claims(self, doc_ids: Sequence[str]) -> list[tuple[int, str, str] | None]:
        """``claim`` for the rows of ``doc_ids``, in order: (source rowid, source id, relation) or None each."""
        self._seen.update(doc_ids)
        pop = self._pending.pop
        return [pop(doc_id, None) for doc_id in doc_ids]

    def add(self, rowid: int, doc: Document, edges: Sequence[tuple[str, str, Any]], metadata: str,
            child: bool) -> None:
        """The edges of ``doc`` (row ``rowid``, metadata text ``metadata``; ``child``: it was claimed)."""
        implied = frozenset[tuple[str, str]]() if child else self._implied
        pending = self._pending
        for relation, target, meta in edges:
            held = pending.get(target)
            if held is None:
                if not meta and (doc.kind, relation) in implied and target not in self._seen:
                    pending[target] = (rowid, doc.id, relation)
                    self._parents[rowid] = metadata
                    continue
            elif held[0] == rowid and held[2] == relation:  # the same edge again: rows, replaced as before
                del pending[target]
                self._rows.append((doc.id, relation, target, "{}"))
            self._rows.append((doc.id, relation, target, orjson.dumps(meta).decode() if meta else "{}"))

    def adopt(self, rowid: int, doc: Document, relation: str, doc_ids: Sequence[str], metadata: str,
              child: bool) -> None:
        """Edges ``relation`` from ``doc`` (as ``add``) to each of ``doc_ids``, the batch right after it: when
        none of them was seen or claimed, all are claimed at once."""
        pending = self._pending
        if child or (doc.kind, relation) not in self._implied or not (
                self._seen.isdisjoint(doc_ids) and pending.keys().isdisjoint(doc_ids)):
            self.add(rowid, doc, [(relation, doc_id, None) for doc_id in doc_ids], metadata, child)
            return
        pending.update(zip(doc_ids, repeat((rowid, doc.id, relation))))
        self._parents[rowid] = metadata

    def lean(self, up: int, metadata: str) -> tuple[str, int | None]:
        """(the metadata text to store, how many characters of its parent's text come before it) of a child."""
        lead = self._lead(up, metadata)
        if lead and metadata.startswith(lead):
            return metadata[len(lead):], len(lead)
        return metadata, None

    def lean_all(self, up: int, metadata: Sequence[str]) -> tuple[Sequence[str], Sequence[int | None]] | None:
        """``lean`` of many children of ``up`` at once when all of them share its start; else None."""
        lead = self._lead(up, metadata[0])
        if not lead or not all(map(str.startswith, metadata, repeat(lead))):
            return None
        size = len(lead)
        return [text[size:] for text in metadata], [size] * len(metadata)

    def _lead(self, up: int, metadata: str) -> str:
        lead = self._leads.get(up)
        if lead is None:  # the first child decides how much of the parent's text its siblings share
            lead = self._leads[up] = leanrows.shared_start(self._parents[up], metadata)
        return lead

    def take_rows(self) -> list[tuple[str, str, str, str]]:
        """The edge rows decided so far (every edge not implied), given once."""
        taken, self._rows = self._rows, []
        return taken

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The edge rows of the batch not taken yet: every edge not implied, then the claims no target took."""
        return self._rows + [(source, relation, target, "{}")
                             for target, (_, source, relation) in self._pending.items()]


def keep_implied_edges(db: sqlite3.Connection, rowid: int) -> None:
    """Before the row ``rowid`` is replaced by another file's document of the same id: an implied edge into
    it becomes a row (an edge outlives its target, as rows do); implied edges out of it end with it, and its
    children take back what they kept in it (their file, the start of their metadata)."""
    db.execute(f"INSERT OR REPLACE INTO edges {_IMPLIED} WHERE c.rowid = ?", (rowid,))
    db.execute(f"UPDATE docs AS d SET source = {leanrows.SOURCE}, path = {leanrows.PATH}, "
               f"metadata = {leanrows.METADATA}, lead = NULL, up = NULL, via = NULL WHERE up = ?", (rowid,))


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _sides(direction: str) -> tuple[str, str, str, str]:
    """(owner, other) columns of the edge rows and of the implied half for ``direction``."""
    if direction == "out":
        return "source_id", "target_id", "p.id", "c.id"
    return "target_id", "source_id", "c.id", "p.id"


def edges_of(db: sqlite3.Connection, doc_id: str, direction: str, relation: str | None) -> list[dict[str, Any]]:
    owner, other, implied_owner, implied_other = _sides(direction)
    rows_sql = f"SELECT {other}, relation FROM edges WHERE {owner} = ?"
    implied_sql = f"SELECT {implied_other}, c.via FROM docs AS c JOIN docs AS p ON p.rowid = c.up " \
                  f"WHERE {implied_owner} = ?"
    params: list[Any] = [doc_id]
    if relation:
        rows_sql += " AND relation = ?"
        implied_sql += " AND c.via = ?"
        params.append(relation)
    found = db.execute(f"{rows_sql} UNION ALL {implied_sql} ORDER BY 2, 1", params * 2)
    return [{"id": r[0], "relation": r[1]} for r in found]


def incoming(db: sqlite3.Connection, doc_ids: Sequence[str], relation: str) -> dict[str, list[str]]:
    marks = _marks(doc_ids)
    rows = db.execute(
        f"SELECT target_id, source_id FROM edges WHERE relation = ? AND target_id IN ({marks}) UNION ALL "
        f"SELECT c.id, p.id FROM docs AS c JOIN docs AS p ON p.rowid = c.up WHERE c.via = ? AND c.id IN ({marks}) "
        f"ORDER BY 2", (relation, *doc_ids, relation, *doc_ids)).fetchall()
    out: dict[str, list[str]] = {}
    for target, source in rows:
        out.setdefault(str(target), []).append(str(source))
    return out


def edge_map(db: sqlite3.Connection, doc_ids: Sequence[str], direction: str,
             relations: Sequence[str] | None) -> dict[str, list[tuple[str, str]]]:
    owner, other, implied_owner, implied_other = _sides(direction)
    marks = _marks(doc_ids)
    rows_sql = f"SELECT {owner}, relation, {other} FROM edges WHERE {owner} IN ({marks})"
    implied_sql = f"SELECT {implied_owner}, c.via, {implied_other} FROM docs AS c JOIN docs AS p " \
                  f"ON p.rowid = c.up WHERE {implied_owner} IN ({marks})"
    params: list[Any] = list(doc_ids)
    if relations:
        rows_sql += f" AND relation IN ({_marks(relations)})"
        implied_sql += f" AND c.via IN ({_marks(relations)})"
        params.extend(relations)
    out: dict[str, list[tuple[str, str]]] = {}
    for owned, relation, target in db.execute(f"{rows_sql} UNION ALL {implied_sql} ORDER BY 1, 2, 3", params * 2):
        out.setdefault(str(owned), []).append((str(relation), str(target)))
    return out


def edge_rows_of(db: sqlite3.Connection, doc_ids: Sequence[str], direction: str
                 ) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    owner, other, implied_owner, implied_other = _sides(direction)
    marks = _marks(doc_ids)
    rows = db.execute(
        f"SELECT {owner}, relation, {other}, metadata FROM edges WHERE {owner} IN ({marks}) UNION ALL "
        f"SELECT {implied_owner}, c.via, {implied_other}, '{{}}' FROM docs AS c JOIN docs AS p ON p.rowid = c.up "
        f"WHERE {implied_owner} IN ({marks}) ORDER BY 1, 2, 3", (*doc_ids, *doc_ids)).fetchall()
    out: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for owned, relation, target, meta in rows:
        out.setdefault(str(owned), []).append(
            (str(relation), str(target), orjson.loads(meta) if meta and meta != "{}" else {}))
    return out


def degrees(db: sqlite3.Connection, doc_ids: Sequence[str], relations: Sequence[str]) -> dict[str, int]:
    marks, relation_marks = _marks(doc_ids), _marks(relations)
    rows = db.execute(  # an implied edge's target is the row holding it: no join
        f"SELECT target, count(*) FROM (SELECT target_id AS target FROM edges WHERE target_id IN ({marks}) AND "
        f"relation IN ({relation_marks}) UNION ALL SELECT id FROM docs WHERE id IN ({marks}) AND up IS NOT NULL "
        f"AND via IN ({relation_marks})) GROUP BY target ORDER BY target",
        (*doc_ids, *relations, *doc_ids, *relations)).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def relation_pairs(db: sqlite3.Connection, relation: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Edge rows in the order they were written, then implied edges in their targets' order: for a relation
    whose edges are all implied or all rows, the order the rows alone gave."""
    rows = db.execute("SELECT source_id, target_id, metadata FROM edges WHERE relation = ?", (relation,)).fetchall()
    rows += db.execute("SELECT p.id, c.id, '{}' FROM docs AS c JOIN docs AS p ON p.rowid = c.up WHERE c.via = ? "
                       "ORDER BY c.rowid", (relation,)).fetchall()
    return [(str(r[0]), str(r[1]), orjson.loads(r[2]) if r[2] and r[2] != "{}" else {}) for r in rows]
