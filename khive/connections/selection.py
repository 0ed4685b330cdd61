"""Which catalog objects a scan reads: the warehouse's own tables, not the database server's (ADR 0035).

Two kinds of object are never scanned, sampled, bootstrapped or indexed:

* the server's internals: system schemas and catalogs (``pg_catalog``, ``information_schema``, ``pg_toast``,
  ``INFORMATION_SCHEMA``, SQLite's ``sqlite_*`` and virtual-table shadow tables, DuckDB's built-in views);
* objects that belong to an extension (PostgreSQL ``pg_depend`` with ``deptype = 'e'``): a plain
  ``CREATE EXTENSION pg_stat_statements`` puts a view of every role's statements, from every database, in
  ``public``, where a scan would otherwise sample it.

Drivers leave them out when they read the catalog, with the catalog's own facts (``pg_depend``,
``internal`` flags, ``pragma_table_list``) and say which they left out. ``internal_object`` is the same rule
by name alone, for what a scan recorded before this rule existed: readers of scan artifacts and shards
apply it, so an older run's ``public.pg_stat_statements`` is not bootstrapped, indexed or searched either.

Users choose among the rest with ``schemas:`` and ``tables:`` globs per connection.
"""

from __future__ import annotations

import fnmatch

from khive.connections.catalog import CatalogSnapshot, ExcludedObject, Table
from khive.connections.config import TableFilter

SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema"})
MYSQL_SYSTEM_SCHEMAS = frozenset({"mysql", "performance_schema", "sys"})
# Relations well-known extensions create, recognisable by name: statistics of every role's statements and of
# the server itself. The live rule (pg_depend) covers every extension; these names only catch older runs.
EXTENSION_RELATIONS = frozenset({
    "pg_stat_statements", "pg_stat_statements_info", "pg_stat_monitor", "pg_stat_monitor_info",
    "pg_stat_monitor_settings", "pg_buffercache", "pg_buffercache_summary", "pg_stat_kcache",
    "pg_stat_kcache_detail", "pg_wait_sampling_current", "pg_wait_sampling_history", "pg_wait_sampling_profile",
    "pg_qualstats", "pg_qualstats_all", "pg_qualstats_indexes", "pg_qualstats_pretty", "pg_stat_sql",
})


def internal_object(schema: str, name: str, *, catalog: str | None = None, driver: str | None = None) -> str | None:
    """Why ``schema.name`` is the server's own object, judged by name ("system", "extension"), or None."""
    folded_schema, folded = schema.lower(), name.lower()
    if folded_schema in SYSTEM_SCHEMAS or folded_schema.startswith(("pg_toast", "pg_temp_")):
        return "system"
    if driver == "snowflake" and (catalog or "").upper() == "SNOWFLAKE":
        return "system"  # the shared database of account metadata: ACCOUNT_USAGE.QUERY_HISTORY holds every statement
    if driver == "bigquery" and folded_schema.startswith("_"):
        return "system"  # hidden datasets: cached query results, script and session temporaries
    if driver == "mysql" and folded_schema in MYSQL_SYSTEM_SCHEMAS:
        return "system"  # performance_schema keeps every session's statement text (events_statements_*)
    if driver == "duckdb" and folded.startswith("duckdb_"):
        return "system"  # DuckDB's catalog views (its ``internal`` flag leaves them out already)
    if folded.startswith("sqlite_"):
        return "system"
    if folded in EXTENSION_RELATIONS:
        return "extension"
    return None


def table_selected(schema: str, name: str, tables: TableFilter) -> bool:
    """Include globs (empty = all) then exclude globs, each matched against ``schema.table`` and ``table``,
    case-insensitively (Snowflake upper-cases names)."""
    names = (f"{schema}.{name}".lower(), name.lower())

    def matches(globs: list[str]) -> bool:
        return any(fnmatch.fnmatchcase(candidate, glob.lower()) for glob in globs for candidate in names)

    if tables.include and not matches(tables.include):
        return False
    return not matches(tables.exclude)


def choose_tables(snapshot: CatalogSnapshot, tables: TableFilter) -> tuple[list[Table], list[ExcludedObject]]:
    """The tables a scan keeps, and what it leaves out: the driver's exclusions, objects ``internal_object``
    knows by name, and tables outside the connection's ``tables:`` globs."""
    kept: list[Table] = []
    excluded = list(snapshot.excluded)
    for table in snapshot.tables:
        reason = internal_object(table.db, table.name, catalog=table.catalog, driver=snapshot.driver)
        if reason is None and not table_selected(table.db, table.name, tables):
            reason = "tables filter"
        if reason is None:
            kept.append(table)
        else:
            excluded.append(ExcludedObject(db=table.db, name=table.name, reason=reason))
    return kept, excluded
