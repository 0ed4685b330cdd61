"""PostgreSQL (psycopg 3, sync): a read-only session, the catalog in a few bulk pg_catalog queries.

The session starts with ``default_transaction_read_only=on`` and the connection's
``statement_timeout``, then learns its role's privileges and pins its search path (``pg_session``);
every unit of work runs in a ``BEGIN READ ONLY`` transaction that is always
rolled back, so even a ``SET`` cannot outlive its statement. ``execute`` sends the vetted statement
through the extended protocol (a pipeline), where PostgreSQL refuses a second statement, after
``SET LOCAL statement_timeout``.

Partitions are folded into their partitioned table (listed once, rows summed over the leaves);
constraints that PostgreSQL clones onto partitions are skipped. Inheritance children of a plain table
(``payment_p2007_01 ... INHERITS (payment)``, the pre-10 way to partition) are folded the same way: the
parent is listed with its own rows plus its children's.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import closing
from typing import Any, cast

import psycopg
from psycopg import capabilities
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row, tuple_row
from psycopg.sql import SQL, Composed

from khive.abandon import abandoned, caller_left, interrupt_on_abandon
from khive.connections.catalog import (
    CatalogSnapshot,
    Column,
    ColumnSample,
    ExcludedObject,
    ForeignKey,
    Table,
    TableKind,
)
from khive.connections.config import ConnectionConfig
from khive.connections.driver import HoldsConnection, QueryResult, connection_url
from khive.connections.pg_session import SessionFacts, inspect_and_pin
from khive.connections.pgvalues import SESSION_OPTIONS, TYPES_SQL, PgType, array_converter, register_loaders
from khive.connections.types import (
    READ_CHUNK,
    ReadRows,
    build_column,
    normalize_type,
    query_result,
    quote,
    read_rows,
    sample_percent,
    sample_sql,
    sample_tables,
    schema_selected,
)
from khive.errors import KhiveError
from khive.values import DEFAULT_SHOWN, Shown

_KINDS: dict[str, TableKind] = {"r": "table", "p": "table", "v": "view", "m": "materialized_view",
                                "f": "foreign_table"}
_SCHEMAS_SQL = """
SELECT current_database() AS database, n.nspname AS schema
FROM pg_catalog.pg_namespace AS n
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_)'
ORDER BY n.nspname
"""
# ``c`` inherits from a plain table and has no column of its own: an old-style partition, folded into its
# parent. A child that adds columns (CREATE TABLE capitals (...) INHERITS (cities)) is a table of its own.
_INHERITED = """SELECT 1 FROM pg_catalog.pg_inherits AS inh
                  JOIN pg_catalog.pg_class AS parent ON parent.oid = inh.inhparent
                  WHERE inh.inhrelid = c.oid AND parent.relkind = 'r'
                    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute AS own
                                    WHERE own.attrelid = c.oid AND own.attnum > 0 AND NOT own.attisdropped
                                      AND own.attinhcount = 0)"""
_RELATIONS_SQL = f"""
SELECT c.oid, n.nspname AS schema, c.relname AS name, c.relkind AS kind, ds.description AS comment,
       CASE WHEN c.relkind = 'p' THEN (
                SELECT SUM(leaf.reltuples) FROM pg_catalog.pg_partition_tree(c.oid) AS tree
                JOIN pg_catalog.pg_class AS leaf ON leaf.oid = tree.relid
                WHERE tree.isleaf AND leaf.reltuples >= 0)
            WHEN c.relkind = 'r' AND c.reltuples >= 0 THEN c.reltuples + COALESCE((
                SELECT SUM(child.reltuples) FROM pg_catalog.pg_inherits AS inh
                JOIN pg_catalog.pg_class AS child ON child.oid = inh.inhrelid
                WHERE inh.inhparent = c.oid AND child.reltuples >= 0), 0)
            WHEN c.relkind IN ('m', 'f') AND c.reltuples >= 0 THEN c.reltuples END AS estimate,
       -- the extension the relation belongs to (CREATE EXTENSION made it): never the warehouse's own data
       (SELECT e.extname FROM pg_catalog.pg_depend AS dep
        JOIN pg_catalog.pg_extension AS e ON e.oid = dep.refobjid
        WHERE dep.classid = 'pg_catalog.pg_class'::regclass AND dep.objid = c.oid
          AND dep.refclassid = 'pg_catalog.pg_extension'::regclass AND dep.deptype = 'e' LIMIT 1) AS extension
FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
-- what obj_description() looks up, joined once instead of called per table
LEFT JOIN pg_catalog.pg_description AS ds
       ON ds.objoid = c.oid AND ds.classoid = 'pg_catalog.pg_class'::regclass AND ds.objsubid = 0
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition AND n.nspname = ANY(%(schemas)s)
  AND NOT EXISTS ({_INHERITED})
ORDER BY n.nspname, c.relname
"""
_COLUMNS_SQL = f"""
SELECT a.attrelid AS oid, a.attnum, a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS native,
       t.typtype, CASE WHEN t.typtype = 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) END AS base,
       NOT a.attnotnull AS nullable,
       -- a default cannot name a column, so it is printed without its relation (a third of this query's time
       -- at 200,000 columns goes to looking the relation up for each); a generated column's expression can
       CASE WHEN a.attgenerated = '' THEN pg_catalog.pg_get_expr(d.adbin, 0)
            ELSE pg_catalog.pg_get_expr(d.adbin, d.adrelid) END AS "default",
       ds.description AS comment
FROM pg_catalog.pg_attribute AS a
JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
-- what col_description() looks up, joined once instead of called per column (unique on these three keys)
LEFT JOIN pg_catalog.pg_description AS ds
       ON ds.objoid = a.attrelid AND ds.classoid = 'pg_catalog.pg_class'::regclass AND ds.objsubid = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND n.nspname = ANY(%(schemas)s) AND NOT EXISTS ({_INHERITED})
ORDER BY a.attrelid, a.attnum
"""
# Key columns as attribute numbers: named from the columns already read (two subqueries per row cost more
# than the rest of the catalog); references into schemas not scanned are named by _ATTNAMES_SQL.
_CONSTRAINTS_SQL = f"""
SELECT con.conrelid AS oid, con.contype AS kind, con.conname AS name, con.conkey AS columns,
       con.confrelid AS ref_oid, rn.nspname AS ref_schema, rc.relname AS ref_table, con.confkey AS ref_columns
FROM pg_catalog.pg_constraint AS con
JOIN pg_catalog.pg_class AS c ON c.oid = con.conrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_class AS rc ON rc.oid = con.confrelid
LEFT JOIN pg_catalog.pg_namespace AS rn ON rn.oid = rc.relnamespace
WHERE con.contype IN ('p', 'f') AND con.conparentid = 0 AND NOT c.relispartition AND n.nspname = ANY(%(schemas)s)
  AND NOT EXISTS ({_INHERITED})
ORDER BY con.conrelid, con.contype, con.conname
"""
_ATTNAMES_SQL = """
SELECT a.attrelid AS oid, a.attnum, a.attname AS name FROM pg_catalog.pg_attribute AS a
WHERE a.attrelid = ANY(%(oids)s) AND a.attnum > 0
"""
# The columns of one relation the session's role may read: asked only when a sample query was refused
_READABLE_SQL = """
SELECT a.attname AS name FROM pg_catalog.pg_attribute AS a
JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relname = %(name)s AND a.attnum > 0 AND NOT a.attisdropped
  AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')
