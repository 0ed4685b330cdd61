"""The abbreviated variant of the pooled dev warehouse: identifiers rewritten the way real warehouses shorten them.

Written from general knowledge of naming habits in hand-made schemas (not from khive's own morphology, so the
benchmark is not shaped by what khive already handles). Every identifier is split into its words (``_``,
camelCase humps, digits) and rewritten in ONE style picked by a seeded hash of its place
(``schema.column``, ``schema.table``), so the result is deterministic and mixed, as real schemas are:

* ``keep``: left as it is;
* ``short``: common short forms, snake case (``customer_id`` -> ``cust_id``, ``quantity`` -> ``qty``);
* ``vowels``: CamelCase with the vowels dropped inside longer words (``NumTstTakr``, ``AvgScrRead``);
* ``trunc``: every long word cut to its first 3 or 4 letters (``category_name`` -> ``cat_name``);
* ``concat``: lower case without separators (``orderdate``, ``highschooler``);
* ``concat_short``: the same with short forms (``custno``, ``orddt``);
* ``camel``: CamelCase of the full words (``OrderDate``);
* ``snake``: snake case of the full words (``InvoiceDate`` -> ``invoice_date``).

Some table names (a hashed share) are rewritten too, with the styles that make sense for a table. Keys,
types and table membership are unchanged; a rewrite that would collide with a name already in the table (or
schema) falls back to the original name. A column name is spelled one way throughout its schema, and a
partition keeps its parent's (new) name with its own suffix.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

SEED = "khive-abbrev-1"
COLUMN_STYLES = (("keep", 14), ("short", 20), ("vowels", 15), ("trunc", 10), ("concat", 12), ("concat_short", 8),
                 ("camel", 13), ("snake", 8))
TABLE_STYLES = (("short", 25), ("vowels", 15), ("trunc", 10), ("concat", 25), ("camel", 25))
TABLE_SHARE = 45  # percent of tables renamed
LONG = 10  # longer words are concatenations already (``billofmaterialsid``): people shorten words, not those

# Short forms seen across hand-made schemas (ERP, finance, government open data, school systems).
SHORT = {
    "account": "acct", "address": "addr", "amount": "amt", "average": "avg", "balance": "bal", "category": "cat",
    "code": "cd", "comment": "cmt", "company": "co", "count": "cnt", "country": "cntry", "current": "cur",
    "customer": "cust", "date": "dt", "department": "dept", "description": "desc", "destination": "dest",
    "discount": "disc", "document": "doc", "employee": "emp", "first": "fst", "flag": "flg", "group": "grp",
    "height": "ht", "hour": "hr", "identifier": "ident", "indicator": "ind", "information": "info",
    "inventory": "inv", "invoice": "inv", "language": "lang", "length": "len", "level": "lvl", "location": "loc",
    "manager": "mgr", "market": "mkt", "maximum": "max", "message": "msg", "minimum": "min", "minute": "min",
    "modified": "mod", "month": "mon", "name": "nm", "number": "num", "order": "ord", "organization": "org",
    "payment": "pmt", "percent": "pct", "percentage": "pct", "phone": "ph", "position": "pos", "previous": "prev",
    "price": "prc", "product": "prod", "quantity": "qty", "reference": "ref", "region": "rgn", "revenue": "rev",
    "salary": "sal", "second": "sec", "segment": "seg", "sequence": "seq", "shipment": "shpmt",
    "shipping": "shp", "source": "src", "standard": "std", "status": "sts", "street": "st", "student": "stu",
    "supplier": "supp", "telephone": "tel", "temperature": "temp", "total": "tot", "transaction": "txn",
    "type": "typ", "update": "upd", "value": "val", "warehouse": "whse", "weight": "wt", "year": "yr",
    "last": "lst", "score": "scr", "test": "tst", "school": "sch", "teacher": "tchr",
}
_VOWELS = set("aeiou")
_COPY = re.compile(r"_?(p?\d[\w]*)\Z")  # a partition's suffix: ``_p2007_01``, ``_2022_12``, ``p202212``
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def words(identifier: str) -> list[str]:
    """``AvgScrRead`` -> avg, scr, read; ``cc_rec_start_date`` -> cc, rec, start, date; ``addressline1`` stays one."""
    return [w.lower() for part in re.split(r"[_\W]+", identifier) if part for w in _HUMP.findall(part)]


def _hash(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join((SEED, *parts)).encode()).hexdigest()[:12], 16)


def _pick(styles: tuple[tuple[str, int], ...], key: int) -> str:
    point = key % sum(weight for _, weight in styles)
    for style, weight in styles:
        if point < weight:
            return style
        point -= weight
    raise AssertionError("unreachable")


def drop_vowels(word: str, keep_first_vowel: bool) -> str:
    """``test`` -> ``tst``, ``score`` -> ``scr``, ``taker`` -> ``takr`` (first vowel kept); short and very long
    words stay."""
    if len(word) <= 3 or len(word) > LONG or word.isdigit():
        return word
    keep_first_vowel = keep_first_vowel and len(word) >= 5
    out, kept = [word[0]], False
    for ch in word[1:]:
        if ch in _VOWELS:
            if keep_first_vowel and not kept and len(out) == 1:
                out.append(ch)
                kept = True
            continue
        if ch != out[-1]:  # doubled consonants collapse: "address" -> "adrs"
            out.append(ch)
    return "".join(out)


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]


def rewrite(identifier: str, style: str, key: int) -> str:
    ws = words(identifier)
    if style == "keep" or not ws:
        return identifier
    if style == "short":
        return "_".join(SHORT.get(w, w) for w in ws)
    if style == "vowels":
        return "".join(_cap(SHORT.get(w) or drop_vowels(w, bool((key >> (4 + i)) & 1))) for i, w in enumerate(ws))
    if style == "trunc":
        size = 3 + (key >> 3) % 2
        return "_".join(w if len(w) <= size + 1 or len(w) > LONG or w.isdigit() else w[:size] for w in ws)
    if style == "concat":
        return "".join(ws)
    if style == "concat_short":
        return "".join(SHORT.get(w, w) for w in ws)
    if style == "camel":
        return "".join(_cap(w) for w in ws)
    if style == "snake":
        return "_".join(ws)
    raise ValueError(f"unknown style {style!r}")


def _unique(name: str, original: str, taken: set[str]) -> str:
    """DuckDB names are case-insensitive: a rewrite that collides keeps the original name."""
    chosen = name if name and name.lower() not in taken else original
    taken.add(chosen.lower())
    return chosen


def _parent(table: str, tables: dict[str, list[str]]) -> str | None:
    """The table a partition or copy was made from (``payment_p2007_01`` of ``payment``, same columns)."""
    match = _COPY.search(table)
    parent = table[: match.start()] if match else None
    return parent if parent in tables and tables[parent] == tables[table] else None


def table_names(schema: str, tables: dict[str, list[str]]) -> dict[str, str]:
    """old -> new table name within one schema (about ``TABLE_SHARE`` percent renamed); a partition keeps its
    suffix after its parent's new name, as partitions are named after their parent."""
    out: dict[str, str] = {}
    taken = {t.lower() for t in tables}
    parents = {t: p for t in tables if (p := _parent(t, tables))}
    for table in sorted(tables, key=lambda t: (t in parents, t)):
        key = _hash(schema, table)
        new = table
        if table in parents:
            new = out[parents[table]] + table[len(parents[table]):]
        elif key % 100 < TABLE_SHARE:
            new = rewrite(table, _pick(TABLE_STYLES, key >> 8), key >> 16)
        if new.lower() != table.lower():
            taken.discard(table.lower())
            new = _unique(new, table, taken)
        out[table] = new
    return out


