"""Noise filters, service-account rules, orchestrator markers and the historicSql config block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from packs.historic_sql.config import HistoricSqlConfig, ServiceAccountRule
from packs.historic_sql.filters import (
    SERVICE_ACCOUNT,
    AccountRules,
    apply_filters,
    is_system_table,
    iso,
    orchestrator_markers,
    parse_time,
)
from packs.historic_sql.models import AggregatedTemplate, TemplateStats
from packs.historic_sql.normalize import Normalizer
from packs.historic_sql.readers.logfile import read_logfile

NOW = datetime(2026, 5, 11, 12, 0, tzinfo=UTC)


def template(sql: str, *, dialect: str = "postgres", executions: int = 10, error_rate: float = 0.0,
             last_seen: datetime | None = NOW, markers: tuple[str, ...] = ()) -> AggregatedTemplate:
    normalized = Normalizer(dialect).normalize(sql)
    return AggregatedTemplate(templateId=normalized.template_id, canonicalSql=normalized.canonical_sql, dialect=dialect,
                              stats=TemplateStats(executions=executions, errorRate=error_rate, lastSeen=iso(last_seen)),
                              markers=list(markers))


def config(**filters: object) -> HistoricSqlConfig:
    return HistoricSqlConfig.model_validate({"enabled": True, "filters": filters})


def reason_for(item: AggregatedTemplate, cfg: HistoricSqlConfig | None = None) -> str | None:
    outcome = apply_filters([item], cfg or config(), now=NOW)
    return next(iter(outcome.dropped), None) if not outcome.kept else None


# ---- config ----------------------------------------------------------------------------------------------------


def test_config_defaults_and_camel_case_keys() -> None:
    cfg = HistoricSqlConfig.model_validate({"enabled": True, "windowDays": 30, "minExecutions": 2,
                                            "filters": {"serviceAccounts": [{"pattern": "^etl-"}],
                                                        "orchestrators": {"dbt": "exclude"}, "maxErrorRate": 0.8},
                                            "redactionPatterns": ["password"], "staleArchiveAfterDays": 10})
    assert cfg.filters.serviceAccounts == [ServiceAccountRule(pattern="^etl-", mode="exclude")]
    assert cfg.filters.orchestrators.modes()["dbt"] == "exclude"
    assert cfg.filters.orchestrators.modes()["looker"] == "mark-only"
    defaults = HistoricSqlConfig()
    assert (defaults.enabled, defaults.windowDays, defaults.minExecutions, defaults.concurrency,
            defaults.filters.maxErrorRate) == (False, 90, 5, 12, 0.5)


@pytest.mark.parametrize("data", [
    {"windowDay": 30},
    {"filters": {"serviceAccount": []}},
    {"filters": {"orchestrators": {"dbtt": "exclude"}}},
    {"filters": {"serviceAccounts": [{"pattern": "x", "mode": "drop"}]}},
    {"filters": {"maxErrorRate": 1.5}},
    {"minExecutions": 0},
], ids=["typo", "nested-typo", "unknown-orchestrator", "bad-mode", "rate-above-one", "zero-executions"])
def test_config_rejects_unknown_keys_and_bad_values(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        HistoricSqlConfig.model_validate(data)


def test_config_names_the_bad_regex() -> None:
    with pytest.raises(ValidationError, match=r"not a valid regular expression.*'\(unclosed'"):
        HistoricSqlConfig.model_validate({"redactionPatterns": ["(unclosed"]})
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        HistoricSqlConfig.model_validate({"filters": {"serviceAccounts": [{"pattern": "[a-"}]}})


# ---- noise -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "dialect", "reason"), [
    ("SET work_mem = '64MB'", "postgres", "noise"),
    ("SHOW search_path", "postgres", "noise"),
    ("BEGIN", "postgres", "noise"),
    ("COMMIT", "postgres", "noise"),
    ("EXPLAIN SELECT * FROM orders", "postgres", "noise"),
    ("DESCRIBE TABLE analytics.public.orders", "snowflake", "noise"),
    ("USE WAREHOUSE reporting", "snowflake", "noise"),
    ("CREATE TABLE scratch (a int)", "postgres", "ddl"),
    ("DROP TABLE scratch", "postgres", "ddl"),
    ("CALL refresh_rollups()", "postgres", "non-analytical"),
    ("SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'r'", "postgres", "system-catalog"),
    ("SELECT * FROM pg_stat_activity", "postgres", "system-catalog"),
    ("SELECT table_name FROM information_schema.tables", "postgres", "system-catalog"),
    ("SELECT name FROM sqlite_master WHERE type = 'table'", "sqlite", "system-catalog"),
    ("SELECT * FROM duckdb_tables()", "duckdb", "system-catalog"),
    ("SELECT * FROM snowflake.account_usage.query_history", "snowflake", "system-catalog"),
    ("SELECT * FROM `acme.region-us.INFORMATION_SCHEMA.JOBS`", "bigquery", "system-catalog"),
    ("SELECT 1", "postgres", "trivial-probe"),
    ("SELECT version()", "postgres", "trivial-probe"),
    ("SELECT now()", "postgres", "trivial-probe"),
    ("SELECT CURRENT_VERSION()", "snowflake", "trivial-probe"),
    ("SELECT pg_stat_statements_reset()", "postgres", "trivial-probe"),
], ids=lambda value: value if isinstance(value, str) and " " not in value else None)
def test_noise_is_dropped_with_its_reason(sql: str, dialect: str, reason: str) -> None:
    assert reason_for(template(sql, dialect=dialect)) == reason


@pytest.mark.parametrize("sql", [
    "SELECT region, SUM(amount) FROM sales.orders GROUP BY region",
    "INSERT INTO rollups SELECT day, COUNT(*) FROM events GROUP BY day",
    "CREATE TABLE marts.fct AS SELECT * FROM staging.orders",
    "SELECT o.*, c.relname FROM orders o JOIN pg_catalog.pg_class c ON true",  # one real table is enough
])
def test_analytical_statements_stay(sql: str) -> None:
    assert reason_for(template(sql)) is None


def test_trivial_probes_can_be_kept() -> None:
    assert reason_for(template("SELECT 1"), config(dropTrivialProbes=False)) is None


def test_thresholds_minimum_executions_error_rate_and_window() -> None:
    assert reason_for(template("SELECT * FROM t", executions=4)) == "min-executions"
    assert reason_for(template("SELECT * FROM t", executions=5)) is None
    assert reason_for(template("SELECT * FROM t", error_rate=0.51)) == "mostly-failing"
    assert reason_for(template("SELECT * FROM t", error_rate=0.5)) is None
    assert reason_for(template("SELECT * FROM t", error_rate=0.9), config(maxErrorRate=0.95)) is None
    assert reason_for(template("SELECT * FROM t", last_seen=NOW - timedelta(days=91))) == "outside-window"
    assert reason_for(template("SELECT * FROM t", last_seen=NOW - timedelta(days=89))) is None
    assert reason_for(template("SELECT * FROM t", last_seen=None)) is None  # pg_stat_statements: unknown


def test_kept_templates_are_sorted_and_the_summary_counts_reasons() -> None:
    items = [template("SELECT a FROM t", executions=6), template("SELECT b FROM t", executions=60),
             template("SHOW x"), template("SET x = 1"), template("SELECT 1")]
    outcome = apply_filters(items, config(), now=NOW)
    assert [item.stats.executions for item in outcome.kept] == [60, 6]
    assert outcome.dropped == {"noise": 2, "trivial-probe": 1}
    finding = outcome.finding()
    assert finding is not None and finding.code == "filtered" and finding.severity == "info"
    assert "kept 2 templates, dropped 3" in finding.message and "2 noise" in finding.message


def test_is_system_table() -> None:
    assert is_system_table("pg_catalog.pg_class") and is_system_table("pg_stat_statements")
    assert is_system_table("acme.region-eu.information_schema.jobs_by_project")
    assert is_system_table("snowflake.account_usage.query_history") and is_system_table("duckdb_columns()")
    assert not is_system_table("public.orders") and not is_system_table("sales.page_views")


# ---- orchestrators ---------------------------------------------------------------------------------------------

DBT = '/* {"app": "dbt", "dbt_version": "1.8.2", "node_id": "model.acme.orders"} */ SELECT * FROM staging.orders'
METABASE = "-- Metabase:: userID: 4 queryType: MBQL queryHash: 9a1b\nSELECT COUNT(*) FROM public.orders"
LOOKER = ("SELECT orders.status FROM public.orders AS orders GROUP BY 1 "
          "-- Looker Query Context '{\"user_id\":12,\"history_slug\":\"8a1\",\"instance_slug\":\"c0ffee\"}'")


@pytest.mark.parametrize(("sql", "expected"), [
    (DBT, {"dbt"}), (METABASE, {"metabase"}), (LOOKER, {"looker"}),
    ("SELECT * FROM LOOKER_SCRATCH.LR$ABC12_orders", {"looker"}),
    ("/* Username: ana@acme.com, Query ID: 311, Queue: queries, Job ID: 9, Query Hash: f00, Scheduled: False */ "
     "SELECT 1 FROM t", {"redash"}),
    ('-- Hex query metadata: {"project_id": "p1", "cell_id": "c2"}\nSELECT * FROM t', {"hex"}),
    ('SELECT * FROM (SELECT a FROM t) "Custom SQL Query"', {"tableau"}),
    ("SELECT * FROM public.dbt_runs WHERE app = 'dbt'", set()),
    ("SELECT * FROM looker_events", set()),
])
def test_orchestrator_markers(sql: str, expected: set[str]) -> None:
    assert orchestrator_markers(sql) == expected


def test_orchestrator_modes() -> None:
    dbt = template(DBT, markers=("dbt",))
    assert apply_filters([dbt], config(), now=NOW).kept[0].markers == ["dbt"]  # mark-only by default
    excluded = apply_filters([dbt], config(orchestrators={"dbt": "exclude"}), now=NOW)
    assert excluded.kept == [] and excluded.dropped == {"orchestrator:dbt": 1}
    included = apply_filters([dbt], config(orchestrators={"dbt": "include"}), now=NOW)
    assert included.kept[0].markers == []
    other = apply_filters([template(METABASE, markers=("metabase", SERVICE_ACCOUNT))],
                          config(orchestrators={"dbt": "exclude"}), now=NOW)
    assert other.kept[0].markers == ["metabase", SERVICE_ACCOUNT]


# ---- service accounts ------------------------------------------------------------------------------------------


def test_account_rules_first_match_wins_case_insensitively() -> None:
    rules = AccountRules([ServiceAccountRule(pattern="^svc-bi@", mode="include"),
                          ServiceAccountRule(pattern=r"^(svc|etl)-", mode="exclude"),
                          ServiceAccountRule(pattern=r"bot\b", mode="mark-only")])
    assert rules.decide("svc-bi@acme.iam") == "include"
    assert rules.decide("SVC-loader@acme.iam") == "exclude"
    assert rules.decide("etl-nightly") == "exclude"
    assert rules.decide("slack-Bot") == "mark-only"
    assert rules.decide("ana@acme.com") is None
    assert rules.decide(None) is None and AccountRules([]).decide("etl-x") is None


def _log(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(row) for row in rows))
    return path


@pytest.mark.parametrize(("mode", "executions", "users", "markers"), [
    ("exclude", 3, ["ana"], []),
    ("mark-only", 8, ["etl-loader", "ana"], [SERVICE_ACCOUNT]),
    ("include", 8, ["etl-loader", "ana"], []),
])
def test_service_account_modes_apply_per_execution(tmp_path: Path, mode: str, executions: int, users: list[str],
                                                   markers: list[str]) -> None:
    rows: list[dict[str, object]] = [{"sql": f"SELECT * FROM orders WHERE id = {n}", "user": "etl-loader"}
                                     for n in range(5)]
    rows += [{"sql": f"SELECT * FROM orders WHERE id = {n}", "user": "ana"} for n in range(3)]
    cfg = HistoricSqlConfig.model_validate({"minExecutions": 1, "filters": {
        "serviceAccounts": [{"pattern": "^etl-", "mode": mode}]}})
    result = read_logfile(_log(tmp_path, rows), cfg, dialect="postgres", now=NOW)
    (only,) = result.templates
    assert only.stats.executions == executions and only.topUsers == users and only.markers == markers
    assert only.stats.distinctUsers == len(users)
    assert any(f.code == "service_accounts_excluded" for f in result.findings) == (mode == "exclude")


def test_include_overrides_a_broader_exclude(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [{"sql": "SELECT * FROM t", "user": user} for user in ("svc-bi", "svc-etl", "ana")]
    cfg = HistoricSqlConfig.model_validate({"minExecutions": 1, "filters": {"serviceAccounts": [
        {"pattern": "^svc-bi$", "mode": "include"}, {"pattern": "^svc-", "mode": "exclude"}]}})
    (only,) = read_logfile(_log(tmp_path, rows), cfg, dialect="postgres", now=NOW).templates
    assert sorted(only.topUsers) == ["ana", "svc-bi"]


# ---- timestamps ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-05-01T10:00:00Z", "2026-05-01T10:00:00Z"),
    ("2026-05-01 10:00:00.250000+02:00", "2026-05-01T08:00:00.250000Z"),
    ("2026-05-01T10:00:00", "2026-05-01T10:00:00Z"),
    (1777629600, "2026-05-01T10:00:00Z"),
    (1777629600000, "2026-05-01T10:00:00Z"),
    ("1.7776296E9", "2026-05-01T10:00:00Z"),
    (datetime(2026, 5, 1, 3, 0, tzinfo=UTC) - timedelta(hours=-7), "2026-05-01T10:00:00Z"),
    ("yesterday", None), ("", None), (None, None), (float("nan"), None), (True, None),
])
def test_parse_time(value: object, expected: str | None) -> None:
    assert iso(parse_time(value)) == expected
