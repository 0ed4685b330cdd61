"""Which reader a connection's history comes from, and the engine defaults that go with it.

    historicSql.queryLog set      the query-log file (any driver; the only source for sqlite and duckdb),
                                  its aggregate kept across runs in the project's ``.khive/`` (logcache.py)
    postgres                      pg_stat_statements of the database the connection's url names
    bigquery / snowflake          their job history views, run through the connection's driver
    mysql                         none read yet: a query-log file (performance_schema's digests are future work)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from khive.connections.config import ConnectionConfig
from khive.errors import ConfigError
from khive.project.store import inside
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.prime import Primer
from packs.historic_sql.readers import ReaderResult
from packs.historic_sql.readers._warehouse import Runner

if TYPE_CHECKING:
    from khive.services import Services
    from packs.historic_sql.readers.logcache import AggregateCache

DIALECTS = {"postgres": "postgres", "sqlite": "sqlite", "duckdb": "duckdb", "mysql": "mysql", "bigquery": "bigquery",
            "snowflake": "snowflake"}
SEARCH_PATHS = {"postgres": ("public",), "sqlite": ("main",), "duckdb": ("main",)}
MAX_ROWS = 60_000


def search_path(connection: ConnectionConfig, settings: HistoricSqlConfig) -> tuple[str, ...]:
    return tuple(settings.searchPath) or SEARCH_PATHS.get(connection.driver, ())


def query_log(runtime: Services, name: str, settings: HistoricSqlConfig) -> Path | None:
    if settings.queryLog is None:
        return None
    path = Path(settings.queryLog)
    # An absolute path is the operator's explicit choice in khive.yaml; a project path must stay in the project.
    return path if path.is_absolute() else inside(runtime.project, path)


def read_history(runtime: Services, name: str, settings: HistoricSqlConfig, *, primer: Primer | None = None,
                 log_cache: AggregateCache | None = None) -> ReaderResult:
    """The connection's history, read by its reader; a query log through ``primer`` (normalizing its texts
    in a pool) and ``log_cache`` (its aggregate from an earlier run, while the file is unchanged)."""
    connection = runtime.connection(name)
    dialect = DIALECTS[connection.driver]
    log = query_log(runtime, name, settings)
    if log is not None:
        from packs.historic_sql.readers.logfile import read_logfile

        return read_logfile(log, settings, dialect=dialect, log_format=settings.queryLogFormat, primer=primer,
                            cache=log_cache)
    if connection.driver == "postgres":
        from packs.historic_sql.readers.postgres import read_postgres

        return read_postgres(dsn(runtime, name, connection, settings), settings,
                             timeout_s=connection.statement_timeout_s)
    if connection.driver in ("bigquery", "snowflake"):
        return _warehouse(runtime, name, connection, settings)
    raise ConfigError(f"connection {name!r} ({connection.driver}): khive reads no query history from it; set "
                      f"connections.{name}.historicSql.queryLog to a JSONL or CSV query log",
                      details={"field": f"connections.{name}.historicSql.queryLog",
                               "fix": "queryLog: logs/queries.jsonl (sql, user, started_at, duration_ms, rows, error)"})


def dsn(runtime: Services, name: str, connection: ConnectionConfig, settings: HistoricSqlConfig) -> str:
    """The history reader's connection string: ``historicSql.url`` (a role allowed to read every role's
    statements) when set, else the connection's own url."""
    if settings.url:
        return runtime.secret(settings.url, field=f"connections.{name}.historicSql.url")
    return runtime.secret(connection.url or "", field=f"connections.{name}.url")


@contextmanager
def warehouse_runner(runtime: Services, name: str) -> Iterator[Runner]:
    """``runner(sql) -> rows as dicts`` on a driver leased from the connection's pool (BigQuery, Snowflake)."""
    connection = runtime.connection(name)
    with runtime.drivers.pool(name).lease(connection.statement_timeout_s) as lease:
        driver = lease.driver

        def runner(sql: str) -> list[dict[str, Any]]:
            result = driver.execute(sql, limit=MAX_ROWS, timeout_s=max(connection.statement_timeout_s, 120.0))
            names = [column["name"] for column in result.columns]
            return [dict(zip(names, row, strict=True)) for row in result.rows]

        yield runner


def _warehouse(runtime: Services, name: str, connection: ConnectionConfig, settings: HistoricSqlConfig
               ) -> ReaderResult:
    with warehouse_runner(runtime, name) as runner:
        if connection.driver == "bigquery":
            from packs.historic_sql.readers.bigquery import read_bigquery

            return read_bigquery(runner, settings, project=connection.project, region=connection.region or "us")
        from packs.historic_sql.readers.snowflake import read_snowflake

        return read_snowflake(runner, settings)
