"""The pooled dev warehouse of ``bench/retrieval.py``: every sample schema of ../shared/data in one DuckDB file.

    .venv/bin/python bench/devwarehouse.py            # builds the three files, prints their paths

One schema per database (chinook, northwind, sakila, pagila, adventureworks, tpch, tpcds, the seven defog
databases, the MetricFlow tutorial seeds as ``mf_tutorial``, the jaffle_shop seeds as ``jaffle_shop``),
primary and foreign keys declared, no rows. Three variants: ``pooled-dev.duckdb`` has no comments,
``pooled-dev-comments.duckdb`` has every comment the sources carry (AdventureWorks' ``COMMENT ON``, defog's
column descriptions, the dbt docs of the seeds' columns), and ``pooled-dev-abbrev.duckdb`` has no comments and
its identifiers abbreviated the ways real warehouses abbreviate them (``bench/abbreviated.py``: column names and
some table names, one seeded style each; keys, types and table membership unchanged).

How each source becomes a catalog (nothing is copied into the repository; everything is read in place):

* Chinook comes from its SQLite file (PascalCase names).
* PostgreSQL dumps (northwind, sakila, pagila, AdventureWorks, defog) are loaded into a throwaway
  cluster (``tests/pgcluster.py``) and read back from ``pg_catalog``: columns, keys, comments. Partitions and
  inheritance children stay separate tables here: DuckDB has neither, so they are what a warehouse copy of
  such a schema looks like. AdventureWorks' five schemas are folded into one (its table names are unique).
* TPC-H and TPC-DS come from DuckDB's own generators at scale 0 (``dbgen``/``dsdgen``), which need the 1.5.5
  extension wheels: a small side virtualenv under ``.bench-cache/`` holds them (created on first use). Their
  keys are the specification's, declared below (the generators declare none).
* The seeds (CSV) are typed by DuckDB's CSV sniffer; their keys come from the dbt/MetricFlow models.

The catalog is cached as JSON under ``.bench-cache/`` (``--rebuild`` refreshes it).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import abbreviated  # bench/ is on the path: this file's folder when run, put there by bench/retrieval.py
import duckdb
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (CI), or two levels up from a worktree under wt/
SHARED = next((base / "shared" / "data" for base in (ROOT.parent, ROOT.parent.parent)
               if (base / "shared" / "data").is_dir()), ROOT.parent / "shared" / "data")
CACHE = ROOT / ".bench-cache"
SAMPLES = SHARED / "sampledbs"
DEFOG = SHARED / "retrieval-dev" / "defog" / "defog_data"
DEFOG_DBS = ("academic", "advising", "atis", "geography", "restaurants", "scholar", "yelp")
AW_SCHEMAS = ("humanresources", "person", "production", "purchasing", "sales")
CATALOG_VERSION = "2"

Catalog = dict[str, dict[str, dict[str, Any]]]  # schema -> table -> {columns, pk, fks, comment}


# ---- PostgreSQL dumps --------------------------------------------------------------------------------------

def _pg_sources() -> dict[str, tuple[Path, ...]]:
    return {"northwind": (SAMPLES / "northwind" / "northwind.sql",),
            "sakila": (SAMPLES / "sakila" / "postgres-sakila-schema.sql",),
            "pagila": (SAMPLES / "pagila" / "pagila-schema.sql",),
            "adventureworks": (SAMPLES / "adventureworks-pg" / "install.sql",),
            **{db: (DEFOG / db / f"{db}.sql",) for db in DEFOG_DBS}}


_PSQL_META = re.compile(r"^\\(?!\.)")  # psql meta-commands (\c, \copy, \pset); keeps COPY's closing \.


def _script(path: Path) -> str:
    """The dump without what would leave the target database (CREATE/DROP DATABASE, \\c) or read files."""
    lines = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if _PSQL_META.match(line) or re.match(r"\s*(CREATE|DROP) DATABASE", line, re.I):
            continue
        lines.append(line)
    text = "\n".join(lines) + "\n"
    # pagila is written for PostgreSQL 18 with pgvector; the cluster here may be older and bare
    text = text.replace("uuidv7()", "gen_random_uuid()").replace(" VIRTUAL", " STORED")
    text = re.sub(r"CREATE EXTENSION[^;]*vector[^;]*;", "", text)
    return re.sub(r"public\.vector\(\d+\)", "real[]", text)


def _defog_comments(db: str) -> dict[tuple[str, str], str]:
    data = json.loads((DEFOG / db / f"{db}.json").read_text())["table_metadata"]
    return {(table, column["column_name"]): column["column_description"]
            for table, columns in data.items() for column in columns if column.get("column_description")}


_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname, obj_description(c.oid, 'pg_class')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY(%s) ORDER BY 2, 3
"""
_COLUMNS_SQL = """
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), col_description(a.attrelid, a.attnum),
       t.typtype
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attrelid, a.attnum
"""
_KEYS_SQL = """
SELECT con.conrelid, con.contype, con.confrelid,
       ARRAY(SELECT attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute ON attrelid = con.conrelid AND attnum = k.n ORDER BY k.i),
       ARRAY(SELECT attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute ON attrelid = con.confrelid AND attnum = k.n ORDER BY k.i)
FROM pg_constraint con WHERE con.conrelid = ANY(%s) AND con.contype IN ('p', 'f', 'u') AND con.conparentid = 0
ORDER BY con.conrelid, con.contype, con.conname
"""