"""
_SAMPLE_SEED = 42


def printed_text(expression: str) -> str:
    """The type's output function, as psql prints the value (``inet::text`` would add ``/32``); NULL stays NULL
    (``num_nulls``: a composite with NULL fields is not NULL)."""
    return f"CASE WHEN num_nulls({expression}) = 0 THEN format('%s', {expression}) END"


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class _AttributeNames:
    """Column names by (relation oid, attribute number) for the key constraints: looked up in the column rows
    read (each relation's in attribute order, so a relation without dropped columns finds its attribute at its
    number) instead of a dict of every column; ``outside`` holds those of relations not read."""

    def __init__(self, columns: dict[int, list[tuple[Any, ...]]]) -> None:
        self._columns = columns
        self.outside: dict[tuple[int, int], str] = {}

    def get(self, oid: int, attnum: int) -> str | None:
        rows = self._columns.get(oid, [])
        if 0 < attnum <= len(rows) and rows[attnum - 1][1] == attnum:
            return str(rows[attnum - 1][2])
        for row in rows:  # a dropped column left a gap in the numbers
            if row[1] == attnum:
                return str(row[2])
        return self.outside.get((oid, attnum))

    def __getitem__(self, at: tuple[int, int]) -> str:
        name = self.get(*at)
        if name is None:
            raise KeyError(at)
        return name


class PostgresDriver(HoldsConnection[psycopg.Connection[Any]]):
    name = "postgres"
    dialect = "postgres"
    application_name = "khive"  # what pg_stat_activity shows; a reader of its own may name itself

    def __init__(self, connection: str, config: ConnectionConfig, secrets: dict[str, str]):
        self.connection = connection
        self.config = config
        self._url = connection_url(connection, config, secrets)
        self._conn: psycopg.Connection[Any] | None = None
        self._types: dict[int, PgType] = {}
        self._session: SessionFacts | None = None

    # ---- connection ----------------------------------------------------------------------------------------

    def _target(self) -> tuple[str, str]:
        """``host=... port=... dbname=... user=...`` for messages (never the password), and the password."""
        try:
            params = conninfo_to_dict(self._url)
        except psycopg.ProgrammingError:
            return "(unparseable connection string)", ""
        shown = " ".join(f"{key}={params[key]}" for key in ("host", "hostaddr", "port", "dbname", "user")
                         if params.get(key))
        return shown or "(libpq defaults)", str(params.get("password") or "")

    def _db(self) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        target, password = self._target()
        try:
            existing = str(conninfo_to_dict(self._url).get("options") or "")
        except psycopg.ProgrammingError:
            existing = ""
        options = (f"{existing} -c default_transaction_read_only=on "
                   f"-c statement_timeout={_ms(self.config.statement_timeout_s)} {SESSION_OPTIONS}").strip()
        conn: psycopg.Connection[Any] | None = None
        try:
            conn = psycopg.connect(self._url, options=options, connect_timeout=10,
                                   application_name=self.application_name, autocommit=True)
            self._session = inspect_and_pin(conn)  # once per connection (ADR 0032)
        except psycopg.Error as exc:
            if conn is not None:
                conn.close()
            reason = " ".join(str(exc).split())
            if password:
                reason = reason.replace(password, "***")
            raise KhiveError(f"connection {self.connection!r}: cannot connect to PostgreSQL at {target}: {reason}",
                             code="connection_failed",
                             details={"connection": self.connection, "target": target}) from None
        conn.autocommit = False
        conn.read_only = True  # every transaction: BEGIN READ ONLY
        register_loaders(conn)  # values leave the driver by khive's value rule (pgvalues.py)
        self._conn = conn
        return conn

    def session_facts(self) -> SessionFacts | None:
        """The role's privileges and the pinned search path, learned when the connection opened."""
        self._db()
        return self._session

    def _error(self, exc: psycopg.Error, timeout_s: float) -> KhiveError:
        details = {"connection": self.connection, "sqlstate": exc.sqlstate}
        message = " ".join(str(exc).split())
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
            return KhiveError(f"connection {self.connection!r} is read-only: {message}", code="read_only_violation",
                              details=details)
        if isinstance(exc, pg_errors.QueryCanceled) and abandoned():
            return caller_left(self.connection, details)
        if isinstance(exc, pg_errors.QueryCanceled):
            return KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r})",
                              code="statement_timeout", details={**details, "timeout_s": timeout_s})
        if isinstance(exc, psycopg.OperationalError) and self._conn is not None and self._conn.closed:
            self._conn = None
            return KhiveError(f"connection {self.connection!r} lost: {message}", code="connection_failed",
                              details=details)
        return KhiveError(f"connection {self.connection!r}: {message}", code="query_failed", details=details)

    def _fetch(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """One sample query in its own read-only transaction."""
        rows: list[dict[str, Any]] = self._fetch_many([(sql, params)], row_factory=dict_row)[0]
        return rows

    def read(self, statement: str | SQL | Composed, params: Sequence[Any] | Mapping[str, Any] | None = None
             ) -> list[dict[str, Any]]:
        """Rows (dicts) of one statement of khive's own, e.g. a statistics view a history reader reads: the
        same read-only session, pinned search path and password-free errors as every other query here."""
        rows: list[dict[str, Any]] = self._fetch_many([(statement, params)], row_factory=dict_row)[0]
        return rows

    def _fetch_many(self, queries: Sequence[tuple[str | SQL | Composed, Sequence[Any] | Mapping[str, Any] | None]], *,
                    row_factory: Any = tuple_row) -> list[list[Any]]:
        """Queries in one read-only transaction, without JIT: catalog and sample queries are short, and
        PostgreSQL's cost estimates for them (subplans over pg_class) trigger compiles costing more.
        Catalog rows come as tuples (20k columns: dicts cost a fifth of the fetch)."""
        conn = self._db()
        try:
            with conn.cursor(row_factory=row_factory) as cursor:
                cursor.execute("SET LOCAL jit = off")
                out = []
                for sql, params in queries:
                    cursor.execute(sql, params)
                    out.append(cursor.fetchall())
                return out
        except psycopg.Error as exc:
            raise self._error(exc, self.config.statement_timeout_s) from None
        finally:
            if not conn.closed:
                conn.rollback()

    # ---- catalog -------------------------------------------------------------------------------------------

    def read_catalog(self) -> CatalogSnapshot:
        found = self._fetch(_SCHEMAS_SQL)
        database = str(found[0]["database"]) if found else None
        schemas = [row["schema"] for row in found if schema_selected(row["schema"], self.config.schemas)]
        if not schemas:
            return CatalogSnapshot(connection=self.connection, driver=self.name, catalog=database)
        where = {"schemas": schemas}
        relations, column_rows, constraints = self._fetch_many(
            [(_RELATIONS_SQL, where), (_COLUMNS_SQL, where), (_CONSTRAINTS_SQL, where)])
        columns: dict[int, list[tuple[Any, ...]]] = {}
        for row in column_rows:
            columns.setdefault(row[0], []).append(row)
        names = _AttributeNames(columns)
        outside = sorted({ref_oid for _, kind, _, _, ref_oid, _, _, ref_columns in constraints
                          if kind == "f" and names.get(ref_oid, ref_columns[0]) is None})
        if outside:
            (attnames,) = self._fetch_many([(_ATTNAMES_SQL, {"oids": outside})])
            names.outside.update(((oid, attnum), name) for oid, attnum, name in attnames)
        primary: dict[int, tuple[str, ...]] = {}
        foreign: dict[int, list[ForeignKey]] = {}
        for oid, kind, name, own_numbers, ref_oid, ref_schema, ref_table, ref_numbers in constraints:
            own = tuple(names[oid, attnum] for attnum in own_numbers)
            if kind == "p":
                primary[oid] = own
            else:
                foreign.setdefault(oid, []).append(ForeignKey(
                    name=name, columns=own, refCatalog=database, refDb=ref_schema, refTable=ref_table,
                    refColumns=tuple(names[ref_oid, attnum] for attnum in ref_numbers)))

        tables = []
        excluded = []
        # Equal catalog rows at equal positions make one Column: a warehouse repeats id, created_at, ... in
        # thousands of tables, and the row is its key as it comes (no keyword arguments to hash per column).
        made: dict[tuple[Any, ...], Column] = {}
        for oid, schema, name, kind, comment, estimate, extension in relations:
            if extension is not None:
                excluded.append(ExcludedObject(db=schema, name=name, reason=f"extension {extension}"))
                continue
            pk = set(primary.get(oid, ()))
            fk_columns = {column for fk in foreign.get(oid, []) for column in fk.columns}
            built = []
            for ordinal, row in enumerate(columns.get(oid, []), start=1):
                shape = row[2:]  # the column as the catalog describes it, without its relation and number
                key = (ordinal, shape, shape[0] in pk, shape[0] in fk_columns)
                same = made.get(key)
                if same is None:
                    column, native, typtype, base, nullable, default, note = shape
                    same = made[key] = build_column(
                        column, ordinal, native, self.dialect, nullable=nullable, default=default,
                        primary_key=key[2], is_fk=key[3], comment=note,
                        normalized="string" if typtype == "e" else normalize_type(base, self.dialect) if base else None)
                built.append(same)
            tables.append(Table(catalog=database, db=schema, name=name, kind=_KINDS[kind], comment=comment,
                                estimatedRows=None if estimate is None else int(estimate),
                                columns=tuple(built), foreignKeys=tuple(foreign.get(oid, []))))
        return CatalogSnapshot(connection=self.connection, driver=self.name, catalog=database, tables=tuple(tables),
                               excluded=tuple(excluded))

    # ---- samples and queries -------------------------------------------------------------------------------

    def sample(self, tables: Sequence[Table]) -> list[ColumnSample]:
        policy = self.config.sample_values

        def run(table: Table, columns: list[Column]) -> list[tuple[Any, ...]]:
            percent = sample_percent(table, policy)
            clause = "" if percent is None else f" TABLESAMPLE SYSTEM ({percent:.6f}) REPEATABLE ({_SAMPLE_SEED})"
            sql = sample_sql(f"{quote(table.db)}.{quote(table.name)}", columns, policy, sample_clause=clause,
                             as_text=printed_text)
            return [tuple(row.values()) for row in self._fetch(sql)]  # no params: a "%" in a name stays literal

        def readable(table: Table) -> list[str]:
            return [row["name"] for row in self._fetch(_READABLE_SQL, {"schema": table.db, "name": table.name})]

        return sample_tables(tables, policy, self.dialect, run, readable=readable)

    def _result_types(self, conn: psycopg.Connection[Any], oids: list[int]) -> dict[int, PgType]:
        """Result column types: psycopg's registry, else pg_type (enums, domains, composites and their arrays)."""
        missing = [oid for oid in oids if oid not in self._types and conn.adapters.types.get(oid) is None]
        if missing:
            with conn.cursor() as cursor:
                cursor.execute(TYPES_SQL, [missing])
                for oid, name, element, delimiter in cursor.fetchall():
                    self._types[int(oid)] = PgType(str(name), None if element is None else int(element),
                                                   str(delimiter or ","))
        found = {}
        for oid in oids:
            info = conn.adapters.types.get(oid)  # an array's oid finds its element's info
            name = (info.name + "[]" if info.array_oid == oid else info.name) if info else str(oid)
            found[oid] = self._types.get(oid) or PgType(name)
        return found

    def execute(self, sql: str, *, limit: int, timeout_s: float,
                shown: Shown = DEFAULT_SHOWN) -> QueryResult:
        started = time.perf_counter()
        conn = self._db()
        try:
            with conn.cursor() as cursor, interrupt_on_abandon(conn.cancel_safe):
                cursor.execute(f"SET LOCAL statement_timeout = {_ms(timeout_s)}")
                read = _stream_rows(cursor, sql, limit, shown)  # extended protocol: exactly one statement
                description = cursor.description or ([] if read is None or read.rows else _columns_of(conn, sql))
            if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                conn.rollback()  # reading stopped early cancelled the statement; the type lookup needs a transaction
            types = self._result_types(conn, [int(item.type_code) for item in description])
            result_types = [types[int(item.type_code)] for item in description]
            columns = [{"name": item.name, "type": kind.name}
                       for item, kind in zip(description, result_types, strict=True)]
            converters = [array_converter(conn, kind) for kind in result_types]
        except psycopg.Error as exc:
            raise self._error(exc, timeout_s) from None
        finally:
            if not conn.closed:
                conn.rollback()
        return query_result(columns, read.rows if read else [], limit, started, converters=converters, shown=shown,
                            unread=bool(read and read.unread))


_ROW_BY_ROW = 1000  # up to this limit rows are read one at a time; above it (exports) in chunks, 5 us a row faster


def _stream_rows(cursor: psycopg.Cursor[Any], sql: str, limit: int, shown: Shown) -> ReadRows | None:
    """The rows read one at a time (libpq's single-row mode; chunks of 64 for exports of more than 1,000 rows),
    so that reading can stop (``read_rows``); leaving the stream early cancels the statement. None for a
    command that ran without a result set (SET, ...)."""
    chunk = READ_CHUNK if limit > _ROW_BY_ROW and capabilities.has_stream_chunked() else 1  # chunks: libpq 17
    with closing(cast(Generator[Any, None, None], cursor.stream(sql, size=chunk))) as stream:
        try:
            return read_rows(stream, limit, shown)
        except psycopg.ProgrammingError as exc:
            if exc.sqlstate is not None:  # the server's error (permission denied, ...), not psycopg's
                raise
            return None  # stream()'s word for a command without rows


def _columns_of(conn: psycopg.Connection[Any], sql: str) -> list[Any]:
    """The columns of a statement that returned no rows (a stream keeps only its rows' descriptions): the same
    statement under LIMIT 0, which PostgreSQL answers without running it; none when it cannot be wrapped."""
    try:
        with conn.cursor() as cursor:
            with conn.pipeline():  # extended protocol, as the statement itself ran
                cursor.execute(f"SELECT * FROM ({sql}\n) AS khive_columns LIMIT 0")
            return list(cursor.description or [])
    except psycopg.Error:
        conn.rollback()
        return []