def column_names(schema: str, columns: list[str]) -> dict[str, str]:
    """old -> new column name within one table. The style is hashed from the schema and the column's name, not
    its table: a schema spells ``customer_id`` one way wherever it occurs (keys share their names, partitions
    their parent's columns), while different columns of a table get different styles."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for column in columns:
        key = _hash(schema, column)
        out[column] = _unique(rewrite(column, _pick(COLUMN_STYLES, key), key >> 8), column, taken)
    return out


Renames = dict[str, dict[str, tuple[str, dict[str, str]]]]  # schema -> old table -> (new table, old -> new column)


def abbreviate(cat: dict[str, dict[str, dict[str, Any]]]) -> tuple[dict[str, dict[str, dict[str, Any]]], Renames]:
    """The catalog with every identifier rewritten (keys follow their columns, comments dropped), and the renames."""
    renames: Renames = {}
    for schema, tables in cat.items():
        columns = {t: [c["name"] for c in e["columns"]] for t, e in tables.items()}
        names = table_names(schema, columns)
        renames[schema] = {t: (names[t], column_names(schema, columns[t])) for t in tables}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for schema, tables in cat.items():
        out[schema] = {}
        for table, entry in tables.items():
            new_table, cols = renames[schema][table]
            moved = copy.deepcopy(entry)
            for column in moved["columns"]:
                column["name"] = cols[column["name"]]
                column["comment"] = None
            moved["comment"] = None
            moved["pk"] = [cols[c] for c in entry["pk"]]
            moved["unique"] = [[cols[c] for c in u] for u in entry["unique"]]
            moved["fks"] = [{"columns": [cols[c] for c in fk["columns"]], "table": renames[schema][fk["table"]][0],
                             "refColumns": [renames[schema][fk["table"]][1][c] for c in fk["refColumns"]]}
                            for fk in entry["fks"]]
            out[schema][new_table] = moved
    return out, renames


def table_map(renames: Renames) -> dict[str, str]:
    """``schema.old`` -> ``schema.new``, lower case (the form gold tables are written in)."""
    return {f"{schema}.{old}".lower(): f"{schema}.{new}".lower()
            for schema, tables in renames.items() for old, (new, _cols) in tables.items()}
