"""Relationship inference beyond declared foreign keys: a pure function over a ``CatalogSnapshot``.

Each candidate link ``child(columns) -> parent(key)`` collects ``Evidence``; every weight is a log-odds
contribution, and the confidence is the logistic of their sum, so an agent can read why a link was kept
and how much each reason counted. Signals:

* ``name_pattern``  the child column names the parent (``customer_id`` -> ``customers.id``,
  ``CustomerId`` -> ``Customer.CustomerId``, ``original_language_id`` -> ``language``,
  ``billtoaddressid`` -> ``address.addressid``), or repeats the parent's key name (``film_id``); when
  several tables share that key name, the one the child table is named after wins
  (``employeepayhistory.businessentityid`` -> ``employee``); all columns of a composite key, by name,
  give a composite link (review tier: names alone);
* ``role_name``     ``manager_id`` / ``reports_to`` / ``support_rep_id`` towards person-like tables or the
  table itself: kept only with strong value overlap, names alone say too little;
* ``comment``       the column comment says so (``Foreign key to Person.BusinessEntityID``);
* ``type_compatible`` normalized types must match (integer~integer, string~string, uuid~uuid); anything
  else is never a link;
* ``pk_target``     the parent column is its table's primary key (or, keyless, looks like one by name);
* ``value_overlap`` the child's sampled values among the parent's. Samples are bounded top-k lists: when
  the parent's sample holds its whole domain, missing values count against a link; otherwise only hits
  count, and a miss proves nothing. A missing sample is never negative;
* ``cardinality``   one_to_one when the child columns are the child's whole primary key, else many_to_one;
* penalties: ``low_cardinality`` (0/1 flags), ``ambiguous`` (several parents fit about as well: they share
  the confidence).

Never a child: a table's own identifier (``orders.order_id``, a sequence-filled column), a generic name
(``id``, ``status``, ``type``), and a partition or archive copy repeating its parent's key. Declared foreign
keys are authoritative: their columns are not inferred again. Views are skipped by default (their keys
are their base tables' keys; view lineage is another signal).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

from khive.connections.catalog import CatalogSnapshot, Column, ColumnSample, Table
from packs.scan.naming import (
    GENERIC_NAMES,
    PERSON_WORDS,
    TABLE_PREFIXES,
    KeyName,
    key_name,
    role_of,
    singular_words,
    squash,
    words,
)

Tier = Literal["accepted", "review"]
Cardinality = Literal["one_to_one", "many_to_one"]

KEY_TYPES = frozenset({"integer", "string", "uuid", "number", "other"})
_SEQUENCE_DEFAULT_RE = re.compile(r"nextval\s*\(|identity|autoincrement|generated", re.IGNORECASE)
_COMMENT_RE = re.compile(
    r"\b(?:foreign\s+key|fk)\s*(?:to|references|->|=>|:|on)?\s*(?:the\s+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,2})"
    r"|\b(?:references|refers\s+to|points\s+to|links\s+to)\s+(?:the\s+)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,2})",
    re.IGNORECASE)

# Log-odds weights. Name rules give the base; a lone strong name rule with compatible types is accepted.
W_NAME_EXACT = 2.8  # customer_id -> customers.id / customers.customer_id
W_NAME_MASTER = 3.4  # order_items.order_id -> orders.order_id; decides between tables sharing a key name
W_NAME_OTHER_KEY = 1.6  # personid -> person, whose key is businessentityid
W_NAME_ROLE_PREFIX = 2.2  # original_language_id -> language.language_id
W_NAME_ROLE_PREFIX_SQUASHED = 1.7  # billtoaddressid -> address.addressid (no word boundary to go by)
W_NAME_SAME_KEY = 2.2  # territoryid -> salesterritory.territoryid, the only table keyed by that name
W_NAME_SAME_KEY_BARE = 1.0  # documentnode -> document.documentnode (no key suffix)
W_NAME_BARE_TABLE = 0.2  # customer -> customers.id (no key suffix: needs values to back it)
W_ROLE = 0.4  # reports_to -> employees.employee_id (needs strong overlap)
W_COMMENT = 3.0
W_COMMENT_OTHER = -2.5  # the column's comment points somewhere else
W_TYPE = {"integer": 0.4, "string": 0.3, "uuid": 0.6, "other": 0.3}
W_TYPE_LOOSE = -0.4  # integer~number, uuid~string
W_PK = 0.3
W_UNIQUE_BY_NAME = -0.6
W_COMPOSITE = 1.0  # all columns of a composite key, by name: review unless the values agree
W_FLAG = -2.5
STRONG_OVERLAP = 0.9  # the value_overlap weight a role-named link needs


@dataclass(frozen=True)
class Evidence:
    kind: str  # name_pattern | role_name | comment | type_compatible | pk_target | value_overlap | cardinality | ...
    detail: str
    weight: float  # log-odds contribution; 0 for facts that only inform


@dataclass(frozen=True)
class InferredRelationship:
    from_db: str
    from_table: str
    from_columns: tuple[str, ...]
    to_db: str
    to_table: str
    to_columns: tuple[str, ...]
    confidence: float
    tier: Tier
    evidence: tuple[Evidence, ...]

    @property
    def cardinality(self) -> Cardinality:
        for item in self.evidence:
            if item.kind == "cardinality" and item.detail.startswith("one_to_one"):
                return "one_to_one"
        return "many_to_one"


@dataclass(frozen=True)
class _TableInfo:
    table: Table
    words: tuple[str, ...]  # singular, prefixes like tbl_ dropped: order_items -> ("order", "item")
    squashed: str
    pk: tuple[Column, ...]
    person_like: bool
    column_names: frozenset[str]  # lower case
    key: tuple[str, str]  # (db, name)


@dataclass
class _Candidate:
    child: _TableInfo
    columns: tuple[Column, ...]
    parent: _TableInfo
    targets: tuple[Column, ...]
    evidence: list[Evidence]
    needs_values: bool = False  # a role name: kept only when values (or a comment) back it

    @property
    def logit(self) -> float:
        return sum(item.weight for item in self.evidence)


def _table_info(table: Table) -> _TableInfo:
    parts = words(table.name)
    if len(parts) > 1 and parts[0] in TABLE_PREFIXES:
        parts = parts[1:]
    single = singular_words(parts)
    pk = tuple(sorted((c for c in table.columns if c.primary_key), key=lambda c: c.ordinal))
    person_like = bool(single) and (single[-1] in PERSON_WORDS or squash(single) in PERSON_WORDS)
    return _TableInfo(table=table, words=single, squashed=squash(single), pk=pk, person_like=person_like,
                      column_names=frozenset(c.name.lower() for c in table.columns), key=(table.db, table.name))


def _value_key(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value.strip()
    return str(value)


class _Samples:
    def __init__(self, samples: Iterable[ColumnSample]) -> None:
        self._by_column = {(s.db, s.table, s.column): s for s in samples}

    def get(self, table: Table, column: Column) -> ColumnSample | None:
        sample = self._by_column.get((table.db, table.name, column.name))
        if sample is None or sample.skipped or not sample.values:
            return None
        return sample

    def overlap(self, child: _TableInfo, column: Column, parent: _TableInfo, target: Column) -> Evidence | None:
        child_sample, parent_sample = self.get(child.table, column), self.get(parent.table, target)
        if child_sample is None or parent_sample is None:
            return None
        child_values = {k for k in map(_value_key, child_sample.values) if k is not None}
        parent_values = {k for k in map(_value_key, parent_sample.values) if k is not None}
        if not child_values or not parent_values:
            return None
        hits = len(child_values & parent_values)
        share = hits / len(child_values)
        where = f"{hits}/{len(child_values)} sampled values of {column.name} among {target.name}'s"
        # Small integer domains overlap by chance; a single hit is worth a third of three.
        strength = min(1.0, hits / 3)
        if self.complete(parent, target):
            domain = f"{where} complete domain of {len(parent_values)}"
            if share == 1.0:
                return Evidence("value_overlap", domain, round(1.6 * strength, 3))
            if share >= 0.9:
                return Evidence("value_overlap", domain, round(0.9 * strength, 3))
            if share >= 0.5:
                return Evidence("value_overlap", domain + " (some values orphaned)", -0.8)
            if hits:
                return Evidence("value_overlap", domain + " (most values have no parent)", -3.0)
            return Evidence("value_overlap", domain + " (no value has a parent)", -6.0)
        partial = f"{where} top {len(parent_values)} (bounded sample)"
        if hits == 0:
            return Evidence("value_overlap", partial + "; inconclusive", 0.0)
        if share >= 0.8:
            return Evidence("value_overlap", partial, round(1.2 * strength, 3))
        if share >= 0.5:
            return Evidence("value_overlap", partial, round(0.6 * strength, 3))
        return Evidence("value_overlap", partial, round(0.2 * strength, 3))

    def complete(self, parent: _TableInfo, target: Column) -> bool:
        """Whether the parent's sample lists every value its key has (a small lookup table)."""
        sample = self.get(parent.table, target)
        return sample is not None and _complete(sample, parent.table)

    def is_flag(self, table: Table, column: Column) -> bool:
        """0/1-like values with a 0 among them (keys rarely start at 0): a flag, not a reference."""
        sample = self.get(table, column)
        if sample is None:
            return False
        values = {k.lower() for k in map(_value_key, sample.values) if k is not None}
        return bool(values) and values <= _FLAG_VALUES and bool(values & _FALSY) \
            and (sample.distinct is None or sample.distinct <= 2)


