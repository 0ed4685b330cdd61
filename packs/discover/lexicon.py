"""The catalog as discover ranks it: every table's words (its name, its columns' names, comments), built
once per index generation from the index's table and column documents.

* Words are comparison keys (``khive.index.morph.key``) of the identifier words (``morph.identifier_words``:
  case, digit and separator splits, segmented runs, expanded abbreviations) and of the comments.
* ``postings`` maps a key to the tables holding it, with where (table name 1.0, column name, comment) and
  which column; ``df`` counts the tables holding a key anywhere, for its rarity.
* Partitions and empty copies (``payment_p2007_01`` beside ``payment``, same columns) are folded into the
  table they copy: they add nothing a question could need that the parent lacks.
* Tables are grouped into routing units: a schema of a connection, merged with every schema it shares a
  foreign key with (a warehouse whose sales schema references its person schema is one unit).
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from khive.index.morph import identifier_words, key, segment, split_identifier
from packs.discover.text import STOPWORDS, split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

WHERE_NAME, WHERE_COLUMN, WHERE_TABLE_NOTE, WHERE_COLUMN_NOTE = 1.0, 0.7, 0.55, 0.45
BORROWED = 0.6  # a name word that is the whole name of a table it references (store_sales -> store)
# Where a word matched, as routing evidence: a table named after it says far more than a column.
ROUTE_WHERE = {WHERE_NAME: 1.0, WHERE_COLUMN: 0.5}
STRONG_INFERRED = 0.95  # an inferred key this sure links schemas like a declared one
ROUTE_OTHER = 0.7  # anything else (comments, borrowed names) counts this share of its strength
_COPY_SUFFIX = re.compile(r"_(?=[a-z_]*\d)[a-z0-9_]+\Z|_(old|bak|backup|copy|tmp|temp)\Z", re.I)


@dataclass
class Table:
    doc_id: str
    connection: str | None
    db: str
    name: str
    unit: int
    rows: int | None
    name_keys: frozenset[str]
    name_parts: frozenset[str]  # the words the name is made of (segments, not the run they came from)
    columns: dict[str, str] = field(default_factory=dict)  # column doc id -> column name
    borrowed: frozenset[str] = frozenset()  # name words that are the names of tables it references
    copies: list[str] = field(default_factory=list)  # folded partitions / copies (doc ids)


@dataclass(frozen=True)
class Posting:
    """The tables holding one key, as arrays over table numbers (``Lexicon.table_ids``)."""

    tables: np.ndarray[Any, Any]  # int32 table numbers
    where: np.ndarray[Any, Any]  # float32: how strongly (name 1.0, column, comment; borrowed names lowered)
    evidence: np.ndarray[Any, Any]  # float32: the same as routing evidence
    columns: np.ndarray[Any, Any]  # int32 column numbers (``Lexicon.column_ids``), -1 for none


@dataclass
class Lexicon:
    generation: int
    tables: dict[str, Table]
    postings: dict[str, Posting]
    df: dict[str, int]
    tokens: frozenset[str]  # raw identifier tokens (for abbreviation and derived-form matching)
    units: dict[int, list[str]]  # unit -> table ids
    unit_keys: dict[int, frozenset[str]]  # unit -> keys of its schema names
    folded: dict[str, str]  # copy doc id -> the table it copies
    adjacent: dict[str, frozenset[str]]  # table id -> tables one foreign key away (either direction)
    unit_df: dict[str, int] = field(default_factory=dict)  # schema-name key -> tables in schemas so named
    table_ids: list[str] = field(default_factory=list)
    column_ids: list[str] = field(default_factory=list)
    name_part_tables: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)  # key -> tables named with it
    part_counts: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    connection_of: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(0, dtype=object))
    by_initial: dict[str, tuple[str, ...]] = field(default_factory=dict)  # first letter -> tokens
    forms: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)  # memo of forms.py

    def idf(self, count: int) -> float:
        return math.log(1.0 + (len(self.tables) + 1) / (count + 0.5))


_CACHE: weakref.WeakKeyDictionary[Any, Lexicon] = weakref.WeakKeyDictionary()


def of(index: RetrievalIndex) -> Lexicon:
    """The lexicon of ``index`` at its current generation (rebuilt after a change)."""
    cached = _CACHE.get(index)
    if cached is None or cached.generation != index.generation:
        cached = build(index)
        _CACHE[index] = cached
    return cached


def name_parts(name: str) -> frozenset[str]:
    """Keys of the words a table name is made of: ``businessentity`` -> business, entity."""
    parts: list[str] = []
    for piece in split_identifier(name):
        parts.extend(segment(piece) if piece.isalpha() else (piece,))
    return frozenset(key(p) for p in parts if not p.isdigit()) or frozenset({key(name)})


def note_keys(text: str) -> set[str]:
    return {key(word) for word in split_words(text) if word not in STOPWORDS and len(word) > 1}


def build(index: RetrievalIndex) -> Lexicon:
    generation = index.generation
    table_rows = index.outline(["table"], ["tableRef", "comment", "description", "estimatedRows", "partitionOf"])
    column_rows = index.outline(["column"], ["comment", "description"])
    tables: dict[str, Table] = {}
    notes: dict[str, str] = {}
    for doc_id, connection, title, _ref, comment, description, rows, _parent in table_rows:
        db, _, name = str(title).partition(".")
        tables[doc_id] = Table(doc_id, connection, db, name, 0, int(rows) if isinstance(rows, (int, float)) else None,
                               frozenset(key(w) for w in identifier_words(name)), name_parts(name))
        notes[doc_id] = " ".join(str(t) for t in (description, comment) if t)
    column_notes: dict[str, str] = {}
    for doc_id, _connection, _title, comment, description in column_rows:
        table_id = "table:" + doc_id.split(":", 1)[1].rsplit(".", 1)[0]
        table = tables.get(table_id)
        if table is None:
            continue
        table.columns[doc_id] = doc_id.rsplit(".", 1)[1]
        text = " ".join(str(t) for t in (description, comment) if t)
        if text:
            column_notes[doc_id] = text
    folded = _fold_copies(tables, {row[0]: row[7] for row in table_rows if row[7]})
    postings: dict[str, dict[str, tuple[float, str | None]]] = {}
    tokens: set[str] = set()

    def post(words: Iterable[str], table_id: str, where: float, column: str | None) -> None:
        for word in words:
            entry = postings.setdefault(word, {})
            if table_id not in entry or entry[table_id][0] < where:
                entry[table_id] = (where, column)

    for table in tables.values():
        if table.doc_id in folded:
            continue
        tokens.update(split_identifier(table.name))
        post(table.name_keys, table.doc_id, WHERE_NAME, None)
        for column_id, column in table.columns.items():
            tokens.update(split_identifier(column))
            post({key(w) for w in identifier_words(column)}, table.doc_id, WHERE_COLUMN, column_id)
            if column_id in column_notes:
                post(note_keys(column_notes[column_id]), table.doc_id, WHERE_COLUMN_NOTE, column_id)
        if notes[table.doc_id]:
            post(note_keys(notes[table.doc_id]), table.doc_id, WHERE_TABLE_NOTE, None)
    pairs = index.relation_pairs("fk")
    units, unit_keys = _units(pairs, tables, folded)
    neighbours: dict[str, set[str]] = {}
    for source, target, _meta in pairs:
        a, b = folded.get(source, source), folded.get(target, target)
        if a != b and a in tables and b in tables and tables[a].unit == tables[b].unit:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    for table_id, others in neighbours.items():  # store_sales -> store, domain_author -> domain, author
        table = tables[table_id]
        lent = {part for other in others for part in tables[other].name_parts
                if tables[other].name_parts == {part} and part in table.name_parts}
        if lent and len(table.name_parts) > 1:
            table.borrowed = frozenset(lent)
    unit_df: dict[str, int] = {}
    for unit, words in unit_keys.items():
        for word in words:
            unit_df[word] = unit_df.get(word, 0) + len(units[unit])
    table_ids = list(tables)
    numbers = {table_id: n for n, table_id in enumerate(table_ids)}
    column_ids = [column for table in tables.values() for column in table.columns]
    column_numbers = {column: n for n, column in enumerate(column_ids)}
    arrays: dict[str, Posting] = {}
    for word, entry in postings.items():
        wheres = [where * (BORROWED if where == WHERE_NAME and word in tables[t].borrowed else 1.0)
                  for t, (where, _column) in entry.items()]
        arrays[word] = Posting(
            np.fromiter((numbers[t] for t in entry), dtype=np.int32, count=len(entry)),
            np.asarray(wheres, dtype=np.float32),
            np.asarray([w * ROUTE_WHERE.get(w, ROUTE_OTHER) if w != WHERE_NAME else 1.0 for w in wheres],
                       dtype=np.float32),
            np.fromiter((column_numbers[c] if c else -1 for _w, c in entry.values()), dtype=np.int32,
                        count=len(entry)))
    part_tables: dict[str, list[int]] = {}
    for table_id, table in tables.items():
        for part in table.name_parts:
            part_tables.setdefault(part, []).append(numbers[table_id])
    initials: dict[str, list[str]] = {}
    for token in sorted(tokens):
        if token[:1].isalpha():
            initials.setdefault(token[0], []).append(token)
    return Lexicon(
        generation=generation, tables=tables, postings=arrays, df={w: len(e) for w, e in postings.items()},
        tokens=frozenset(tokens), units=units, unit_keys=unit_keys, folded=folded,
        adjacent={table: frozenset(found) for table, found in neighbours.items()}, unit_df=unit_df,
        table_ids=table_ids, column_ids=column_ids,
        name_part_tables={part: np.asarray(found, dtype=np.int32) for part, found in part_tables.items()},
        part_counts=np.asarray([len(t.name_parts) for t in tables.values()], dtype=np.float32),
        connection_of=np.asarray([t.connection for t in tables.values()], dtype=object),
        by_initial={letter: tuple(found) for letter, found in initials.items()})


def _fold_copies(tables: dict[str, Table], declared: dict[str, Any]) -> dict[str, str]:
    """copy id -> parent id: a declared ``partitionOf``, or a same-schema table named ``<parent>_<suffix
    with a digit>`` (or ``_old``/``_copy``/...) with exactly the parent's columns."""
    by_name = {(t.connection, t.db, t.name.lower()): t for t in tables.values()}
    folded: dict[str, str] = {}
    for table in tables.values():
        parent_id = declared.get(table.doc_id)
        if not parent_id:
            match = _COPY_SUFFIX.search(table.name)
            parent = by_name.get((table.connection, table.db, table.name[: match.start()].lower())) if match else None
            if parent is None or sorted(parent.columns.values()) != sorted(table.columns.values()):
                continue
            parent_id = parent.doc_id
        if parent_id in tables and parent_id != table.doc_id:
            folded[table.doc_id] = str(parent_id)
            tables[str(parent_id)].copies.append(table.doc_id)
    return folded


