"""BigQuery: ``region-<r>.INFORMATION_SCHEMA.JOBS_BY_PROJECT`` aggregated in BigQuery, run through a runner.

The runner (``runner(sql) -> rows as dicts``) is the connection's driver (google-cloud-bigquery,
``khive[bigquery]``); here are only the SQL (``aggregation_sql``, shared shape in ``_warehouse.py``),
the parsing of its rows, and ``probe``: two small queries that show the catalog and the job history
are readable, or say what to grant. Executions are finished query jobs
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
    findings = retention_warnings(config, RETENTION_DAYS, f"BigQuery keeps {RETENTION_DAYS} days of jobs")
    sql = aggregation_sql(config, project=project, region=region, max_templates=max_templates)
    try:
        rows = runner(sql)
    except Exception as exc:  # the client library's errors are not ours to enumerate: report, never raise
        return ReaderResult([], [*findings, _failure(exc, project, region)])
    findings += truncation_warnings(rows, max_templates)
    normalizer = Normalizer("bigquery", config.redactionPatterns)
    return finish(templates_from_rows(rows, normalizer), findings, config, normalizer, now)


def _view(name: str, project: str | None, region: str) -> str:
    return exp.Table(this=exp.Identifier(this=f"INFORMATION_SCHEMA.{name}", quoted=False),
                     db=exp.to_identifier(f"region-{region.lower()}"),
                     catalog=exp.to_identifier(project) if project else None).sql("bigquery")


def probe_sql(config: HistoricSqlConfig, *, project: str | None = None, region: str = "us") -> dict[str, str]:
    """The probe's two queries: datasets the reader sees, and query jobs in the window (BigQuery SQL)."""
    return {
        "catalog": f"SELECT COUNT(*) AS datasets FROM {_view('SCHEMATA', project, region)}",
        "history": (f"SELECT COUNT(*) AS jobs, COUNT(DISTINCT user_email) AS users, MAX(creation_time) AS latest "
                    f"FROM {_view('JOBS_BY_PROJECT', project, region)} WHERE job_type = 'QUERY' AND creation_time "
                    f">= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL {int(config.windowDays)} DAY)"),
    }


def probe(runner: Runner, config: HistoricSqlConfig, *, project: str | None = None, region: str = "us"
          ) -> list[ProbeFinding]:
    """Whether the reader can see the datasets and the job history, each problem with what to grant."""
    queries = probe_sql(config, project=project, region=region)
    where = f"BigQuery project {project or '(the credentials default)'}, region {region}"
    findings = retention_warnings(config, RETENTION_DAYS, f"BigQuery keeps {RETENTION_DAYS} days of jobs")
    try:
        datasets = int(first_row(runner(queries["catalog"])).get("datasets") or 0)
    except Exception as exc:  # the driver's errors name the cause; a missing library or no access stops here
        fatal = client_failure(exc, where)
        if fatal is not None:
            return [*findings, fatal]
        findings.append(error("catalog_unreadable", f"listing the datasets of {where} failed: "
                                                    f"{' '.join(str(exc).split())}",
                              "grant the reader roles/bigquery.metadataViewer on the project (or on each dataset)"))
    else:
        if datasets:
            findings.append(info("catalog_visible", f"{datasets} datasets visible in {where}"))
        else:
            findings.append(warning("no_datasets_visible", f"the reader sees no dataset in {where}",
                                    "set region: to the location of the datasets, or grant the reader "
                                    "roles/bigquery.metadataViewer on the project"))
    try:
        found = first_row(runner(queries["history"]))
    except Exception as exc:
        return [*findings, client_failure(exc, where) or _failure(exc, project, region)]
    jobs, users = int(found.get("jobs") or 0), int(found.get("users") or 0)
    if not jobs:
        findings.append(warning("no_history", f"no query jobs in the last {config.windowDays} days in {where}",
                                "set region: to where the analysts' queries run (the datasets' location), or "
                                "widen historicSql.windowDays"))
    else:
        findings.append(info("history_readable", f"{jobs} query jobs by {users} users in the last "
                                                 f"{config.windowDays} days, the latest at {found.get('latest')}"))
    return findings


def _failure(exc: Exception, project: str | None, region: str) -> ProbeFinding:
    text = " ".join(str(exc).split())
    where = f"project {project or '(the client default)'}, region {region}"
    fatal = client_failure(exc, f"BigQuery {where}")
    if fatal is not None:
        return fatal
    if "denied" in text.lower() or "permission" in text.lower() or "listAll" in text:
        return error("insufficient_privilege", f"reading INFORMATION_SCHEMA.JOBS_BY_PROJECT in {where} was denied: "
                                               f"{text}",
                     "grant the reader roles/bigquery.resourceViewer (bigquery.jobs.listAll) on the project")
    if "not found" in text.lower():
        return error("query_failed", f"INFORMATION_SCHEMA.JOBS_BY_PROJECT not found in {where}: {text}",
                     "set the connection's region: to the location of its datasets (e.g. us, eu, europe-west1)")
    return error("query_failed", f"the job-history query failed in {where}: {text}",
                 "run the SQL from historic_sql.readers.bigquery.aggregation_sql in the console to see why")