_FLAG_VALUES = frozenset({"0", "1", "true", "false", "t", "f", "y", "n"})
_FALSY = frozenset({"0", "false", "f", "n"})


def _complete(sample: ColumnSample, table: Table) -> bool:
    """Whether the sample lists every distinct value of the column (small lookup tables)."""
    if sample.distinct is None or sample.distinct > len(sample.values):
        return False
    rows = table.estimated_rows
    return not (rows is not None and sample.sampled_rows is not None and rows > sample.sampled_rows)


def _type_evidence(child: Column, target: Column) -> Evidence | None:
    a, b = child.normalized_type, target.normalized_type
    if a not in KEY_TYPES or b not in KEY_TYPES:
        return None
    if a == b:
        if a == "other" and _base_type(child.native_type) != _base_type(target.native_type):
            return None
        if a == "number":
            return Evidence("type_compatible", f"number ~ number ({target.native_type})", 0.0)
        return Evidence("type_compatible", f"{a} ~ {b}", W_TYPE[a])
    if {a, b} in ({"integer", "number"}, {"uuid", "string"}):
        return Evidence("type_compatible", f"{a} ~ {b} (loosely)", W_TYPE_LOOSE)
    return None


def _base_type(native: str) -> str:
    return re.sub(r"\(.*\)", "", native).strip().lower()