def _units(pairs: list[tuple[str, str, dict[str, Any]]], tables: dict[str, Table], folded: dict[str, str]
           ) -> tuple[dict[int, list[str]], dict[int, frozenset[str]]]:
    """Schemas joined by a foreign key share a unit (union-find over the cross-schema fk edges): a declared
    key, or an inferred one the scan is sure of (``order_id`` -> ``orders.id``, confidence >= STRONG_INFERRED).
    A weaker guess across schemas (``cid`` -> some ``conference``) is no evidence that two schemas are one
    database: pooled databases are full of such coincidences."""
    schema_of = {t.doc_id: (t.connection, t.db) for t in tables.values()}
    parent: dict[tuple[str | None, str], tuple[str | None, str]] = {s: s for s in schema_of.values()}

    def find(s: tuple[str | None, str]) -> tuple[str | None, str]:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for source, target, meta in pairs:
        a, b = schema_of.get(source), schema_of.get(target)
        strong = not meta.get("inferred") or float(meta.get("confidence") or 0.0) >= STRONG_INFERRED
        if a is not None and b is not None and a != b and strong and source not in folded:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb, key=str)] = min(ra, rb, key=str)
    numbers: dict[tuple[str | None, str], int] = {}
    units: dict[int, list[str]] = {}
    names: dict[int, set[str]] = {}
    for table in tables.values():
        root = find((table.connection, table.db))
        table.unit = numbers.setdefault(root, len(numbers))
        units.setdefault(table.unit, []).append(table.doc_id)
        names.setdefault(table.unit, set()).update(
            key(w) for w in (*identifier_words(table.db), *identifier_words(table.connection or "")))
    return units, {unit: frozenset(words) for unit, words in names.items()}
