"""Query-history readers: one module per source, every one returning ``ReaderResult(templates, findings)``.

    postgres.read_postgres(dsn, config)              pg_stat_statements, after a privilege/setup probe
    bigquery.read_bigquery(runner, config, ...)      INFORMATION_SCHEMA.JOBS_BY_PROJECT, aggregated in BigQuery
    snowflake.read_snowflake(runner, config)         SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY, aggregated in Snowflake
    logfile.read_logfile(path, config, dialect=...)  a JSONL or CSV query log, aggregated here while streaming

Templates are keyed by khive's own normalized template id (``normalize.py``), not the engine's
query id, so the same query shape gets the same id from every source and engine ids that differ
only by IN-list length (PostgreSQL before 18, Snowflake's parameterized hash) merge. A reader
never raises for what an operator can fix: missing privileges, disabled tracking, a failing
warehouse query or malformed log lines come back as ``ProbeFinding``s with the fix.
"""

from packs.historic_sql.readers._common import ReaderResult

__all__ = ["ReaderResult"]
