"""SQLite: a database file opened read-only, its catalog read in three bulk queries.

Read-only is layered: the ``mode=ro`` URI (the main file), ``PRAGMA query_only`` (temp objects too) and
an ATTACH limit of zero (no second, writable file). Timeouts are a progress handler that aborts the
statement once its deadline passes. SQLite has no comments (capability gap ``comments``); row estimates
come from ``sqlite_stat1`` when ANALYZE has been run, else they are unknown.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from khive.abandon import abandoned, caller_left, keep_interrupting_on_abandon
from khive.connections.catalog import CatalogSnapshot, Column, ColumnSample, ExcludedObject, ForeignKey, Table
from khive.connections.config import ConnectionConfig
from khive.connections.driver import HoldsConnection, QueryResult
from khive.connections.types import (
    ReadRows,
    build_column,
    in_chunks,
    query_result,
    quote,
    read_rows,
    sample_sql,
    sample_tables,
    schema_selected,
)
from khive.errors import KhiveError
from khive.values import DEFAULT_SHOWN, Shown

SCHEMA = "main"
_OBJECTS_SQL = ("SELECT m.type, m.name FROM sqlite_schema AS m "
                "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY m.name")
_COLUMNS_SQL = ("SELECT m.type, m.name, p.cid, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk "
                "FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS p "
                "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                "ORDER BY m.name, p.cid")
_ONE_OBJECT_SQL = ("SELECT ?, ?, p.cid, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk "
                   "FROM pragma_table_info(?) AS p ORDER BY p.cid")
_FKS_SQL = ("SELECT m.name, f.id, f.seq, f.\"table\", f.\"from\", f.\"to\" "
            "FROM sqlite_schema AS m JOIN pragma_foreign_key_list(m.name) AS f "
            "WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq")
_STATS_SQL = "SELECT tbl, MAX(CAST(stat AS INTEGER)) FROM sqlite_stat1 GROUP BY tbl"
# the tables a virtual table (FTS5, R*Tree) keeps its data in: SQLite's, not the user's (SQLite 3.37+)
_SHADOW_SQL = "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'"
_PROGRESS_STEPS = 1000  # VM instructions between deadline checks: microseconds apart


def _text(data: bytes) -> str:
    """Catalog text (names, declared types): never fails, a bad byte becomes U+FFFD."""
    return data.decode("utf-8", "replace")


def _value_text(data: bytes) -> str | bytes:
    """Values: text that is not UTF-8 stays bytes, which khive's value rule shows as hex (khive/values.py)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class SqliteDriver(HoldsConnection[sqlite3.Connection]):
    name = "sqlite"
    dialect = "sqlite"

    def __init__(self, connection: str, config: ConnectionConfig, secrets: dict[str, str]):
        self.connection = connection
        self.config = config
        self.path = Path(secrets.get("path") or config.path or "")
        self._conn: sqlite3.Connection | None = None

    # ---- connection ----------------------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if not self.path.is_file():
            raise KhiveError(f"connection {self.connection!r}: SQLite file {str(self.path)!r} not found",
                             code="connection_failed", details={"connection": self.connection, "path": str(self.path)})
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise KhiveError(f"connection {self.connection!r}: cannot open SQLite file {str(self.path)!r}: {exc}",
                             code="connection_failed", details={"connection": self.connection}) from None
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            conn.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()  # not a database: fail here, clearly
        except sqlite3.Error as exc:
            conn.close()
            raise KhiveError(f"connection {self.connection!r}: {str(self.path)!r} is not a readable SQLite "
                             f"database: {exc}", code="connection_failed",
                             details={"connection": self.connection}) from None
        conn.text_factory = _text
        self._conn = conn
        return conn

    def _run(self, sql: str, params: Sequence[Any] = (), *, timeout_s: float, limit: int | None = None,
             values: bool = False) -> tuple[list[tuple[Any, ...]], Any]:
        """``values``: the rows are data (samples, query results), so text that is not UTF-8 stays bytes."""
        read, description = self._read(sql, params, timeout_s=timeout_s, values=values, fetch=lambda cursor: ReadRows(
            cursor.fetchall() if limit is None else cursor.fetchmany(limit), unread=False))
        return read.rows, description

    def _read(self, sql: str, params: Sequence[Any] = (), *, timeout_s: float, values: bool,
              fetch: Callable[[sqlite3.Cursor], ReadRows]) -> tuple[ReadRows, Any]:
        """The statement's rows as ``fetch`` reads them from its cursor, within the deadline."""
        conn = self._db()
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
        conn.text_factory = _value_text if values else _text
        try:
            cursor = conn.execute(sql, params)
            read = fetch(cursor)
            cursor.close()
            return read, cursor.description
        except sqlite3.Error as exc:
            raise self._error(exc, timeout_s) from None
        finally:
            conn.set_progress_handler(None, 0)
            conn.text_factory = _text

    def _error(self, exc: sqlite3.Error, timeout_s: float) -> KhiveError:
        name = getattr(exc, "sqlite_errorname", "")
        details = {"connection": self.connection, "sqlite_error": name}
        if name == "SQLITE_READONLY" or "readonly database" in str(exc):
            return KhiveError(f"connection {self.connection!r} is read-only: {exc}", code="read_only_violation",
                              details=details)
        if name == "SQLITE_INTERRUPT" and abandoned():
            return caller_left(self.connection, details)
        if name == "SQLITE_INTERRUPT":
            return KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r})",
                              code="statement_timeout", details={**details, "timeout_s": timeout_s})
        return KhiveError(f"connection {self.connection!r}: {exc}", code="query_failed", details=details)

    # ---- catalog -------------------------------------------------------------------------------------------

    def _column_rows(self, timeout_s: float, warnings: list[str]) -> list[tuple[Any, ...]]:
        try:
            return self._run(_COLUMNS_SQL, timeout_s=timeout_s)[0]
        except KhiveError as exc:
            if exc.code != "query_failed":
                raise
        # one broken view (it names a dropped table) fails the bulk query: isolate it, keep the rest
        rows: list[tuple[Any, ...]] = []
        for kind, name in self._run(_OBJECTS_SQL, timeout_s=timeout_s)[0]:
            try:
                rows.extend(self._run(_ONE_OBJECT_SQL, (kind, name, name), timeout_s=timeout_s)[0])
            except KhiveError as exc:
                warnings.append(f"{kind} {name}: columns unreadable ({exc.message})")
        return rows

    def read_catalog(self) -> CatalogSnapshot:
        timeout = self.config.statement_timeout_s
        catalog = self.path.stem
        if not schema_selected(SCHEMA, self.config.schemas):
            self._db()
            return self._snapshot(catalog, (), [])
        warnings: list[str] = []
        column_rows = self._column_rows(timeout, warnings)
        fk_rows = self._run(_FKS_SQL, timeout_s=timeout)[0]
        try:
            estimates = {str(tbl): int(rows) for tbl, rows in self._run(_STATS_SQL, timeout_s=timeout)[0]}
        except KhiveError as exc:
            if "no such table" not in exc.message:
                raise
            estimates = {}
            warnings.append("no sqlite_stat1 table: row estimates unknown (run ANALYZE on the file to get them)")

        shadows = self._shadow_tables(timeout)
        objects: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}
        for kind, table, *column in column_rows:
            if table not in shadows:
                objects.setdefault(table, (kind, []))[1].append(tuple(column))
        keys: dict[str, list[tuple[Any, ...]]] = {}
        for table, fk_id, _seq, ref_table, source, target in fk_rows:
            keys.setdefault(table, []).append((fk_id, ref_table, source, target))

        tables = []
        for table, (kind, columns) in objects.items():
            pk_columns = [name for _cid, name, *_rest, pk in sorted(columns, key=lambda c: c[-1]) if pk]
            foreign_keys = self._foreign_keys(keys.get(table, []), objects, catalog)
            fk_columns = {name for fk in foreign_keys for name in fk.columns}
            rowid_alias = len(pk_columns) == 1 and kind == "table"  # INTEGER PRIMARY KEY is never NULL
            built = [
                build_column(name, cid + 1, declared or "", self.dialect,
                             nullable=not notnull and not (pk and rowid_alias and declared.upper() == "INTEGER"),
                             default=default, primary_key=bool(pk), is_fk=name in fk_columns)
                for cid, name, declared, notnull, default, pk in columns
            ]
            tables.append(Table(catalog=catalog, db=SCHEMA, name=table, kind="view" if kind == "view" else "table",
                                estimatedRows=estimates.get(table) if kind == "table" else None,
                                columns=tuple(built), foreignKeys=tuple(foreign_keys)))
        excluded = tuple(ExcludedObject(db=SCHEMA, name=name, reason="system") for name in sorted(shadows))
        return self._snapshot(catalog, tuple(tables), warnings, excluded)

    def _shadow_tables(self, timeout_s: float) -> frozenset[str]:
        try:
            return frozenset(str(name) for (name,) in self._run(_SHADOW_SQL, timeout_s=timeout_s)[0])
        except KhiveError as exc:
            if "no such table" not in exc.message:  # before SQLite 3.37: no pragma_table_list, no such tables
                raise
            return frozenset()

    def _snapshot(self, catalog: str, tables: tuple[Table, ...], warnings: list[str],
                  excluded: tuple[ExcludedObject, ...] = ()) -> CatalogSnapshot:
        return CatalogSnapshot(connection=self.connection, driver=self.name, catalog=catalog, tables=tables,
                               warnings=tuple(warnings), excluded=excluded, capabilityGaps=("comments",))

    @staticmethod
    def _foreign_keys(rows: list[tuple[Any, ...]], objects: dict[str, tuple[str, list[tuple[Any, ...]]]],
                      catalog: str) -> list[ForeignKey]:
        grouped: dict[int, list[tuple[Any, ...]]] = {}
        for fk_id, ref_table, source, target in rows:
            grouped.setdefault(fk_id, []).append((ref_table, source, target))
        keys = []
        for parts in grouped.values():
            ref_table = parts[0][0]
            targets = [target for _ref, _source, target in parts]
            if any(target is None for target in targets):  # REFERENCES parent: the parent's primary key
                parent = objects.get(ref_table, ("", []))[1]
                targets = [name for _cid, name, *_rest, pk in sorted(parent, key=lambda c: c[-1]) if pk]
            keys.append(ForeignKey(columns=tuple(source for _ref, source, _target in parts), refCatalog=catalog,
                                   refDb=SCHEMA, refTable=ref_table, refColumns=tuple(targets)))
        return keys

    # ---- samples and queries -------------------------------------------------------------------------------

    def sample(self, tables: Sequence[Table]) -> list[ColumnSample]:
        def run(table: Table, columns: list[Column]) -> list[tuple[Any, ...]]:
            sql = sample_sql(f"{quote(table.db)}.{quote(table.name)}", columns, self.config.sample_values)
            return self._run(sql, timeout_s=self.config.statement_timeout_s, values=True)[0]

        return sample_tables(tables, self.config.sample_values, self.dialect, run)

    def execute(self, sql: str, *, limit: int, timeout_s: float,
                shown: Shown = DEFAULT_SHOWN) -> QueryResult:
        started = time.perf_counter()
        try:
            # rows a batch at a time, and no more than the result can show (ADR 0053)
            with keep_interrupting_on_abandon(self._db().interrupt):
                read, description = self._read(sql, timeout_s=timeout_s, values=True, fetch=lambda cursor: read_rows(
                    in_chunks(cursor.fetchmany), limit, shown))
        finally:
            if self._conn is not None:  # a PRAGMA query_only = OFF that slipped through lasts one statement
                self._conn.execute("PRAGMA query_only = ON")
        names = [item[0] for item in description or ()]
        return query_result([{"name": name, "type": _value_type(read.rows, i)} for i, name in enumerate(names)],
                            read.rows, limit, started, shown=shown, unread=read.unread)


_PY_TYPES: dict[type, str] = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}


def _value_type(rows: list[tuple[Any, ...]], index: int) -> str:
    """SQLite results carry no declared types: the storage class of the first non-null value."""
    value = next((row[index] for row in rows if row[index] is not None), None)
    return "NULL" if value is None else _PY_TYPES.get(type(value), type(value).__name__.upper())
