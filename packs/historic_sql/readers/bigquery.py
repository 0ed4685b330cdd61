"""BigQuery: ``region-<r>.INFORMATION_SCHEMA.JOBS_BY_PROJECT`` aggregated in BigQuery, run by an injected runner.

The runner (``runner(sql) -> rows as dicts``) belongs to the composition root, which owns the
google-cloud-bigquery client and credentials; here are only the SQL (``aggregation_sql``, shared
shape in ``_warehouse.py``) and the parsing of its rows. Executions are finished query jobs
(``job_type = 'QUERY'``, ``state = 'DONE'``) whose ``statement_type`` reads tables, created within
``windowDays``, that do not read INFORMATION_SCHEMA. Templates are keyed by BigQuery's own
``query_info.query_hashes.normalized_literals`` (literals and comments ignored; the text's
MD5 where it is missing) and re-keyed by khive's template id when the rows are read.

Per template: elapsed ms is ``end_time - creation_time`` (what the caller waited, queueing
included, like Snowflake's ``total_elapsed_time``), with ``APPROX_QUANTILES(.., 100)`` percentiles;
failures are jobs with an ``error_result``; rows are the records the final ``Output`` stage wrote
(NULL for cache hits and tables under row-level security, which hide their stages). Reading the
view needs ``bigquery.jobs.listAll`` on the project (roles/bigquery.resourceViewer); BigQuery keeps
180 days of jobs.
"""

from __future__ import annotations

from datetime import datetime

from sqlglot import exp

from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.models import ProbeFinding
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.readers._common import ReaderResult, error, finish, warning
from packs.historic_sql.readers._warehouse import (
    MAX_TEMPLATES,
    STATEMENT_TYPES,
    Runner,
    WarehouseSpec,
    templates_from_rows,
)
from packs.historic_sql.readers._warehouse import aggregation_sql as _aggregation_sql

RETENTION_DAYS = 180


def _regex_match(column: exp.Expr, pattern: str) -> exp.Expr:
    return exp.RegexpLike(this=column, expression=exp.Literal.string(f"(?i){pattern}"))  # REGEXP_CONTAINS, RE2


def spec(config: HistoricSqlConfig, *, project: str | None = None, region: str = "us") -> WarehouseSpec:
    source = exp.Table(this=exp.Identifier(this="INFORMATION_SCHEMA.JOBS_BY_PROJECT", quoted=False),
                       db=exp.to_identifier(f"region-{region.lower()}"),
                       catalog=exp.to_identifier(project) if project else None)
    types = ", ".join(f"'{kind}'" for kind in STATEMENT_TYPES)
    return WarehouseSpec(
        dialect="bigquery",
        source=source,
        columns={
            "template_key": "COALESCE(query_info.query_hashes.normalized_literals, TO_HEX(MD5(query)))",
            "query_text": "query",
            "user_name": "user_email",
            "executed_at": "creation_time",
            "elapsed_ms": "TIMESTAMP_DIFF(end_time, creation_time, MILLISECOND)",
            "failed": "error_result IS NOT NULL",
            "rows_produced": "(SELECT SUM(stage.records_written) FROM UNNEST(job_stages) AS stage "
                             "WHERE ENDS_WITH(stage.name, ': Output'))",
        },
        conditions=(
            "job_type = 'QUERY'",
            "state = 'DONE'",
            f"statement_type IN ({types})",
            f"creation_time >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL {int(config.windowDays)} DAY)",
            "query IS NOT NULL",
            "NOT CONTAINS_SUBSTR(query, 'INFORMATION_SCHEMA')",
        ),
        user_column="user_email",
        regex_match=_regex_match,
        percentile=lambda column, fraction: f"APPROX_QUANTILES({column}, 100)[OFFSET({round(fraction * 100)})]",
        count_if="COUNTIF",
        top_users="ARRAY_AGG(user_name ORDER BY n DESC, user_name)",
    )


def aggregation_sql(config: HistoricSqlConfig, *, project: str | None = None, region: str = "us",
                    max_templates: int = MAX_TEMPLATES) -> str:
    """The one query this reader runs (BigQuery SQL)."""
    return _aggregation_sql(spec(config, project=project, region=region), config, max_templates=max_templates)


def read_bigquery(runner: Runner, config: HistoricSqlConfig, *, project: str | None = None, region: str = "us",
                  now: datetime | None = None, max_templates: int = MAX_TEMPLATES) -> ReaderResult:
    findings: list[ProbeFinding] = []
    if config.windowDays > RETENTION_DAYS:
        findings.append(warning("window_exceeds_retention",
                                f"windowDays is {config.windowDays} but BigQuery keeps {RETENTION_DAYS} days of jobs",
                                f"set historicSql.windowDays to {RETENTION_DAYS} or less"))
    sql = aggregation_sql(config, project=project, region=region, max_templates=max_templates)
    try:
        rows = runner(sql)
    except Exception as exc:  # the client library's errors are not ours to enumerate: report, never raise
        return ReaderResult([], [*findings, _failure(exc, project, region)])
    if len(rows) >= max_templates:
        findings.append(warning("result_truncated", f"the aggregation returned the cap of {max_templates} templates: "
                                                    "rarer templates were left out",
                                "raise historicSql.minExecutions or shorten windowDays"))
    normalizer = Normalizer("bigquery", config.redactionPatterns)
    return finish(templates_from_rows(rows, normalizer), findings, config, normalizer, now)


def _failure(exc: Exception, project: str | None, region: str) -> ProbeFinding:
    text = " ".join(str(exc).split())
    where = f"project {project or '(the client default)'}, region {region}"
    if "denied" in text.lower() or "permission" in text.lower() or "listAll" in text:
        return error("insufficient_privilege", f"reading INFORMATION_SCHEMA.JOBS_BY_PROJECT in {where} was denied: "
                                               f"{text}",
                     "grant the reader roles/bigquery.resourceViewer (bigquery.jobs.listAll) on the project")
    if "not found" in text.lower():
        return error("query_failed", f"INFORMATION_SCHEMA.JOBS_BY_PROJECT not found in {where}: {text}",
                     "set the connection's region: to the location of its datasets (e.g. us, eu, europe-west1)")
    return error("query_failed", f"the job-history query failed in {where}: {text}",
                 "run the SQL from historic_sql.readers.bigquery.aggregation_sql in the console to see why")
