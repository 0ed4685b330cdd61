"""Many small databases with overlapping names, written for khive: ``bench/smalldbs.yaml`` as one DuckDB file.

    .venv/bin/python bench/smalldbs.py        # builds .bench-cache/smalldbs.duckdb, prints its counts (one line)
    .venv/bin/python bench/smalldbs.py --misses rankings.json   # failure modes of a ``retrieval.py --dump`` file

The setting of held-out set A of issue #17 (many small databases pooled, one schema each, keys declared, no
comments, no rows, table names shared across databases), rebuilt from schemas and questions invented for khive:
everyday domains (a dog-walking business, a community orchestra, a bike-share, ...) whose tables deliberately
share names (``member``, ``customer``, ``orders``, ``match``, ``event``) and columns (``id``, ``name``, ``city``).
``bench/retrieval.py`` measures ``discover.search`` on it beside FTS5 BM25 (ADR 0057).

The YAML holds, per schema, its tables and the questions a user of that database would ask. A table is one
line of column specs, ``name[*][:type][>table[.column]]``:

* ``*`` marks a primary-key column (several make a composite key);
* ``:type`` is one letter: ``i`` INTEGER, ``n`` DECIMAL(12,2), ``f`` DOUBLE, ``d`` DATE, ``t`` TIMESTAMP,
  ``b`` BOOLEAN, ``s`` VARCHAR;
* ``>table`` (or ``>table.column``) declares a foreign key to that table of the same schema (its primary key
  when no column is named); the column takes the referenced column's type.

Without a type a referencing column takes its target's, ``id``, ``*_id`` and key columns are INTEGER, ``date``
and ``*_date`` are DATE, anything else VARCHAR. A referenced table is written before the tables referencing it.

Questions are ``{q, sql}`` pairs; the SQL names tables without their schema (it is bound with the schema as the
search path). A question's id is ``<schema>-<position>``, so questions are only ever appended: the held-out
30% is chosen by a hash of the id. Gold tables are the SQL's tables (common table expressions left out).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from ruamel.yaml import YAML
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "bench" / "smalldbs.yaml"
TARGET = ROOT / ".bench-cache" / "smalldbs.duckdb"
TYPES = {"i": "INTEGER", "n": "DECIMAL(12,2)", "f": "DOUBLE", "d": "DATE", "t": "TIMESTAMP", "b": "BOOLEAN",
         "s": "VARCHAR"}
_SPEC = re.compile(r"(?P<name>\w+)(?P<pk>\*)?(?::(?P<type>\w))?(?:>(?P<ref>\w+)(?:\.(?P<ref_column>\w+))?)?\Z")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    key: bool
    ref: tuple[str, str] | None  # (table, column) of a declared foreign key


Schema = dict[str, list[Column]]  # table -> columns, in the order written


def _default_type(name: str, key: bool) -> str:
    if key or name == "id" or name.endswith("_id"):
        return "INTEGER"
    return "DATE" if name == "date" or name.endswith("_date") else "VARCHAR"


def parse_table(spec: str, earlier: Schema) -> list[Column]:
    """One table's line of column specs; ``earlier`` holds the tables written before it (foreign-key targets)."""
    columns = []
    for part in (p.strip() for p in spec.split(",")):
        match = _SPEC.match(part)
        if not match:
            raise ValueError(f"bad column spec {part!r}")
        name, ref_table = match["name"], match["ref"]
        ref = None
        if ref_table:
            targets = earlier[ref_table]
            ref_column = match["ref_column"] or next(c.name for c in targets if c.key)
            ref = (ref_table, ref_column)
        if match["type"]:
            kind = TYPES[match["type"]]
        elif ref:
            kind = next(c.type for c in earlier[ref[0]] if c.name == ref[1])
        else:
            kind = _default_type(name, bool(match["pk"]))
        columns.append(Column(name, kind, bool(match["pk"]), ref))
    return columns


def load() -> dict[str, dict[str, Any]]:
    """schema -> {"tables": Schema, "questions": [{q, sql}]} from the YAML."""
    data = YAML(typ="safe").load(SOURCE.read_text())["schemas"]
    out: dict[str, dict[str, Any]] = {}
    for schema, body in data.items():
        tables: Schema = {}
        for table, spec in body["tables"].items():
            tables[table] = parse_table(spec, tables)
        out[schema] = {"tables": tables, "questions": body.get("questions") or []}
    return out


def _q(name: str) -> str:
    return '"' + name + '"'


def ddl(schema: str, tables: Schema) -> list[str]:
    statements = [f"CREATE SCHEMA {_q(schema)}"]
    referenced = {(c.ref[0], c.ref[1]) for cols in tables.values() for c in cols if c.ref}
    for table, columns in tables.items():
        parts = [f"{_q(c.name)} {c.type}" for c in columns]
        keys = [c.name for c in columns if c.key]
        if keys:
            parts.append(f"PRIMARY KEY ({', '.join(map(_q, keys))})")
        for ref_table, ref_column in sorted(referenced):  # a referenced non-key column must be unique
            if ref_table == table and [ref_column] != keys:
                parts.append(f"UNIQUE ({_q(ref_column)})")
        for c in columns:
            if c.ref:
                parts.append(f"FOREIGN KEY ({_q(c.name)}) REFERENCES {_q(schema)}.{_q(c.ref[0])} ({_q(c.ref[1])})")
        statements.append(f"CREATE TABLE {_q(schema)}.{_q(table)} ({', '.join(parts)})")
    return statements