def _read_pg(dsn: str, schemas: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        tables = conn.execute(_TABLES_SQL, (list(schemas),)).fetchall()
        names = {oid: name for oid, _schema, name, _comment in tables}
        out: dict[str, dict[str, Any]] = {name: {"columns": [], "pk": [], "unique": [], "fks": [],
                                                  "comment": comment}
                                          for _oid, _schema, name, comment in tables}
        oids = list(names)
        for oid, column, native, comment, typtype in conn.execute(_COLUMNS_SQL, (oids,)):
            out[names[oid]]["columns"].append({"name": column, "type": _duck_type(native, typtype),
                                               "comment": comment})
        for oid, kind, ref_oid, columns, ref_columns in conn.execute(_KEYS_SQL, (oids,)):
            entry = out[names[oid]]
            if kind == "p":
                entry["pk"] = list(columns)
            elif kind == "u":
                entry["unique"].append(list(columns))
            elif ref_oid in names:
                entry["fks"].append({"columns": list(columns), "table": names[ref_oid],
                                     "refColumns": list(ref_columns)})
    return out


def _duck_type(native: str, typtype: str) -> str:
    t = native.lower()
    if t.endswith("[]") or typtype in ("e", "d", "c") or t in ("tsvector", "xml", "json", "jsonb", "money"):
        return "VARCHAR"
    for prefix, duck in (("smallint", "SMALLINT"), ("integer", "INTEGER"), ("bigint", "BIGINT"),
                         ("numeric", "DECIMAL(18,4)"), ("real", "REAL"), ("double", "DOUBLE"),
                         ("boolean", "BOOLEAN"), ("date", "DATE"), ("timestamp", "TIMESTAMP"),
                         ("time", "TIME"), ("bytea", "BLOB"), ("uuid", "UUID"), ("interval", "INTERVAL")):
        if t.startswith(prefix):
            return duck
    return "VARCHAR"


def pg_catalog() -> Catalog:
    """Every PostgreSQL dump loaded into a throwaway cluster and read back, one schema per database."""
    sys.path.insert(0, str(ROOT / "tests"))
    import pgcluster  # type: ignore[import-not-found]  # tests/ is put on the path just above
    from psycopg.conninfo import make_conninfo

    catalog: Catalog = {}
    psql = str(pgcluster.find_bindir() / "psql")
    with ExitStack() as stack:
        cluster = stack.enter_context(pgcluster.running_cluster())
        admin = cluster.dsn()
        for db, paths in _pg_sources().items():
            name = pgcluster.create_database(admin, prefix=f"dev_{db}")
            stack.callback(pgcluster.drop_database, admin, name)
            dsn = make_conninfo(admin, dbname=name)
            for path in paths:
                with tempfile.NamedTemporaryFile("w", suffix=".sql") as handle:
                    handle.write(_script(path))
                    handle.flush()
                    subprocess.run([psql, dsn, "-q", "-f", handle.name], check=True, capture_output=True)
            schemas = AW_SCHEMAS if db == "adventureworks" else ("public",)
            tables = _read_pg(dsn, schemas)
            if db in DEFOG_DBS:
                notes = _defog_comments(db)
                for table, entry in tables.items():
                    for column in entry["columns"]:
                        column["comment"] = column["comment"] or notes.get((table, column["name"]))
            catalog[db] = tables
    return catalog


# ---- TPC-H and TPC-DS ----------------------------------------------------------------------------------------

_TPC_SCRIPT = """
import duckdb, glob, json, sys
c = duckdb.connect()
for path in glob.glob(sys.argv[1] + '/duckdb_extension_*/extensions/*/*.duckdb_extension'):
    c.execute(f"LOAD '{path}'")
c.execute("CREATE SCHEMA tpch; CREATE SCHEMA tpcds")
c.execute("CALL dbgen(sf=0, schema='tpch')")
c.execute("CALL dsdgen(sf=0, schema='tpcds')")
rows = c.execute("SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
                 "WHERE schema_name IN ('tpch', 'tpcds') ORDER BY schema_name, table_name, column_index").fetchall()
print(json.dumps(rows))
"""

TPCH_KEYS: dict[str, tuple[list[str], list[tuple[list[str], str, list[str]]]]] = {
    "region": (["r_regionkey"], []),
    "nation": (["n_nationkey"], [(["n_regionkey"], "region", ["r_regionkey"])]),
    "supplier": (["s_suppkey"], [(["s_nationkey"], "nation", ["n_nationkey"])]),
    "customer": (["c_custkey"], [(["c_nationkey"], "nation", ["n_nationkey"])]),
    "part": (["p_partkey"], []),
    "partsupp": (["ps_partkey", "ps_suppkey"], [(["ps_partkey"], "part", ["p_partkey"]),
                                                (["ps_suppkey"], "supplier", ["s_suppkey"])]),
    "orders": (["o_orderkey"], [(["o_custkey"], "customer", ["c_custkey"])]),
    "lineitem": (["l_orderkey", "l_linenumber"], [(["l_orderkey"], "orders", ["o_orderkey"]),
                                                  (["l_partkey", "l_suppkey"], "partsupp",
                                                   ["ps_partkey", "ps_suppkey"])]),
}
# TPC-DS surrogate keys: a ``<prefix>_<role>_sk`` column points at the dimension of its role.
TPCDS_ROLES = {
    "date": "date_dim", "time": "time_dim", "item": "item", "customer": "customer", "cdemo": "customer_demographics",
    "hdemo": "household_demographics", "addr": "customer_address", "store": "store", "promo": "promotion",
    "warehouse": "warehouse", "ship_mode": "ship_mode", "reason": "reason", "income_band": "income_band",
    "call_center": "call_center", "catalog_page": "catalog_page", "web_page": "web_page", "web_site": "web_site",
    "site": "web_site", "page": "web_page",
}
TPCDS_FACT_KEYS = {
    "store_sales": ["ss_item_sk", "ss_ticket_number"], "store_returns": ["sr_item_sk", "sr_ticket_number"],
    "catalog_sales": ["cs_item_sk", "cs_order_number"], "catalog_returns": ["cr_item_sk", "cr_order_number"],
    "web_sales": ["ws_item_sk", "ws_order_number"], "web_returns": ["wr_item_sk", "wr_order_number"],
    "inventory": ["inv_date_sk", "inv_item_sk", "inv_warehouse_sk"],
}


def _tpcds_role(column: str) -> str | None:
    body = column.split("_", 1)[1].removesuffix("_sk") if column.endswith("_sk") else ""
    for role in sorted(TPCDS_ROLES, key=len, reverse=True):
        if body == role or body.endswith("_" + role):
            return role
    return None


def tpc_catalog() -> Catalog:
    venv = CACHE / "tpcvenv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "duckdb==1.5.5", "duckdb-extension-tpch==1.5.5",
                        "duckdb-extension-tpcds==1.5.5"], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    out = subprocess.run([str(python), "-c", _TPC_SCRIPT, str(site)], check=True, capture_output=True, text=True)
    catalog: Catalog = {"tpch": {}, "tpcds": {}}
    for schema, table, column, data_type in json.loads(out.stdout):
        entry = catalog[schema].setdefault(table, {"columns": [], "pk": [], "unique": [], "fks": [], "comment": None})
        entry["columns"].append({"name": column, "type": data_type, "comment": None})
    for table, (pk, fks) in TPCH_KEYS.items():
        catalog["tpch"][table]["pk"] = pk
        catalog["tpch"][table]["fks"] = [{"columns": c, "table": t, "refColumns": r} for c, t, r in fks]
    dims = {}
    for table, entry in catalog["tpcds"].items():
        first = entry["columns"][0]["name"]
        if table not in TPCDS_FACT_KEYS and first.endswith("_sk"):
            entry["pk"] = [first]
            dims[table] = first
        else:
            entry["pk"] = TPCDS_FACT_KEYS.get(table, [])
    for table, entry in catalog["tpcds"].items():
        for column in entry["columns"]:
            name = column["name"]
            role = _tpcds_role(name)
            target = TPCDS_ROLES.get(role or "")
            if target and target in dims and name != dims.get(table):
                entry["fks"].append({"columns": [name], "table": target, "refColumns": [dims[target]]})
    return catalog


