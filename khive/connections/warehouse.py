"""What the BigQuery and Snowflake drivers share: SQL that runs through the vendor's client library.

A ``WarehouseDriver`` subclass provides the catalog SQL and its parsing (``catalog_queries``,
``parse_catalog``); the SQL runs through a ``WarehouseSession``, the one object that imports the
client library (google-cloud-bigquery, snowflake-connector-python: the optional extras
``khive[bigquery]``, ``khive[snowflake]``), opened on first use. Without the library every call
fails fast with ``driver_unavailable`` and the ``pip install`` that fixes it.

A ``runner(sql) -> rows as dicts`` can be injected instead of the session (tests replaying recorded
catalog results). Sessions map their library's errors to khive's codes (``connection_failed``,
``permission_denied``, ``statement_timeout``, ``query_failed``) and return result values by the
value rule (khive/values.py) through per-column converters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlglot

from khive.connections.catalog import Column, ColumnSample, Table
from khive.connections.config import ConnectionConfig
from khive.connections.driver import QueryResult
from khive.connections.types import query_result, quote, sample_percent, sample_sql, sample_tables
from khive.errors import KhiveError
from khive.values import DEFAULT_SHOWN, Converter, Shown

Runner = Callable[[str], list[dict[str, Any]]]
_VALUE_TYPES: dict[type, str] = {bool: "BOOLEAN", int: "INTEGER", float: "FLOAT", str: "STRING", bytes: "BYTES"}


@dataclass(frozen=True)
class Fetched:
    """One statement's result as a session returns it: column names and types, rows of the library's
    Python values (at most the limit asked for plus one), and a converter per column (None: the value rule's
    default for the Python value)."""

    columns: list[dict[str, str]]
    rows: Sequence[Sequence[Any]]
    converters: list[Converter | None] = field(default_factory=list)


class WarehouseSession(Protocol):
    def rows(self, sql: str, timeout_s: float) -> list[dict[str, Any]]:
        """Every row of one statement as ``{column: value}`` (catalog, samples, query history)."""
        ...

    def fetch(self, sql: str, *, limit: int, timeout_s: float) -> Fetched:
        """At most ``limit + 1`` rows of one statement, with the columns' types."""
        ...

    def close(self) -> None: ...


class WarehouseDriver:
    """A driver whose SQL runs in a warehouse through its vendor's client library.

    Read-only: the statement passed khive's gate before it reaches here (one read-only statement);
    the sessions add what the service offers (BigQuery: a job timeout, no session state; Snowflake:
    one statement per request, a statement timeout, a transaction that is rolled back). The role in
    the credentials should still be a reader's: a warehouse has no read-only switch khive could hold.
    """

    name = "warehouse"
    dialect = "postgres"
    client_library = ""  # the PyPI name, for the message when it is missing
    extra = ""  # khive's optional extra that installs it

    def __init__(self, connection: str, config: ConnectionConfig, secrets: dict[str, str],
                 runner: Runner | None = None):
        self.connection = connection
        self.config = config
        self.secrets = secrets
        self.runner = runner
        self._session: WarehouseSession | None = None

    # ---- the session -----------------------------------------------------------------------------------

    def unavailable(self) -> KhiveError:
        return KhiveError(f"connection {self.connection!r}: the {self.name} driver needs {self.client_library}, "
                          f"which is not installed here (pip install 'khive[{self.extra}]')",
                          code="driver_unavailable",
                          details={"connection": self.connection, "driver": self.name,
                                   "fix": f"pip install 'khive[{self.extra}]'"})

    def open_session(self) -> WarehouseSession:
        """The client library's session; imports the library (ImportError when it is not installed)."""
        raise NotImplementedError

    def session(self) -> WarehouseSession:
        if self._session is None:
            try:
                self._session = self.open_session()
            except ImportError:
                raise self.unavailable() from None
        return self._session

    def _run(self, sql: str, timeout_s: float | None = None) -> list[dict[str, Any]]:
        if self.runner is not None:
            return self.runner(sql)
        return self.session().rows(sql, timeout_s or self.config.statement_timeout_s)

    def close(self) -> None:
        self.runner = None
        if self._session is not None:
            session, self._session = self._session, None
            session.close()

    # ---- samples and queries ---------------------------------------------------------------------------

    def sample_query(self, table: Table, columns: Sequence[Column]) -> str:
        """The sampling query (written for PostgreSQL, transpiled to the warehouse dialect by sqlglot)."""
        policy = self.config.sample_values
        percent = sample_percent(table, policy)
        clause = "" if percent is None else f" TABLESAMPLE SYSTEM ({percent:.6f})"
        source = ".".join(quote(part) for part in (table.catalog, table.db, table.name) if part)
        sql = sample_sql(source, columns, policy, sample_clause=clause, materialized=False)
        return sqlglot.transpile(sql, read="postgres", write=self.dialect)[0]

    def sample(self, tables: Sequence[Table]) -> list[ColumnSample]:
        def run(table: Table, columns: list[Column]) -> list[tuple[Any, ...]]:
            return [tuple(row.values()) for row in self._run(self.sample_query(table, columns))]

        return sample_tables(tables, self.config.sample_values, self.dialect, run)

    def execute(self, sql: str, *, limit: int, timeout_s: float,
                shown: Shown = DEFAULT_SHOWN) -> QueryResult:
        started = time.perf_counter()
        if self.runner is None:
            fetched = self.session().fetch(sql, limit=limit, timeout_s=timeout_s)
            return query_result(fetched.columns, fetched.rows, limit, started,
                                converters=fetched.converters or None, shown=shown)
        records = self.runner(sql)[: limit + 1]
        names = list(records[0]) if records else []
        rows = [[record.get(name) for name in names] for record in records]
        columns = [{"name": name, "type": next((_VALUE_TYPES.get(type(row[i]), type(row[i]).__name__.upper())
                                                for row in rows if row[i] is not None), "NULL")}
                   for i, name in enumerate(names)]
        return query_result(columns, rows, limit, started, shown=shown)
