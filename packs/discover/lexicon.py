"""The catalog as discover ranks it: every table's words (its name, its columns' names, comments), built
once per index generation from the index's table and column documents (and kept beside the index by
``lexicon_store``, so a new process reads it).

* Words are comparison keys (``khive.index.morph.key``) of the identifier words (``morph.identifier_words``:
  case, digit and separator splits, segmented runs, expanded abbreviations) and of the comments.
* ``postings`` maps a key to the tables holding it, with where (table name 1.0, column name, comment) and
  which column; ``df`` counts the tables holding a key anywhere, for its rarity.
* Partitions and empty copies (``payment_p2007_01`` beside ``payment``, same columns) are folded into the
  table they copy: they add nothing a question could need that the parent lacks.
* ``phrases`` maps two words written together in one column name (``BillingCountry``, ``unit_price``,
  ``cs_ext_discount_amt``) to the tables holding such a column: a question naming both words together
  names that column more surely than either word alone does.
* Tables are grouped into routing units: a schema of a connection, merged with every schema it shares a
  foreign key with (a warehouse whose sales schema references its person schema is one unit).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from khive.index.morph import ABBREVIATIONS, identifier_words, key, segment, split_identifier
from packs.discover import comment_weights
from packs.discover.text import STOPWORDS, split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

WHERE_NAME, WHERE_COLUMN, WHERE_TABLE_NOTE, WHERE_COLUMN_NOTE = 1.0, 0.7, 0.55, 0.45
# A word only the sampled values of a column hold ("films in French": language.name holds French): weaker
# than any name or comment, and only for words nothing in the catalog's names or comments holds.
WHERE_VALUE = 0.2
VALUE_WORDS = 3  # a sampled value of at most this many words and VALUE_CHARS characters names a thing;
VALUE_CHARS = 40  # a longer one is free text (a film's description), whose words say little about the table
BORROWED = 0.6  # a name word that is the whole name of a table it references (store_sales -> store)
# Where a word matched, as routing evidence: a table named after it says far more than a column.
ROUTE_WHERE = {WHERE_NAME: 1.0, WHERE_COLUMN: 0.5}
STRONG_INFERRED = 0.95  # an inferred key this sure links schemas like a declared one
ROUTE_OTHER = 0.7  # anything else (comments, borrowed names) counts this share of its strength
NOTE_WHERES = (WHERE_TABLE_NOTE, WHERE_COLUMN_NOTE)
VIEW_KINDS = ("view", "materialized_view")
Keyed = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]  # (word, table, column) rows
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
    view: bool = False  # a view or materialized view: it restates words of the tables it reads


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
    phrases: dict[tuple[str, str], Posting] = field(default_factory=dict)  # sorted key pair -> tables, columns
    forms: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)  # memo of forms.py

    def idf(self, count: int) -> float:
        return math.log(1.0 + (len(self.tables) + 1) / (count + 0.5))


def name_parts(name: str) -> frozenset[str]:
    """Keys of the words a table name is made of: ``businessentity`` -> business, entity."""
    parts: list[str] = []
    for piece in split_identifier(name):
        parts.extend(segment(piece) if piece.isalpha() else (piece,))
    return frozenset(key(p) for p in parts if not p.isdigit()) or frozenset({key(name)})


def word_slots(identifier: str) -> list[frozenset[str]]:
    """The identifier's words in order, each as the keys it may stand for: ``cs_ext_discount_amt`` ->
    {c}, {ext, extended}, {discount}, {amt, amount}; lower-case runs are segmented first."""
    slots: list[frozenset[str]] = []
    for piece in split_identifier(identifier):
        for part in segment(piece) if piece.isalpha() else (piece,):
            expansions = [w for w in ABBREVIATIONS.get(part, ()) if len(ABBREVIATIONS[part]) == 1]
            slots.append(frozenset(key(w) for w in (part, *expansions)))
    return slots


def phrase_pairs(identifier: str) -> set[tuple[str, str]]:
    """Every (sorted) pair of keys of two adjacent words of the identifier."""
    slots = word_slots(identifier)
    return {(min(a, b), max(a, b)) for left, right in pairwise(slots) for a in left for b in right if a != b}


def note_keys(text: str) -> set[str]:
    return {key(word) for word in split_words(text) if word not in STOPWORDS and len(word) > 1}


NO_SAMPLES = "[]"  # most columns' (none sampled, or every value filtered): nothing to read


def value_text(samples: str) -> str:
    """The words of a column's sampled values (JSON text of the list) that name things: short string values
    of letters (``French``, ``Sales Representative``), not free text, numbers or codes."""
    try:
        values = orjson.loads(samples)
    except orjson.JSONDecodeError:
        return ""
    named = [v.strip() for v in values if isinstance(v, str)] if isinstance(values, list) else []
    return " ".join(v for v in named if v and len(v) <= VALUE_CHARS and len(v.split()) <= VALUE_WORDS
                    and not any(ch.isdigit() for ch in v))


def column_ids(tables: dict[str, Table]) -> list[str]:
    """Every column's doc id by its number: table by table, each table's columns as the index holds them."""
    return [column for table in tables.values() for column in table.columns]


def build(index: RetrievalIndex) -> Lexicon:
    """The lexicon from the index's table and column documents. A catalog repeats its column names (``id``,
    ``created_at``) and comments across thousands of tables: each distinct one is split into words once, and
    the (word, table, column) rows of all the columns are resolved with numpy, not one at a time."""
    generation = index.generation
    table_rows = index.outline(["table"], ["comment", "description", "estimatedRows", "partitionOf", "kind"])
    # A column document's metadata holds the catalog's comment; its description (people's, in the shard) is in
    # the document's text, not in its metadata (packs/scan/index.py). Its samples name things (``value_text``).
    column_rows = index.outline(["column"], ["comment", "samples"], titles=False)
    tables: dict[str, Table] = {}
    notes: dict[str, str] = {}
    for doc_id, connection, title, comment, description, rows, _parent, kind in table_rows:
        db, _, name = str(title).partition(".")
        tables[doc_id] = Table(doc_id, connection, db, name, 0, int(rows) if isinstance(rows, (int, float)) else None,
                               frozenset(key(w) for w in identifier_words(name)), name_parts(name),
                               view=kind in VIEW_KINDS)
        notes[doc_id] = " ".join(str(t) for t in (description, comment) if t)
    table_ids = list(tables)
    numbers = {table_id: n for n, table_id in enumerate(table_ids)}
    words = _Vocabulary()
    columns = _Columns(words)
    head_of_last, table, number = "", None, -1
    for doc_id, comment, samples in column_rows:
        head, _, name = doc_id.rpartition(".")
        if head != head_of_last:  # a table's columns come one after another: look the table up once
            head_of_last = head
            table = tables.get("table:" + head.split(":", 1)[1])
            number = -1 if table is None else numbers[table.doc_id]
        if table is not None:
            table.columns[doc_id] = name
            columns.add(number, name, str(comment) if comment else "",
                        value_text(samples) if samples and samples != NO_SAMPLES else "")
    folded = _fold_copies(tables, {row[0]: row[6] for row in table_rows if row[6]})
    skipped = np.zeros(len(tables), dtype=bool)  # folded copies add no words: their parent has them all
    skipped[[numbers[t] for t in folded]] = True
    found, phrases_found, values = columns.rows(skipped)
    tokens = columns.tokens(skipped)
    for number, table in enumerate(tables.values()):
        if table.doc_id in folded:
            continue
        tokens.update(split_identifier(table.name))
        found.add(words.numbers(table.name_keys), number, WHERE_NAME, -1)
        if notes[table.doc_id]:
            found.add(words.numbers(note_keys(notes[table.doc_id])), number, WHERE_TABLE_NOTE, -1)
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
    for unit, unit_words in unit_keys.items():
        for word in unit_words:
            unit_df[word] = unit_df.get(word, 0) + len(units[unit])
    found.add_values(*values)
    borrowed = [(words.known[word], numbers[t.doc_id]) for t in tables.values() for word in t.borrowed
                if word in words.known]
    note_factor = comment_weights.boilerplate(*found.notes(), len(words.spelled))
    postings = _postings(found, words.spelled, borrowed, len(tables), note_factor)
    part_tables: dict[str, list[int]] = {}
    for table_id, table in tables.items():
        for part in table.name_parts:
            part_tables.setdefault(part, []).append(numbers[table_id])
    initials: dict[str, list[str]] = {}
    for token in sorted(tokens):
        if token[:1].isalpha():
            initials.setdefault(token[0], []).append(token)
    return Lexicon(
        generation=generation, tables=tables, postings=postings, df={w: len(p.tables) for w, p in postings.items()},
        tokens=frozenset(tokens), units=units, unit_keys=unit_keys, folded=folded,
        adjacent={table: frozenset(found) for table, found in neighbours.items()}, unit_df=unit_df,
        table_ids=table_ids, column_ids=column_ids(tables),
        name_part_tables={part: np.asarray(found, dtype=np.int32) for part, found in part_tables.items()},
        part_counts=np.asarray([len(t.name_parts) for t in tables.values()], dtype=np.float32),
        connection_of=np.asarray([t.connection for t in tables.values()], dtype=object),
        by_initial={letter: tuple(found) for letter, found in initials.items()},
        phrases=_phrases(phrases_found, list(columns.phrase_numbers)))


class _Vocabulary:
    """Keys by number, so the rows of every column can be numpy arrays."""

    def __init__(self) -> None:
        self.known: dict[str, int] = {}  # key -> its number
        self.spelled: list[str] = []  # number -> key

    def numbers(self, words: Iterable[str]) -> list[int]:
        out = []
        for word in words:
            number = self.known.get(word)
            if number is None:
                number = self.known[word] = len(self.spelled)
                self.spelled.append(word)
            out.append(number)
        return out


class _Packed:
    """Lists of numbers (the keys of one distinct column name, of one distinct comment) in one flat array."""

    def __init__(self) -> None:
        self._flat: list[int] = []
        self._starts: list[int] = []
        self._counts: list[int] = []

    def add(self, numbers: list[int]) -> int:
        self._starts.append(len(self._flat))
        self._counts.append(len(numbers))
        self._flat.extend(numbers)
        return len(self._counts) - 1

    def expand(self, items: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(the numbers of each of ``items`` in turn, the position in ``items`` each one came from)."""
        counts = np.asarray(self._counts, dtype=np.int64)[items]
        starts = np.asarray(self._starts, dtype=np.int64)[items]
        ends = np.cumsum(counts)
        offsets = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - counts, counts)
        return np.asarray(self._flat, dtype=np.int64)[np.repeat(starts, counts) + offsets], \
            np.repeat(np.arange(len(items)), counts)


