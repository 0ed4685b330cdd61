"""Snowflake: ``SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY`` aggregated in Snowflake, run through a runner.

The runner (``runner(sql) -> rows as dicts``, upper-case keys are fine) is the connection's driver
(snowflake-connector-python, ``khive[snowflake]``); ``probe`` checks the session's warehouse, the
catalog and the history view with three small queries and says what to grant. Executions are
finished queries (``execution_status`` SUCCESS, FAIL or INCIDENT) whose ``query_type`` reads
tables, started within ``windowDays``, that are not the SYSTEM user's, not statements the
client driver generated (``is_client_generated_statement``) and not reads of ACCOUNT_USAGE or
INFORMATION_SCHEMA. Templates are keyed by ``query_parameterized_hash`` (literals compared with
=, !=, <=, >= blanked; falls back to ``query_hash`` where NULL) and re-keyed by khive's template
id when the rows are read, which also merges what Snowflake keeps apart (IN lists of different
lengths). Accounts without those columns (behaviour bundle 2023_06) get a rerun keyed by the
text's MD5 and an info finding.

Per template: ``total_elapsed_time`` (ms, queueing and compilation included) with
``APPROX_PERCENTILE`` p50/p95, failures are anything but SUCCESS, rows are ``rows_produced``.
Reading the view needs IMPORTED PRIVILEGES on the SNOWFLAKE database (or the GOVERNANCE_VIEWER
database role); ACCOUNT_USAGE lags up to 45 minutes and keeps 365 days.
"""

from __future__ import annotations

from datetime import datetime

from sqlglot import exp

from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.models import ProbeFinding
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.readers._common import ReaderResult, error, finish, info, warning
from packs.historic_sql.readers._warehouse import (
    MAX_TEMPLATES,
    STATEMENT_TYPES,
    Runner,
    WarehouseSpec,
    client_failure,
    first_row,
    retention_warnings,
    templates_from_rows,
    truncation_warnings,
)
from packs.historic_sql.readers._warehouse import aggregation_sql as _aggregation_sql

RETENTION_DAYS = 365
PARAMETERIZED_KEY = "COALESCE(query_parameterized_hash, query_hash)"
TEXT_KEY = "MD5(query_text)"
_QUERY_TYPES = (*STATEMENT_TYPES, "MULTI_TABLE_INSERT")


def _regex_match(column: exp.Expr, pattern: str) -> exp.Expr:
    # REGEXP_LIKE is anchored at both ends in Snowflake; REGEXP_INSTR finds the pattern anywhere
    found = exp.func("REGEXP_INSTR", column, exp.Literal.string(pattern), exp.Literal.number(1),
                     exp.Literal.number(1), exp.Literal.number(0), exp.Literal.string("i"), dialect="snowflake")
    return exp.GT(this=found, expression=exp.Literal.number(0))


def spec(config: HistoricSqlConfig, *, key: str = PARAMETERIZED_KEY) -> WarehouseSpec:
    source = exp.Table(this=exp.to_identifier("QUERY_HISTORY"), db=exp.to_identifier("ACCOUNT_USAGE"),
                       catalog=exp.to_identifier("SNOWFLAKE"))
    types = ", ".join(f"'{kind}'" for kind in _QUERY_TYPES)
    return WarehouseSpec(
        dialect="snowflake",
        source=source,
        columns={
            "template_key": key,
            "query_text": "query_text",
            "user_name": "user_name",
            "executed_at": "start_time",
            "elapsed_ms": "total_elapsed_time",
            "failed": "execution_status <> 'SUCCESS'",
            "rows_produced": "rows_produced",
        },
        conditions=(
            f"start_time >= DATEADD(DAY, -{int(config.windowDays)}, CURRENT_TIMESTAMP())",
            f"query_type IN ({types})",
            "execution_status IN ('SUCCESS', 'FAIL', 'INCIDENT')",
            "query_text IS NOT NULL",
            "user_name <> 'SYSTEM'",
            "NOT COALESCE(is_client_generated_statement, FALSE)",
            "NOT query_text ILIKE '%ACCOUNT_USAGE.%'",
            "NOT query_text ILIKE '%INFORMATION_SCHEMA.%'",
        ),
        user_column="user_name",
        regex_match=_regex_match,
        percentile=lambda column, fraction: f"APPROX_PERCENTILE({column}, {fraction})",
        count_if="COUNT_IF",
        top_users="ARRAY_AGG(user_name) WITHIN GROUP (ORDER BY n DESC, user_name)",
    )


def aggregation_sql(config: HistoricSqlConfig, *, key: str = PARAMETERIZED_KEY,
                    max_templates: int = MAX_TEMPLATES) -> str:
    """The query this reader runs (Snowflake SQL); ``key=TEXT_KEY`` is the fallback without hash columns."""
    return _aggregation_sql(spec(config, key=key), config, max_templates=max_templates)


def read_snowflake(runner: Runner, config: HistoricSqlConfig, *, now: datetime | None = None,
                   max_templates: int = MAX_TEMPLATES) -> ReaderResult:
    findings = retention_warnings(config, RETENTION_DAYS, f"ACCOUNT_USAGE keeps {RETENTION_DAYS} days")
    try:
        try:
            rows = runner(aggregation_sql(config, max_templates=max_templates))
        except Exception as exc:  # the connector's errors are not ours to enumerate
            if "QUERY_PARAMETERIZED_HASH" not in str(exc).upper() and "QUERY_HASH" not in str(exc).upper():
                raise
            findings.append(_no_hash())
            rows = runner(aggregation_sql(config, key=TEXT_KEY, max_templates=max_templates))
    except Exception as exc:  # report, never raise
        return ReaderResult([], [*findings, _failure(exc)])
    findings += truncation_warnings(rows, max_templates)
    normalizer = Normalizer("snowflake", config.redactionPatterns)
    return finish(templates_from_rows(rows, normalizer), findings, config, normalizer, now)