def build(target: Path = TARGET) -> dict[str, int]:
    """Write the warehouse (replacing ``target``); returns counts of schemas, tables, columns and keys."""
    schemas = load()
    target.parent.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    db = duckdb.connect(str(target))
    try:
        for schema, body in schemas.items():
            for statement in ddl(schema, body["tables"]):
                db.execute(statement)
    finally:
        db.close()
    tables = [cols for body in schemas.values() for cols in body["tables"].values()]
    return {"schemas": len(schemas), "tables": len(tables), "columns": sum(map(len, tables)),
            "foreign_keys": sum(c.ref is not None for cols in tables for c in cols),
            "questions": sum(len(body["questions"]) for body in schemas.values())}


def gold_tables(sql: str) -> set[str]:
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name.lower() not in ctes}


def questions(warehouse: Path = TARGET) -> list[dict[str, Any]]:
    """Every question with its id, schema and gold tables; every gold SQL must bind on ``warehouse`` (EXPLAIN)."""
    out = []
    db = duckdb.connect(str(warehouse), read_only=True)
    try:
        for schema, body in load().items():
            db.execute(f"SET schema = '{schema}'")
            for position, item in enumerate(body["questions"], start=1):
                db.execute("EXPLAIN " + item["sql"])  # raises when a table or column does not exist here
                gold = frozenset(f"{schema}.{name}" for name in gold_tables(item["sql"]))
                out.append({"id": f"{schema}-{position:02d}", "schema": schema, "question": item["q"],
                            "sql": item["sql"], "gold": [gold]})
    finally:
        db.close()
    return out


# ---- reading the misses -------------------------------------------------------------------------------------

def _norm(word: str) -> str:
    """A plain singular, kept apart from khive's own morphology so the split does not move with it."""
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _words(text: str) -> set[str]:
    """Words of a question or identifier: separators and camel humps split, plain singulars."""
    parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", text)
    return {_norm(p) for p in parts}


def reaches(question: str, name: str, table: list[Column]) -> bool:
    """Whether a word of the question is a word of the table's name or of a column's name (plain singulars): a
    question that reaches every gold table this way is *literal*; the others need a synonym, a value or a guess."""
    return bool(_words(question) & set().union(*(_words(ident) for ident in (name, *(c.name for c in table)))))


def _is_bridge(table: list[Column]) -> bool:
    return sum(c.ref is not None for c in table) >= 2 and sum(c.key for c in table) >= 2


def failure_mode(question: str, ranked: list[str], gold: frozenset[str], schemas: dict[str, dict[str, Any]],
                 k: int) -> str | None:
    """Why the gold tables are not all among the first ``k``; None when they are."""
    top = ranked[:k]
    if gold <= set(top):
        return None
    schema = next(iter(gold)).split(".")[0]
    if not ranked:
        return "no_match"
    first_schema, first_table = ranked[0].split(".", 1)
    missing = sorted(gold - set(top))
    if first_schema != schema:  # another schema came first: did it share a table name, was it named?
        home = {t.lower() for t in schemas[schema]["tables"]}
        how = ("same_table_name" if first_table in home
               else "question_names_its_table" if _words(first_table) <= _words(question) else "column_words")
        return ("interleaved_" if any(t.startswith(schema + ".") for t in top) else "routed_elsewhere_") + how
    tables = {t.lower(): cols for t, cols in schemas[schema]["tables"].items()}
    if any(_is_bridge(tables[t.split(".", 1)[1]]) for t in missing):
        return "bridge_missing"
    others = [t for t in top if not t.startswith(schema + ".")]
    return "fill_lost_to_other_schema" if others else "order_inside_schema"


def failure_modes(dump: Path) -> dict[str, Any]:
    """Counts of failure modes at 3 and at 10 (tuning and held-out parts apart), literal questions apart."""
    schemas = {s.lower(): body for s, body in load().items()}
    rows = json.loads(dump.read_text())["smalldbs"]
    out: dict[str, Any] = {}
    for part in ("tuning", "heldout"):
        chosen = [r for r in rows if r["part"] == part]
        if not chosen:  # a --tuning-only dump has no held-out rows
            continue
        literal = []
        for row in chosen:
            gold = frozenset(row["gold"][0])
            schema = next(iter(gold)).split(".")[0]
            tables = {t.lower(): (t, cols) for t, cols in schemas[schema]["tables"].items()}
            literal.append(all(reaches(row["q"], *tables[g.split(".", 1)[1]]) for g in gold))
        figures: dict[str, Any] = {"n": len(chosen), "literal": sum(literal)}
        for k in (3, 10):
            modes = [failure_mode(r["q"], r["ours"], frozenset(r["gold"][0]), schemas, k) for r in chosen]
            figures[f"all_gold@{k}"] = {
                "all": round(sum(m is None for m in modes) / len(chosen), 3),
                "literal": round(sum(m is None for m, lit in zip(modes, literal, strict=True) if lit)
                                 / max(1, sum(literal)), 3),
                "other": round(sum(m is None for m, lit in zip(modes, literal, strict=True) if not lit)
                               / max(1, len(chosen) - sum(literal)), 3)}
            figures[f"misses@{k}"] = dict(Counter(m for m in modes if m).most_common())
            figures[f"misses@{k}_literal"] = dict(Counter(m for m, lit in zip(modes, literal, strict=True)
                                                          if m and lit).most_common())
        out[part] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", type=Path, help="a bench/retrieval.py --dump file: print its failure modes")
    args = parser.parse_args()
    if args.misses:
        print(json.dumps(failure_modes(args.misses)))
        return
    print(json.dumps({"path": str(TARGET), **build()}))


if __name__ == "__main__":
    main()