class _Columns:
    """Every column of the catalog as numbers (its table, its distinct name, its distinct comment)."""

    def __init__(self, words: _Vocabulary) -> None:
        self.words = words
        self.phrase_numbers: dict[tuple[str, str], int] = {}
        self._tables: list[int] = []
        self._names: list[int] = []
        self._noted: list[int] = []  # positions of the columns with a comment
        self._notes: list[int] = []
        self._name_numbers: dict[str, int] = {}
        self._note_numbers: dict[str, int] = {}
        self._name_keys, self._name_phrases, self._note_keys = _Packed(), _Packed(), _Packed()
        self._valued: list[int] = []  # positions of the columns with sampled values that name things
        self._value_keys = _Packed()

    def add(self, table: int, name: str, note: str, values: str = "") -> None:
        number = self._name_numbers.get(name)
        if number is None:
            number = self._name_numbers[name] = self._name_keys.add(
                self.words.numbers({key(w) for w in identifier_words(name)}))
            self._name_phrases.add([self.phrase_numbers.setdefault(pair, len(self.phrase_numbers))
                                    for pair in phrase_pairs(name)])
        if note:
            said = self._note_numbers.get(note)
            if said is None:
                said = self._note_numbers[note] = self._note_keys.add(self.words.numbers(note_keys(note)))
            self._noted.append(len(self._tables))
            self._notes.append(said)
        if values:
            keys = note_keys(values)
            if keys:
                self._valued.append(len(self._tables))
                self._value_keys.add(self.words.numbers(keys))
        self._tables.append(table)
        self._names.append(number)

    def rows(self, skipped: np.ndarray[Any, Any]) -> tuple[_Found, _Found, Keyed]:
        """(word, table, where, column) rows of the column names and comments, (phrase, table, column) rows of
        the names, and (word, table, column) rows of the sampled values (``_Found.add_values`` takes them once
        every name is known); the columns of ``skipped`` tables say nothing. Columns are numbered table by
        table, each table's columns as the index holds them."""
        tables = np.asarray(self._tables, dtype=np.int64)
        column_numbers = np.empty(len(tables), dtype=np.int64)
        column_numbers[np.argsort(tables, kind="stable")] = np.arange(len(tables))
        kept = np.flatnonzero(~skipped[tables]) if len(tables) else np.zeros(0, dtype=np.int64)
        names = np.asarray(self._names, dtype=np.int64)[kept]
        found, phrases = _Found(), _Found()
        for packed, into in ((self._name_keys, found), (self._name_phrases, phrases)):
            numbers, owner = packed.expand(names)
            into.add_rows(numbers, tables[kept][owner], WHERE_COLUMN, column_numbers[kept][owner])

        def keyed(positions: list[int], items: np.ndarray[Any, Any], packed: _Packed) -> Keyed:
            """The rows of the keys ``packed`` holds for the columns at ``positions`` (``items``: their entries)."""
            at = np.asarray(positions, dtype=np.int64)
            said = ~skipped[tables[at]] if len(at) else np.zeros(0, dtype=bool)
            numbers, owner = packed.expand(items[said])
            return numbers, tables[at[said]][owner], column_numbers[at[said]][owner]

        words, owners, columns = keyed(self._noted, np.asarray(self._notes, dtype=np.int64), self._note_keys)
        found.add_rows(words, owners, WHERE_COLUMN_NOTE, columns)
        return found, phrases, keyed(self._valued, np.arange(len(self._valued)), self._value_keys)

    def tokens(self, skipped: np.ndarray[Any, Any]) -> set[str]:
        """Identifier tokens of the column names of tables not ``skipped``."""
        tables = np.asarray(self._tables, dtype=np.int64)
        used: list[int] = np.unique(np.asarray(self._names, dtype=np.int64)[~skipped[tables]]).tolist() \
            if len(tables) else []
        spelled = list(self._name_numbers)
        tokens: set[str] = set()
        for number in used:
            tokens.update(split_identifier(spelled[number]))
        return tokens