def probe_sql(config: HistoricSqlConfig, *, database: str | None = None, hashed: bool = True) -> dict[str, str]:
    """The probe's queries (Snowflake SQL): the session, the catalog it sees, the history in the window."""
    tables = exp.Table(this=exp.to_identifier("TABLES"), db=exp.to_identifier("INFORMATION_SCHEMA"),
                       catalog=exp.to_identifier(database) if database else None).sql("snowflake")
    source = spec(config).source.sql("snowflake")
    hashes = "COUNT(query_parameterized_hash)" if hashed else "0"
    return {
        "session": "SELECT CURRENT_ROLE() AS ROLE, CURRENT_WAREHOUSE() AS WAREHOUSE, CURRENT_USER() AS USER_NAME",
        "catalog": f"SELECT COUNT(*) AS TABLES FROM {tables} WHERE TABLE_SCHEMA <> 'INFORMATION_SCHEMA'",
        "history": (f"SELECT COUNT(*) AS QUERIES, COUNT(DISTINCT user_name) AS USERS, MAX(start_time) AS LATEST, "
                    f"{hashes} AS HASHED FROM {source} "
                    f"WHERE start_time >= DATEADD(DAY, -{int(config.windowDays)}, CURRENT_TIMESTAMP())"),
    }


def probe(runner: Runner, config: HistoricSqlConfig, *, database: str | None = None) -> list[ProbeFinding]:
    """Whether the session has a warehouse, sees tables and can read QUERY_HISTORY, each problem with its fix."""
    queries = probe_sql(config, database=database)
    findings = retention_warnings(config, RETENTION_DAYS, f"ACCOUNT_USAGE keeps {RETENTION_DAYS} days")
    try:
        session = first_row(runner(queries["session"]))
    except Exception as exc:  # a missing library or a failed login stops here, with the driver's fix
        return [*findings, _failure(exc)]
    role = str(session.get("role") or "<reader role>")
    if not session.get("warehouse"):
        return [*findings, error("no_warehouse", f"the session (user {session.get('user_name')}, role {role}) has "
                                                 "no warehouse, so no query can run",
                                 "add warehouse=NAME to the connection's url, or ALTER USER <user> SET "
                                 "DEFAULT_WAREHOUSE = <name>; and GRANT USAGE ON WAREHOUSE <name> TO ROLE "
                                 f"{role};")]
    try:
        tables = int(first_row(runner(queries["catalog"])).get("tables") or 0)
    except Exception as exc:
        findings.append(error("catalog_unreadable", f"INFORMATION_SCHEMA.TABLES is not readable: "
                                                    f"{' '.join(str(exc).split())}",
                              f"GRANT USAGE ON DATABASE {database or '<database>'} TO ROLE {role};"))
    else:
        if tables:
            findings.append(info("catalog_visible", f"{tables} tables visible to role {role}"))
        else:
            findings.append(warning("no_tables_visible", f"role {role} sees no table in "
                                                         f"{database or 'the current database'}",
                                    f"GRANT USAGE ON DATABASE {database or '<database>'} TO ROLE {role}; GRANT USAGE "
                                    f"ON ALL SCHEMAS IN DATABASE {database or '<database>'} TO ROLE {role}; GRANT "
                                    f"REFERENCES ON ALL TABLES IN DATABASE {database or '<database>'} TO ROLE {role};"))
    try:
        try:
            history = first_row(runner(queries["history"]))
        except Exception as exc:
            if "QUERY_PARAMETERIZED_HASH" not in str(exc).upper():
                raise
            findings.append(_no_hash())
            history = first_row(runner(probe_sql(config, database=database, hashed=False)["history"]))
    except Exception as exc:
        return [*findings, _failure(exc, role)]
    count, users = int(history.get("queries") or 0), int(history.get("users") or 0)
    if not count:
        findings.append(warning("no_history", f"QUERY_HISTORY holds no query in the last {config.windowDays} days",
                                "ACCOUNT_USAGE lags up to 45 minutes behind; on a new account, run again later"))
    else:
        findings.append(info("history_readable", f"{count} queries by {users} users in the last {config.windowDays} "
                                                 f"days, the latest at {history.get('latest')}"))
    return findings


def _no_hash() -> ProbeFinding:
    return info("query_hash_unavailable",
                "QUERY_HISTORY has no query_parameterized_hash here: grouped by the exact text instead",
                "SELECT SYSTEM$ENABLE_BEHAVIOR_CHANGE_BUNDLE('2023_06');")


def _failure(exc: Exception, role: str = "<reader role>") -> ProbeFinding:
    fatal = client_failure(exc, "Snowflake")
    if fatal is not None:
        return fatal
    text = " ".join(str(exc).split())
    if "not authorized" in text.lower() or "does not exist" in text.lower() or "insufficient" in text.lower():
        return error("insufficient_privilege", f"SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY is not readable: {text}",
                     f"GRANT IMPORTED PRIVILEGES ON DATABASE SNOWFLAKE TO ROLE {role};  -- or "
                     f"GRANT DATABASE ROLE SNOWFLAKE.GOVERNANCE_VIEWER TO ROLE {role};")
    return error("query_failed", f"the query-history query failed: {text}",
                 "run the SQL from historic_sql.readers.snowflake.aggregation_sql in a worksheet to see why")