def _sequence_default(column: Column) -> bool:
    return column.default is not None and bool(_SEQUENCE_DEFAULT_RE.search(column.default))


class _Inference:
    def __init__(self, snapshot: CatalogSnapshot, include_views: bool) -> None:
        kinds = {"table", "foreign_table", "external"} | ({"view", "materialized_view"} if include_views else set())
        tables = sorted((t for t in snapshot.tables if t.kind in kinds), key=lambda t: (t.db, t.name))
        self.infos = [_table_info(t) for t in tables]
        self.samples = _Samples(snapshot.samples)
        self.by_squashed: dict[str, list[_TableInfo]] = defaultdict(list)
        self.by_name: dict[str, list[_TableInfo]] = defaultdict(list)
        self.key_owners: dict[str, list[_TableInfo]] = defaultdict(list)  # single-column key name -> tables
        self.person_like = [info for info in self.infos if info.person_like]
        self.composite_by_first: dict[str, list[_TableInfo]] = defaultdict(list)  # first key column -> tables
        # Column names repeat across tables (customer_id in fifty of them): their lookups are made once.
        self._keys: dict[tuple[str, str], tuple[Column, Evidence] | None] = {}
        self._named: dict[tuple[str, str], dict[tuple[str, str], _TableInfo]] = {}
        self._named_sorted: dict[tuple[str, str], list[_TableInfo]] = {}
        for info in self.infos:
            self.by_squashed[info.squashed].append(info)
            self.by_name[info.table.name.lower()].append(info)
            keyed = self.single_key(info)
            if keyed is not None:
                self.key_owners[key_name(keyed[0].name).squashed].append(info)
            elif len(info.pk) > 1:
                self.composite_by_first[key_name(info.pk[0].name).squashed].append(info)

    # -- targets ---------------------------------------------------------------------------------------

    def single_key(self, info: _TableInfo) -> tuple[Column, Evidence] | None:
        if info.key not in self._keys:
            self._keys[info.key] = self._single_key(info)
        return self._keys[info.key]

    def _single_key(self, info: _TableInfo) -> tuple[Column, Evidence] | None:
        if len(info.pk) == 1:
            return info.pk[0], Evidence("pk_target", f"{info.table.name}.{info.pk[0].name} is the primary key", W_PK)
        if info.pk:
            return None
        for column in info.table.columns:  # keyless: `id` or `<table>_id` is unique by convention
            name = key_name(column.name)
            if name.squashed == "id" or (name.suffix == "id" and name.stem == info.squashed):
                return column, Evidence("pk_target", f"{info.table.name} has no primary key; "
                                        f"{column.name} looks unique by name only", W_UNIQUE_BY_NAME)
        return None

    # -- single-column candidates --------------------------------------------------------------------------

    def candidates_for(self, child: _TableInfo, column: Column) -> list[_Candidate]:
        name = key_name(column.name)
        if name.squashed in GENERIC_NAMES or column.normalized_type not in KEY_TYPES:
            return []
        own_key = len(child.pk) == 1 and child.pk[0].name == column.name
        if name.stem == child.squashed or (own_key and not name.stem):
            return []  # the table's own identifier (declared as its key or not)
        if _sequence_default(column):
            return []  # filled from a sequence: a surrogate key of its own, not a reference
        found: dict[tuple[str, str], _Candidate] = {}
        role = role_of(name)
        for parent in self._parents_for(name, child, role):
            keyed = self.single_key(parent)
            if keyed is None:
                continue
            target, pk_evidence = keyed
            same_table = parent.key == child.key
            if same_table and (target.name == column.name or not (
                    role == "hierarchy" or (role and child.person_like))):
                continue
            if self._clone(child, parent) and key_name(target.name).squashed == name.squashed:
                continue  # a partition or copy of the parent repeats its key; it does not reference it
            naming = self._name_evidence(name, column, child, parent, target, role, own_key)
            if naming is None:
                continue
            typed = _type_evidence(column, target)
            if typed is None:
                continue
            evidence = [naming, typed, pk_evidence]
            found[parent.key] = _Candidate(child, (column,), parent, (target,), evidence,
                                           needs_values=naming.kind == "role_name")
        self._add_comment(found, child, column)
        return list(found.values())

    def _parents_for(self, name: KeyName, child: _TableInfo, role: str | None) -> list[_TableInfo]:
        """Tables some name rule could link this column to: lookups, never a scan of every table."""
        lookup = (name.stem, name.squashed)
        named = self._named.get(lookup)
        if named is None:
            named = {}
            pools = [self.by_squashed.get(name.stem, []), self.key_owners.get(name.squashed, [])]
            pools.extend(self.by_squashed.get(name.stem[start:], []) for start in range(1, len(name.stem) - 2))
            for pool in pools:
                named.update((info.key, info) for info in pool)
            self._named[lookup] = named
            self._named_sorted[lookup] = [named[key] for key in sorted(named)]
        if not role:
            return self._named_sorted[lookup]
        picked = dict(named)
        picked.update((info.key, info) for info in [*self.person_like, child])
        return [picked[key] for key in sorted(picked)]

    def _name_evidence(self, name: KeyName, column: Column, child: _TableInfo, parent: _TableInfo,
                       target: Column, role: str | None, own_key: bool) -> Evidence | None:
        target_name = key_name(target.name)
        label = f"{column.name} -> {parent.table.name}.{target.name}"
        if (name.suffix is not None and name.squashed == target_name.squashed and len(parent.squashed) >= 3
                and child.key != parent.key and len(child.squashed) > len(parent.squashed)
                and child.squashed.startswith(parent.squashed)):
            return Evidence("name_pattern", f"{label}: {child.table.name} is named after {parent.table.name}, "
                            "whose key has this name", W_NAME_MASTER)
        if name.suffix is not None and name.stem == parent.squashed:
            if target_name.squashed in ("id", name.squashed, parent.squashed + name.suffix):
                return Evidence("name_pattern", f"{label}: names the table and its key", W_NAME_EXACT)
            return Evidence("name_pattern", f"{label}: names the table; its key has another name",
                            W_NAME_OTHER_KEY)
        if own_key:
            return None  # a primary key names its parent explicitly or not at all
        if name.suffix is not None and len(parent.squashed) >= 3 and target_name.suffix == name.suffix:
            words_match = (name.split_on_word and len(name.stem_words) > len(parent.words)
                           and name.stem_words[-len(parent.words):] == parent.words)
            if words_match:
                return Evidence("name_pattern", f"{label}: a role-prefixed name of the table", W_NAME_ROLE_PREFIX)
            if (name.stem.endswith(parent.squashed) and len(name.stem) - len(parent.squashed) >= 2
                    and name.stem not in self.by_squashed
                    and name.squashed.endswith(target_name.squashed)):
                return Evidence("name_pattern", f"{label}: ends with the table's key name",
                                W_NAME_ROLE_PREFIX_SQUASHED)
        if (name.squashed == target_name.squashed and len(name.squashed) >= 3
                and name.stem not in self.by_squashed):
            owners = len(self.key_owners.get(name.squashed, ()))
            weight = W_NAME_SAME_KEY if name.suffix else W_NAME_SAME_KEY_BARE
            detail = f"{label}: same name as the table's key"
            if owners > 1:
                weight -= math.log(owners)
                detail += f" ({owners} tables are keyed by that name)"
            return Evidence("name_pattern", detail, round(weight, 3))
        if name.suffix is None and name.stem == parent.squashed and not role:
            return Evidence("name_pattern", f"{label}: the column is named after the table", W_NAME_BARE_TABLE)
        if role and (parent.person_like or parent.key == child.key):
            whose = "its own table" if parent.key == child.key else "a person-like table"
            return Evidence("role_name", f"{label}: a role name towards {whose}", W_ROLE)
        return None

    def _clone(self, child: _TableInfo, parent: _TableInfo) -> bool:
        """A partition, archive or inheritance child: exactly the parent's columns."""
        return len(parent.column_names) >= 3 and parent.column_names == child.column_names

    def _add_comment(self, found: dict[tuple[str, str], _Candidate], child: _TableInfo, column: Column) -> None:
        if not column.comment:
            return
        pointed = self._comment_target(column.comment, child)
        if pointed is None:
            return
        parent, target = pointed
        note = f"{column.name}'s comment names {parent.table.name}.{target.name}"
        for key, candidate in found.items():
            if key != parent.key:
                candidate.evidence.append(Evidence("comment", f"{note}, not this table", W_COMMENT_OTHER))
        if parent.key in found:
            found[parent.key].evidence.append(Evidence("comment", note, W_COMMENT))
            return
        if parent.key == child.key and target.name == column.name:
            return
        typed = _type_evidence(column, target)
        if typed is None:
            return
        keyed = self.single_key(parent)
        pk = keyed[1] if keyed and keyed[0].name == target.name else Evidence(
            "pk_target", f"{target.name} is not {parent.table.name}'s single-column key", W_UNIQUE_BY_NAME)
        found[parent.key] = _Candidate(child, (column,), parent, (target,),
                                       [Evidence("comment", note, W_COMMENT), typed, pk])

    def _comment_target(self, comment: str, child: _TableInfo) -> tuple[_TableInfo, Column] | None:
        for match in _COMMENT_RE.finditer(comment):
            parts = (match.group(1) or match.group(2)).split(".")
            for index, part in enumerate(parts):
                tables = self.by_name.get(part.lower()) or self.by_squashed.get(squash(singular_words(words(part))))
                if not tables:
                    continue
                schema = parts[index - 1].lower() if index else None
                tables = [t for t in tables if schema is None or t.table.db.lower() == schema] or tables
                parent = min(tables, key=lambda t: (t.table.db != child.table.db, t.table.db))
                rest = {key_name(p).squashed for p in parts[index + 1:]}
                named = [c for c in parent.table.columns if key_name(c.name).squashed in rest]
                if named:
                    return parent, named[0]
                keyed = self.single_key(parent)
                if keyed is not None:
                    return parent, keyed[0]
        return None

    # -- composite keys ----------------------------------------------------------------------------------

    def composite_candidates(self, child: _TableInfo, declared: set[str]) -> list[_Candidate]:
        out: list[_Candidate] = []
        if not self.composite_by_first:
            return out
        by_name = {key_name(c.name).squashed: c for c in child.table.columns}
        parents = {p.key: p for name in by_name for p in self.composite_by_first.get(name, [])}
        for parent in (parents[key] for key in sorted(parents)):
            if parent.key == child.key or self._clone(child, parent):
                continue
            columns = [by_name.get(key_name(t.name).squashed) for t in parent.pk]
            if any(c is None or c.name in declared or _sequence_default(c) for c in columns):
                continue
            picked = tuple(c for c in columns if c is not None)
            if {c.name for c in picked} == {c.name for c in child.pk}:
                continue  # same key on both sides: siblings, direction unknown
            types = [_type_evidence(c, t) for c, t in zip(picked, parent.pk, strict=True)]
            if any(t is None for t in types):
                continue
            evidence = [Evidence("name_pattern", f"all {len(picked)} columns of {parent.table.name}'s composite "
                                 f"key appear in {child.table.name}", W_COMPOSITE),
                        Evidence("type_compatible", "all key column types compatible", 0.3),
                        Evidence("pk_target", f"({', '.join(c.name for c in parent.pk)}) is the primary key", W_PK)]
            out.append(_Candidate(child, picked, parent, parent.pk, evidence))
        return out

    # -- scoring -------------------------------------------------------------------------------------------

    def finish(self, candidate: _Candidate) -> None:
        if len(candidate.columns) == 1:
            column, target = candidate.columns[0], candidate.targets[0]
            overlap = self.samples.overlap(candidate.child, column, candidate.parent, target)
            if overlap is not None:
                candidate.evidence.append(overlap)
            if self.samples.is_flag(candidate.child.table, column):
                confirmed = overlap is not None and overlap.weight > 0 and self.samples.complete(
                    candidate.parent, target)
                if not confirmed:
                    candidate.evidence.append(Evidence("low_cardinality", f"{column.name} holds only 0/1-like "
                                                       "values: a flag, not a reference", W_FLAG))
        child_pk = {c.name for c in candidate.child.pk}
        names = {c.name for c in candidate.columns}
        if child_pk and names == child_pk:
            detail = "one_to_one: the child columns are the child's primary key"
        else:
            detail = "many_to_one"
        candidate.evidence.append(Evidence("cardinality", detail, 0.0))