class _Found:
    """(word, table, where, column) rows, gathered as arrays (and lists, a table at a time) and resolved once."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray[Any, Any], ...]] = []
        self._rows: tuple[list[int], list[int], list[float], list[int]] = ([], [], [], [])

    def add_rows(self, words: np.ndarray[Any, Any], tables: np.ndarray[Any, Any], where: float,
                 columns: np.ndarray[Any, Any]) -> None:
        self._parts.append((words, tables, np.full(len(words), where), columns))

    def add_values(self, words: np.ndarray[Any, Any], tables: np.ndarray[Any, Any],
                   columns: np.ndarray[Any, Any]) -> None:
        """Rows of sampled values, for the words no name or comment already holds (added last, so that set
        is known: a value never lowers the rarity of a word the catalog names)."""
        named = [part[0] for part in self._parts] + [np.asarray(self._rows[0], dtype=np.int64)]
        fresh = ~np.isin(words, np.concatenate(named)) if len(words) else np.zeros(0, dtype=bool)
        self.add_rows(words[fresh], tables[fresh], WHERE_VALUE, columns[fresh])

    def add(self, words: list[int], table: int, where: float, column: int) -> None:
        all_words, tables, wheres, columns = self._rows
        all_words.extend(words)
        tables.extend([table] * len(words))
        wheres.extend([where] * len(words))
        columns.extend([column] * len(words))

    def _joined(self) -> tuple[np.ndarray[Any, Any], ...]:
        """Every row gathered so far as four arrays (word, table, where, column)."""
        listed = tuple(np.asarray(values, dtype=dtype)
                       for values, dtype in zip(self._rows, (np.int64, np.int64, np.float64, np.int64), strict=True))
        return tuple(np.concatenate(part) for part in zip(*self._parts, listed, strict=True))

    def notes(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(word, document) of every comment row: a document is a commented column (its number) or a commented
        table (past every column number)."""
        words, tables, wheres, columns = self._joined()
        noted = np.isin(wheres, NOTE_WHERES)
        offset = int(columns.max()) + 1 if len(columns) else 0
        documents = np.where(columns >= 0, columns, offset + tables)
        return words[noted], documents[noted]

    def best(self) -> tuple[np.ndarray[Any, Any], ...]:
        """(word, table, where, column) arrays with one row per (word, table), sorted by both: the strongest
        where, and of equally strong rows the first column (columns are numbered in catalog order)."""
        words, tables, wheres, columns = self._joined()
        order = np.lexsort((columns, -wheres, tables, words))
        words, tables, wheres, columns = words[order], tables[order], wheres[order], columns[order]
        first = np.ones(len(words), dtype=bool)
        first[1:] = (words[1:] != words[:-1]) | (tables[1:] != tables[:-1])
        return words[first], tables[first], wheres[first], columns[first]


