"""The driver protocol: one small class per database engine, found through a registry.

Adding an engine (say MySQL) is one new module with a ``Driver`` class and one line in
``DRIVERS``; nothing else changes. Drivers are synchronous (verbs run them in a worker thread).
Verbs lease drivers from the connection's pool (``khive.connections.pool``); a driver class that
must not be kept open between leases says ``reusable = False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Generic, Protocol, Self, TypeVar

from khive.connections.catalog import CatalogSnapshot, ColumnSample, Table
from khive.connections.config import ConnectionConfig, DriverName
from khive.values import DEFAULT_SHOWN, Shown

# driver name -> "module:Class": a string, because the optional drivers' client libraries (PyMySQL, the
# BigQuery and Snowflake clients) must import only when a connection uses them. The names are DriverName's.
DRIVERS: dict[DriverName, str] = {
    "sqlite": "khive.connections.sqlite:SqliteDriver",
    "duckdb": "khive.connections.duckdb:DuckDbDriver",
    "postgres": "khive.connections.postgres:PostgresDriver",
    "mysql": "khive.connections.mysql:MySqlDriver",
    "bigquery": "khive.connections.bigquery:BigQueryDriver",
    "snowflake": "khive.connections.snowflake:SnowflakeDriver",
}


@dataclass(frozen=True)
class QueryResult:
    columns: list[dict[str, str]]  # [{"name": ..., "type": ...}]
    rows: list[list[Any]]
    truncated: bool
    row_count: int
    elapsed_ms: float = 0.0
    notes: list[str] = field(default_factory=list)


class Driver(Protocol):
    name: str  # "postgres"
    dialect: str  # sqlglot dialect name

    def read_catalog(self) -> CatalogSnapshot:
        """Tables, views, columns, keys, comments and row estimates in bulk queries (never per table)."""
        ...

    def sample(self, tables: Sequence[Table]) -> list[ColumnSample]:
        """Bounded sample values per column, honouring the connection's sample policy."""
        ...

    def execute(self, sql: str, *, limit: int, timeout_s: float, shown: Shown = DEFAULT_SHOWN) -> QueryResult:
        """Run one already-vetted read-only statement in a read-only session with a timeout; rows come back as
        JSON values by khive's value rule (khive/values.py), no more of them and of each value than ``shown``
        allows (``types.query_result``)."""
        ...

    def close(self) -> None: ...


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class HoldsConnection(Generic[C]):
    """The one connection a driver opens on first use; ``close()`` (or ``with``) releases it."""

    _conn: C | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connection_url(connection: str, config: ConnectionConfig, secrets: dict[str, str]) -> str:
    """The connection string a URL-configured driver opens (``secrets["url"]``); ConfigError when it is not set."""
    url = secrets.get("url")
    if not url:
        from khive.errors import ConfigError

        raise ConfigError(f"connection {connection!r}: no connection string ({config.url or 'url:'} is not set)")
    return url


def open_driver(connection: str, config: ConnectionConfig, *, secrets: dict[str, str]) -> Driver:
    """Instantiate the configured driver; ``secrets`` holds resolved env: references (e.g. the url)."""
    target = DRIVERS.get(config.driver)
    if target is None:
        from khive.errors import ConfigError

        raise ConfigError(f"connection {connection!r}: unknown driver {config.driver!r}; "
                          f"known drivers: {', '.join(sorted(DRIVERS))}")
    module_name, _, class_name = target.partition(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:  # an optional extra's client library (PyMySQL) is not installed
        from khive.errors import KhiveError

        raise KhiveError(f"connection {connection!r}: the {config.driver} driver needs {exc.name or 'a library'}, "
                         f"which is not installed here (pip install 'khive[{config.driver}]')",
                         code="driver_unavailable",
                         details={"connection": connection, "driver": config.driver,
                                  "fix": f"pip install 'khive[{config.driver}]'"}) from None
    driver_class = getattr(module, class_name)
    driver: Driver = driver_class(connection, config, secrets)
    return driver
