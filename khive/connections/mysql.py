"""MySQL and MariaDB through PyMySQL (the optional extra ``khive[mysql]``): a read-only session, the catalog
in four bulk information_schema queries.

The url (``url: env:VAR``) is ``mysql://USER[:PASSWORD]@HOST[:PORT][/DATABASE]`` with optional
``unix_socket``, ``ssl_ca``, ``ssl_cert``, ``ssl_key`` and ``connect_timeout`` parameters. A database
in the url is the scan's only schema unless ``schemas.include`` names others (a MySQL "schema" is a
database); without one, every database the user sees except the system ones is scanned.

Read-only is layered: the session starts with ``SET SESSION TRANSACTION READ ONLY`` (the server refuses
writes, error 1792), each unit of work runs in a ``START TRANSACTION READ ONLY`` that is always rolled
back, and PyMySQL never enables multi-statements, so the server refuses a second statement. The
statement timeout is the session's ``max_statement_time`` (MariaDB, seconds) or ``max_execution_time``
(MySQL, milliseconds, SELECT only). The session's ``time_zone`` is UTC, so a TIMESTAMP (an instant) is
shown with ``+00:00`` while a DATETIME (a wall-clock time) has no offset.

Values by the value rule (khive/values.py): DECIMAL as its digits, BIGINT UNSIGNED beyond 2**53 - 1 as
text, BIT(n) as its bit string (``"0101"``, as PostgreSQL prints bit strings), JSON as its value, TIME as a
time of day when it is one, else an ISO 8601 duration (MySQL's TIME is also an elapsed time up to
838:59:59), zero dates (``0000-00-00``) as the text MySQL prints, since they are no date.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pymysql
import sqlglot
from pymysql.constants import FIELD_TYPE

from khive.connections import types
from khive.connections.catalog import CatalogSnapshot, Column, ColumnSample, ForeignKey, Table, TableKind
from khive.connections.config import ConnectionConfig
from khive.connections.driver import HoldsConnection, QueryResult, connection_url
from khive.connections.types import build_column, query_result, quote, sample_sql, sample_tables, schema_selected
from khive.errors import ConfigError, KhiveError
from khive.values import DEFAULT_SHOWN, Converter, Encoder, Shown, json_text, timedelta_text

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
_KINDS: dict[str, TableKind] = {"BASE TABLE": "table", "VIEW": "view", "SYSTEM VERSIONED": "table"}
_PARAMETERS = ("unix_socket", "ssl_ca", "ssl_cert", "ssl_key", "connect_timeout")
_URL_FIX = "mysql://USER:PASSWORD@HOST:3306/DATABASE"
_TIMEOUT_ERRORS = frozenset({1969, 3024, 1317})  # max_statement_time, max_execution_time, query interrupted
_LOST_ERRORS = frozenset({2002, 2003, 2006, 2013, 2055})
_DENIED_ERRORS = frozenset({1044, 1142, 1143, 1227, 1370})
_TYPE_NAMES = {FIELD_TYPE.DECIMAL: "DECIMAL", FIELD_TYPE.NEWDECIMAL: "DECIMAL", FIELD_TYPE.TINY: "TINYINT",
               FIELD_TYPE.SHORT: "SMALLINT", FIELD_TYPE.INT24: "MEDIUMINT", FIELD_TYPE.LONG: "INT",
               FIELD_TYPE.LONGLONG: "BIGINT", FIELD_TYPE.FLOAT: "FLOAT", FIELD_TYPE.DOUBLE: "DOUBLE",
               FIELD_TYPE.BIT: "BIT", FIELD_TYPE.YEAR: "YEAR", FIELD_TYPE.DATE: "DATE", FIELD_TYPE.NEWDATE: "DATE",
               FIELD_TYPE.TIME: "TIME", FIELD_TYPE.DATETIME: "DATETIME", FIELD_TYPE.TIMESTAMP: "TIMESTAMP",
               FIELD_TYPE.JSON: "JSON", FIELD_TYPE.ENUM: "ENUM", FIELD_TYPE.SET: "SET", FIELD_TYPE.GEOMETRY: "GEOMETRY",
               FIELD_TYPE.NULL: "NULL"}
# text and binary strings share their wire codes; the character set tells them apart (63 is binary)
_STRING_NAMES = {FIELD_TYPE.VARCHAR: ("VARCHAR", "VARBINARY"), FIELD_TYPE.VAR_STRING: ("VARCHAR", "VARBINARY"),
                 FIELD_TYPE.STRING: ("CHAR", "BINARY"), FIELD_TYPE.TINY_BLOB: ("TEXT", "BLOB"),
                 FIELD_TYPE.MEDIUM_BLOB: ("TEXT", "BLOB"), FIELD_TYPE.LONG_BLOB: ("TEXT", "BLOB"),
                 FIELD_TYPE.BLOB: ("TEXT", "BLOB")}
_BINARY_CHARSET = 63


def type_name(code: int, charset: int | None) -> str:
    if code in _STRING_NAMES:
        return _STRING_NAMES[code][charset == _BINARY_CHARSET]
    return _TYPE_NAMES.get(code, str(code))

_SCHEMAS_SQL = "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME"
_TABLES_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_ROWS, TABLE_COMMENT FROM information_schema.TABLES
WHERE TABLE_SCHEMA IN %(schemas)s AND TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
ORDER BY TABLE_SCHEMA, TABLE_NAME
"""
_COLUMNS_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, COLUMN_TYPE,
       COLUMN_COMMENT
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN %(schemas)s
ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION
"""
# primary keys and foreign keys in one read: PRIMARY rows have no referenced table, foreign key rows do
_KEYS_SQL = """
SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, ORDINAL_POSITION, REFERENCED_TABLE_SCHEMA,
       REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA IN %(schemas)s AND (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL)
ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION
"""


def connect_arguments(connection: str, url: str) -> dict[str, Any]:
    """PyMySQL's keyword arguments from the connection's url."""
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb") or not parts.username:
        raise ConfigError(f"connection {connection!r}: the url is not of the form {_URL_FIX}",
                          details={"field": f"connections.{connection}.url", "fix": _URL_FIX})
    arguments: dict[str, Any] = {"user": unquote(parts.username), "password": unquote(parts.password or ""),
                                 "host": parts.hostname or "localhost", "port": parts.port or 3306}
    database = unquote(parts.path.strip("/"))
    if database:
        arguments["database"] = database
    for key, value in parse_qsl(parts.query):
        if key not in _PARAMETERS:
            raise ConfigError(f"connection {connection!r}: the url's parameter {key!r} is not one khive passes on; "
                              f"known: {', '.join(_PARAMETERS)}",
                              details={"field": f"connections.{connection}.url", "fix": _URL_FIX})
        arguments[key] = int(value) if key == "connect_timeout" else value
    return arguments


# ---- values ------------------------------------------------------------------------------------------------


def _bits(width: int) -> Converter:
    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        if not isinstance(value, bytes | bytearray):
            return encoder.value(value, column)
        return format(int.from_bytes(value, "big"), f"0{max(width, 1)}b")

    return convert


def _instant(value: Any, encoder: Encoder, column: str) -> Any:
    """TIMESTAMP read in a UTC session: the instant with its offset."""
    if isinstance(value, datetime):
        return encoder.value(value.replace(tzinfo=UTC), column)
    return encoder.value(value, column)  # a zero date stays MySQL's text


def _clock(value: Any, encoder: Encoder, column: str) -> Any:
    """TIME: a time of day when it is one (00:00:00 up to 24h), else an elapsed time as an ISO 8601 duration."""
    if isinstance(value, timedelta) and timedelta(0) <= value < timedelta(days=1):
        seconds = int(value.total_seconds())
        text = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        return text + f".{value.microseconds:06d}".rstrip("0") if value.microseconds else text
    if isinstance(value, timedelta):
        return timedelta_text(value)
    return encoder.value(value, column)


def _json(value: Any, encoder: Encoder, column: str) -> Any:
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "surrogateescape")
    return json_text(value) if isinstance(value, str) else encoder.value(value, column)


def _converter(type_code: int, width: int) -> Converter | None:
    if type_code == FIELD_TYPE.BIT:
        return _bits(width)
    if type_code == FIELD_TYPE.TIMESTAMP:
        return _instant
    if type_code == FIELD_TYPE.TIME:
        return _clock
    if type_code == FIELD_TYPE.JSON:
        return _json
    return None


# ---- the driver ----------------------------------------------------------------------------------------------


class MySqlDriver(HoldsConnection[pymysql.connections.Connection]):
    name = "mysql"
    dialect = "mysql"

    def __init__(self, connection: str, config: ConnectionConfig, secrets: dict[str, str]):
        self.connection = connection
        self.config = config
        self._arguments = connect_arguments(connection, connection_url(connection, config, secrets))
        self._conn: pymysql.connections.Connection | None = None
        self._mariadb = False
        self._timeout: float | None = None

    # ---- connection ----------------------------------------------------------------------------------------

    def _target(self) -> str:
        args = self._arguments
        where = args.get("unix_socket") or f"{args['host']}:{args['port']}"
        return f"{where} user={args['user']}" + (f" database={args['database']}" if args.get("database") else "")

    def _db(self) -> pymysql.connections.Connection:
        if self._conn is not None and self._conn.open:
            return self._conn
        conn = None
        try:
            conn = pymysql.connect(**{"connect_timeout": 10, **self._arguments}, charset="utf8mb4",
                                   autocommit=False, init_command="SET SESSION TRANSACTION READ ONLY",
                                   program_name="khive")
            with conn.cursor() as cursor:
                cursor.execute("SET SESSION time_zone = '+00:00'")
                cursor.execute("SELECT VERSION()")
                version = cursor.fetchone()
        except pymysql.MySQLError as exc:
            if conn is not None:
                conn.close()
            reason = " ".join(str(exc.args[-1] if exc.args else exc).split())
            password = self._arguments.get("password")
            if password:
                reason = reason.replace(password, "***")
            raise KhiveError(f"connection {self.connection!r}: cannot connect to MySQL at {self._target()}: {reason}",
                             code="connection_failed",
                             details={"connection": self.connection, "target": self._target(),
                                      "errno": exc.args[0] if exc.args else None}) from None
        self._mariadb = "mariadb" in str(version[0] if version else "").lower()
        self._conn = conn
        self._timeout = None
        return conn

    def _drop(self) -> None:
        """Forget a broken connection, closing its socket."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except pymysql.MySQLError:
                pass  # already gone

    def _set_timeout(self, cursor: Any, seconds: float) -> None:
        if self._timeout == seconds:
            return
        if self._mariadb:
            cursor.execute(f"SET SESSION max_statement_time = {seconds:.3f}")
        else:
            cursor.execute(f"SET SESSION max_execution_time = {max(1, round(seconds * 1000))}")
        self._timeout = seconds

    def _error(self, exc: pymysql.MySQLError, timeout_s: float) -> KhiveError:
        errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        message = " ".join(str(exc.args[-1] if exc.args else exc).split())
        details = {"connection": self.connection, "errno": errno}
        if errno in _TIMEOUT_ERRORS:
            return KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r})",
                              code="statement_timeout", details={**details, "timeout_s": timeout_s})
        if errno == 1792:
            return KhiveError(f"connection {self.connection!r} is read-only: {message}", code="read_only_violation",
                              details=details)
        if errno in _DENIED_ERRORS:
            return KhiveError(f"connection {self.connection!r}: {message}", code="permission_denied", details=details)
        if errno in _LOST_ERRORS or isinstance(exc, pymysql.err.InterfaceError):
            self._drop()
            return KhiveError(f"connection {self.connection!r} lost: {message}", code="connection_failed",
                              details=details)
        return KhiveError(f"connection {self.connection!r}: {message}", code="query_failed", details=details)

    def _unit(self, work: Any, timeout_s: float, *, streamed: bool = False) -> Any:
        """``work(cursor)`` in one read-only transaction, always rolled back. ``streamed``: the cursor reads rows from
        the server as they are fetched (PyMySQL's unbuffered cursor), not the whole result at once."""
        conn = self._db()
        try:
            with conn.cursor(pymysql.cursors.SSCursor if streamed else None) as cursor:
                self._set_timeout(cursor, timeout_s)
                cursor.execute("START TRANSACTION READ ONLY")
                return work(cursor)
        except pymysql.MySQLError as exc:
            raise self._error(exc, timeout_s) from None
        finally:
            if self._conn is not None and self._conn.open:
                try:
                    self._conn.rollback()
                except pymysql.MySQLError:
                    self._drop()

    def _fetch(self, queries: list[tuple[str, dict[str, Any] | None]]) -> list[list[tuple[Any, ...]]]:
        def work(cursor: Any) -> list[list[tuple[Any, ...]]]:
            out = []
            for sql, params in queries:
                cursor.execute(sql, params)
                out.append(list(cursor.fetchall()))
            return out

        result: list[list[tuple[Any, ...]]] = self._unit(work, self.config.statement_timeout_s)
        return result

    # ---- catalog -------------------------------------------------------------------------------------------

    def _schemas(self, found: Sequence[str]) -> list[str]:
        database = self._arguments.get("database")
        if database and not self.config.schemas.include:
            return [name for name in found if name == database]
        return [name for name in found if name.lower() not in SYSTEM_SCHEMAS
                and schema_selected(name, self.config.schemas)]

    def read_catalog(self) -> CatalogSnapshot:
        (found,) = self._fetch([(_SCHEMAS_SQL, None)])
        schemas = self._schemas([str(row[0]) for row in found])
        if not schemas:
            return CatalogSnapshot(connection=self.connection, driver=self.name)
        where = {"schemas": schemas}
        tables, columns, keys = self._fetch([(_TABLES_SQL, where), (_COLUMNS_SQL, where), (_KEYS_SQL, where)])
        by_table: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        for schema, table, *rest in columns:
            by_table.setdefault((schema, table), []).append(tuple(rest))
        primary: dict[tuple[str, str], list[str]] = {}
        grouped: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
        for schema, table, constraint, column, _position, ref_schema, ref_table, ref_column in keys:
            if ref_table is None:
                primary.setdefault((schema, table), []).append(column)
            else:
                grouped.setdefault((schema, table, constraint), []).append((column, ref_schema, ref_table,
                                                                            ref_column))
        foreign: dict[tuple[str, str], list[ForeignKey]] = {}
        for (schema, table, constraint), rows in grouped.items():
            foreign.setdefault((schema, table), []).append(ForeignKey(
                name=constraint, columns=tuple(row[0] for row in rows), refDb=rows[0][1], refTable=rows[0][2],
                refColumns=tuple(row[3] for row in rows)))
        built = []
        for schema, table, kind, estimate, comment in tables:
            key = (schema, table)
            pk = set(primary.get(key, ()))
            fk_columns = {name for fk in foreign.get(key, []) for name in fk.columns}
            table_columns = tuple(
                build_column(name, int(ordinal), str(native), self.dialect, nullable=nullable == "YES",
                             default=None if default in (None, "NULL") else str(default), primary_key=name in pk,
                             is_fk=name in fk_columns, comment=note or None)
                for name, ordinal, default, nullable, native, note in by_table.get(key, []))
            table_kind = _KINDS.get(str(kind), "table")
            built.append(Table(db=schema, name=table, kind=table_kind,
                               comment=(comment or None) if table_kind != "view" else None,
                               estimatedRows=int(estimate) if estimate is not None and table_kind == "table"
                               else None,
                               columns=table_columns, foreignKeys=tuple(foreign.get(key, []))))
        return CatalogSnapshot(connection=self.connection, driver=self.name, tables=tuple(built))

    # ---- samples and queries -------------------------------------------------------------------------------

    def sample(self, tables: Sequence[Table]) -> list[ColumnSample]:
        policy = self.config.sample_values

        def run(table: Table, columns: list[Column]) -> list[tuple[Any, ...]]:
            sql = sample_sql(f"{quote(table.db)}.{quote(table.name)}", columns, policy, materialized=False)
            (rows,) = self._fetch([(sqlglot.transpile(sql, read="postgres", write="mysql")[0], None)])
            return rows

        return sample_tables(tables, policy, self.dialect, run)

    def execute(self, sql: str, *, limit: int, timeout_s: float,
                shown: Shown = DEFAULT_SHOWN) -> QueryResult:
        started = time.perf_counter()

        def work(cursor: Any) -> tuple[list[Any], list[int | None], types.ReadRows]:
            cursor.execute(sql)
            description = list(cursor.description or [])
            fields = getattr(getattr(cursor, "_result", None), "fields", None) or []  # PyMySQL's column metadata
            charsets = [getattr(field, "charsetnr", None) for field in fields] or [None] * len(description)
            # rows as they come, reading stopped once they outweigh the answer (ADR 0053); closing the cursor
            # reads past the rest of the (limit + 1 rows) result without keeping it
            read = types.read_rows(types.in_chunks(cursor.fetchmany), limit, shown) if description \
                else types.ReadRows([], unread=False)
            return description, charsets, read

        description, charsets, read = self._unit(work, timeout_s, streamed=True)
        columns = [{"name": str(item[0]), "type": type_name(int(item[1]), charset)}
                   for item, charset in zip(description, charsets, strict=True)]
        converters = [_converter(int(item[1]), int(item[3] or 0)) for item in description]
        return query_result(columns, read.rows, limit, started, converters=converters, shown=shown,
                            unread=read.unread)