def _slices(numbers: np.ndarray[Any, Any]) -> Iterable[tuple[int, int, int]]:
    """(number, start, end) of each run of equal values in the sorted ``numbers``."""
    if not len(numbers):
        return ()
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(numbers)) + 1, [len(numbers)])).tolist()
    firsts = numbers[bounds[:-1]].tolist()
    return ((number, start, end) for number, (start, end) in zip(firsts, pairwise(bounds), strict=True))


def _postings(found: _Found, spelled: list[str], borrowed: list[tuple[int, int]], n_tables: int,
              note_factor: np.ndarray[Any, Any]) -> dict[str, Posting]:
    words, tables, wheres, columns = found.best()
    # a comment's word counts by its rarity among the catalog's comments (boilerplate ~ a stop word)
    wheres = np.where(np.isin(wheres, NOTE_WHERES), wheres * note_factor[words], wheres)
    if borrowed:  # a name word that is the whole name of a table it references says less (store_sales -> store)
        lent = np.isin(words * n_tables + tables, np.asarray([w * n_tables + t for w, t in borrowed], dtype=np.int64))
        wheres = np.where(lent & (wheres == WHERE_NAME), wheres * BORROWED, wheres)
    share = np.full(len(wheres), ROUTE_OTHER)
    for where, value in ROUTE_WHERE.items():
        share[wheres == where] = value
    evidence = np.where(wheres == WHERE_NAME, 1.0, wheres * share).astype(np.float32)
    tables32, wheres32, columns32 = tables.astype(np.int32), wheres.astype(np.float32), columns.astype(np.int32)
    return {spelled[word]: Posting(tables32[start:end], wheres32[start:end], evidence[start:end], columns32[start:end])
            for word, start, end in _slices(words)}


def _phrases(found: _Found, spelled: list[tuple[str, str]]) -> dict[tuple[str, str], Posting]:
    pairs, tables, _wheres, columns = found.best()
    tables32, columns32 = tables.astype(np.int32), columns.astype(np.int32)
    where = np.full(len(pairs), WHERE_COLUMN, dtype=np.float32)
    evidence = np.full(len(pairs), ROUTE_WHERE[WHERE_COLUMN], dtype=np.float32)
    return {spelled[pair]: Posting(tables32[start:end], where[start:end], evidence[start:end], columns32[start:end])
            for pair, start, end in _slices(pairs)}


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