def _backed(candidate: _Candidate) -> bool:
    """A role name needs strong value overlap (or a comment) to stand: names alone say too little."""
    return any((e.kind == "value_overlap" and e.weight >= STRONG_OVERLAP) or (e.kind == "comment" and e.weight > 0)
               for e in candidate.evidence)


def _select(candidates: list[_Candidate]) -> list[_Candidate]:
    """Per child column: the best parents; near ties share an ambiguity penalty, same schema wins."""
    candidates = [c for c in candidates if not c.needs_values or _backed(c)]
    if not candidates:
        return []
    best = max(c.logit for c in candidates)
    close = [c for c in candidates if c.logit >= best - 0.5]
    same_schema = [c for c in close if c.parent.table.db == c.child.table.db]
    if same_schema and len(same_schema) < len(close):
        close = same_schema
    if len(close) > 1:
        # P(link) x P(this parent | link): the column's best logit, shared by a softmax over the close ones.
        link = _sigmoid(best)
        total = sum(math.exp(c.logit - best) for c in close)
        for candidate in close:
            share = math.exp(candidate.logit - best) / total
            penalty = round(_logit(link * share) - candidate.logit, 3)
            candidate.evidence.append(Evidence("ambiguous", f"{len(close)} parents fit about as well "
                                               f"(this one {share:.0%})", penalty))
    return close