# ---- SQLite ----------------------------------------------------------------------------------------------------

def chinook_catalog() -> Catalog:
    """Chinook from its SQLite file: PascalCase names (``InvoiceLine.UnitPrice``), the form many warehouses use."""
    import sqlite3

    db = sqlite3.connect(f"file:{SAMPLES / 'chinook' / 'Chinook_Sqlite.sqlite'}?mode=ro", uri=True)
    tables: dict[str, dict[str, Any]] = {}
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for name in names:
        info = db.execute(f"PRAGMA table_info('{name}')").fetchall()
        pk = [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        fks: dict[int, dict[str, Any]] = {}
        for row in db.execute(f"PRAGMA foreign_key_list('{name}')"):
            fk = fks.setdefault(row[0], {"columns": [], "table": row[2], "refColumns": []})
            fk["columns"].append(row[3])
            fk["refColumns"].append(row[4])
        tables[name] = {"columns": [{"name": r[1], "type": _duck_type(r[2].lower().replace("nvarchar", "varchar")
                                                                      .replace("datetime", "timestamp"), "b"),
                                     "comment": None} for r in info],
                        "pk": pk, "unique": [], "fks": list(fks.values()), "comment": None}
    db.close()
    return {"chinook": tables}


# ---- seeds ---------------------------------------------------------------------------------------------------

def _csv_columns(path: Path) -> list[dict[str, Any]]:
    rows = duckdb.connect().execute(f"DESCRIBE SELECT * FROM read_csv('{path}')").fetchall()
    return [{"name": row[0], "type": row[1], "comment": None} for row in rows]


def seed_catalog() -> Catalog:
    semantic = SHARED / "semantic"
    jaffle, tutorial = semantic / "jaffle_shop_classic", semantic / "dbt_metricflow_tutorial_sample"
    docs: dict[str, str] = {}
    for model in YAML(typ="safe").load((jaffle / "models" / "schema.yml").read_text())["models"]:
        for column in model.get("columns") or []:
            text = str(column.get("description") or "")
            if text and "{{" not in text:
                docs.setdefault(column["name"], text)
    catalog: Catalog = {"jaffle_shop": {}, "mf_tutorial": {}}
    for table in ("raw_customers", "raw_orders", "raw_payments"):
        columns = _csv_columns(jaffle / "seeds" / f"{table}.csv")
        for column in columns:
            column["comment"] = docs.get(column["name"])
        catalog["jaffle_shop"][table] = {"columns": columns, "pk": ["id"], "unique": [], "fks": [], "comment": None}
    catalog["jaffle_shop"]["raw_orders"]["fks"] = [{"columns": ["user_id"], "table": "raw_customers",
                                                    "refColumns": ["id"]}]
    catalog["jaffle_shop"]["raw_payments"]["fks"] = [{"columns": ["order_id"], "table": "raw_orders",
                                                      "refColumns": ["id"]}]
    models = {}
    for path in sorted((tutorial / "sample_models").glob("*.yml")):
        for model in YAML(typ="safe").load(path.read_text()).get("semantic_models") or []:
            models[model["name"]] = model
    keys = {"countries_seed": ["country"], "customers_seed": ["id_customer"], "transactions_seed": ["id_transaction"]}
    for table, pk in keys.items():
        model = models.get(table.removesuffix("_seed"), {})
        notes = {str(m.get("expr") or m["name"]): m.get("description") for m in model.get("measures") or []
                 if m.get("description")}
        notes |= {str(d.get("expr") or d["name"]): d.get("description") for d in model.get("dimensions") or []
                  if d.get("description")}
        columns = _csv_columns(tutorial / "seeds" / f"{table}.csv")
        for column in columns:
            column["comment"] = notes.get(column["name"])
        description = " ".join(str(model.get("description") or "").split()) or None
        catalog["mf_tutorial"][table] = {"columns": columns, "pk": pk, "unique": [], "fks": [],
                                         "comment": description}
    catalog["mf_tutorial"]["customers_seed"]["fks"] = [{"columns": ["country"], "table": "countries_seed",
                                                        "refColumns": ["country"]}]
    catalog["mf_tutorial"]["transactions_seed"]["fks"] = [{"columns": ["id_customer"], "table": "customers_seed",
                                                           "refColumns": ["id_customer"]}]
    return catalog


# ---- DuckDB -------------------------------------------------------------------------------------------------

def catalog(rebuild: bool = False) -> Catalog:
    path = CACHE / f"pooled-dev-catalog-v{CATALOG_VERSION}.json"
    if path.exists() and not rebuild:
        cached: Catalog = json.loads(path.read_text())
        return cached
    built = {**pg_catalog(), **chinook_catalog(), **tpc_catalog(), **seed_catalog()}
    CACHE.mkdir(exist_ok=True)
    path.write_text(json.dumps(built, indent=1, sort_keys=True))
    return built


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _creation_order(tables: dict[str, dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Tables with the foreign keys that can be declared: referenced tables first; an FK that would close a
    cycle (DuckDB cannot add one later) is left out."""
    done: set[str] = set()
    pending = dict(sorted(tables.items()))
    while pending:
        ready = [name for name, entry in pending.items()
                 if all(fk["table"] in done or fk["table"] == name for fk in entry["fks"])]
        if not ready:  # a cycle: take the first table and keep only the FKs into tables already made
            ready = [next(iter(pending))]
        for name in ready:
            entry = pending.pop(name)
            yield name, [fk for fk in entry["fks"] if fk["table"] in done or fk["table"] == name]
            done.add(name)


def build(target: Path, cat: Catalog, *, comments: bool) -> dict[str, int]:
    """Write the warehouse (replacing ``target``); returns counts of schemas, tables, keys and comments."""
    target.unlink(missing_ok=True)
    db = duckdb.connect(str(target))
    counts = {"schemas": 0, "tables": 0, "columns": 0, "primary_keys": 0, "foreign_keys": 0, "foreign_keys_skipped": 0,
              "comments": 0}
    for schema, tables in sorted(cat.items()):
        db.execute(f"CREATE SCHEMA {_q(schema)}")
        counts["schemas"] += 1
        referenced: dict[str, set[tuple[str, ...]]] = {}
        for entry in tables.values():
            for fk in entry["fks"]:
                referenced.setdefault(fk["table"], set()).add(tuple(fk["refColumns"]))
        for name, fks in _creation_order(tables):
            entry = tables[name]
            for fk in fks:  # DuckDB wants a key's types on both sides equal
                ref_types = {c["name"]: c["type"] for c in tables[fk["table"]]["columns"]}
                for column, ref in zip(fk["columns"], fk["refColumns"], strict=True):
                    for c in entry["columns"]:
                        if c["name"] == column:
                            c["type"] = ref_types[ref]
            parts = [f"{_q(c['name'])} {c['type']}" for c in entry["columns"]]
            if entry["pk"]:
                parts.append(f"PRIMARY KEY ({', '.join(map(_q, entry['pk']))})")
                counts["primary_keys"] += 1
            for unique in sorted(referenced.get(name, set())):
                if list(unique) != entry["pk"]:
                    parts.append(f"UNIQUE ({', '.join(map(_q, unique))})")
            for fk in fks:
                parts.append(f"FOREIGN KEY ({', '.join(map(_q, fk['columns']))}) REFERENCES "
                             f"{_q(schema)}.{_q(fk['table'])} ({', '.join(map(_q, fk['refColumns']))})")
            counts["foreign_keys"] += len(fks)
            counts["foreign_keys_skipped"] += len(entry["fks"]) - len(fks)
            db.execute(f"CREATE TABLE {_q(schema)}.{_q(name)} ({', '.join(parts)})")
            counts["tables"] += 1
            counts["columns"] += len(entry["columns"])
            if not comments:
                continue
            if entry.get("comment"):
                db.execute(f"COMMENT ON TABLE {_q(schema)}.{_q(name)} IS {_lit(entry['comment'])}")
                counts["comments"] += 1
            for column in entry["columns"]:
                if column.get("comment"):
                    db.execute(f"COMMENT ON COLUMN {_q(schema)}.{_q(name)}.{_q(column['name'])} IS "
                               f"{_lit(column['comment'])}")
                    counts["comments"] += 1
    db.close()
    return counts


VARIANTS = {"plain": "pooled-dev.duckdb", "comments": "pooled-dev-comments.duckdb",
            "abbrev": "pooled-dev-abbrev.duckdb"}


def abbrev_tables(rebuild: bool = False) -> dict[str, str]:
    """``schema.table`` of the plain variant -> its name in the abbreviated one (lower case, as gold is)."""
    return abbreviated.table_map(abbreviated.abbreviate(catalog(rebuild))[1])


def warehouses(rebuild: bool = False) -> dict[str, tuple[Path, dict[str, int]]]:
    """The three variants, built from the (cached) catalog: variant -> (path, counts)."""
    cat = catalog(rebuild)
    sources = {"plain": cat, "comments": cat, "abbrev": abbreviated.abbreviate(cat)[0]}
    out = {}
    for variant, name in VARIANTS.items():
        path = CACHE / name
        out[variant] = (path, build(path, sources[variant], comments=variant == "comments"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rebuild", action="store_true", help="re-read the sources instead of the cached catalog")
    args = parser.parse_args()
    print(json.dumps({variant: {"path": str(path), **counts}
                      for variant, (path, counts) in warehouses(args.rebuild).items()}))


if __name__ == "__main__":
    main()