def _declared(table: Table) -> tuple[set[str], set[tuple[tuple[str, ...], str, str, tuple[str, ...]]]]:
    columns: set[str] = set()
    links: set[tuple[tuple[str, ...], str, str, tuple[str, ...]]] = set()
    for fk in table.foreign_keys:
        columns.update(fk.columns)
        links.add((fk.columns, fk.ref_db, fk.ref_table, fk.ref_columns))
    return columns, links


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


_ordinal = attrgetter("ordinal")


def infer_relationships(snapshot: CatalogSnapshot, *, accept: float = 0.85, review: float = 0.55,
                        include_views: bool = False) -> list[InferredRelationship]:
    """Likely links not declared as foreign keys, best first per child column, in a stable order."""
    inference = _Inference(snapshot, include_views)
    kept: list[_Candidate] = []
    for child in inference.infos:
        declared_columns, declared_links = _declared(child.table)
        for column in sorted(child.table.columns, key=_ordinal):
            if column.name in declared_columns:
                continue
            found = inference.candidates_for(child, column)
            if not found:  # most columns of a warehouse reference nothing
                continue
            for candidate in found:
                inference.finish(candidate)
            kept.extend(_select(found))
        for candidate in inference.composite_candidates(child, declared_columns):
            link = (tuple(c.name for c in candidate.columns), candidate.parent.table.db,
                    candidate.parent.table.name, tuple(t.name for t in candidate.targets))
            if link not in declared_links:
                inference.finish(candidate)
                kept.append(candidate)
    out: list[InferredRelationship] = []
    for candidate in kept:
        confidence = round(_sigmoid(candidate.logit), 3)
        if confidence < review:
            continue
        out.append(InferredRelationship(
            from_db=candidate.child.table.db, from_table=candidate.child.table.name,
            from_columns=tuple(c.name for c in candidate.columns),
            to_db=candidate.parent.table.db, to_table=candidate.parent.table.name,
            to_columns=tuple(t.name for t in candidate.targets),
            confidence=confidence, tier="accepted" if confidence >= accept else "review",
            evidence=tuple(candidate.evidence)))
    out.sort(key=lambda r: (r.from_db, r.from_table, r.from_columns, -r.confidence, r.to_db, r.to_table,
                            r.to_columns))
    return out

