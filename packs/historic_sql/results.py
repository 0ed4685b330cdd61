"""Result models of the historic_sql pack's verbs (ADR 0039).

The ingest's own measurements (``parseStats``, ``normalizeStats``, ``readStats``) are records: their fields
follow the pipeline's caches and change with them, so they are documented as open objects, camelCase.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from khive.results import Counts, Finding, Record, Result, UsageSummary


class IngestCounts(Result):
    templates: int = Field(examples=[2140])
    parsed: int = Field(examples=[2100])
    parse_failures: int = Field(examples=[40])
    zero_table_templates: int = Field(default=0, examples=[12])
    tables: int = Field(examples=[19])
    table_sets: int = Field(examples=[31])


class Window(Result):
    start: str | None = Field(examples=["2026-11-01T00:00:00+00:00"])
    end: str | None = Field(examples=["2026-12-01T00:00:00+00:00"])


class PatternPages(Result):
    slugs: list[str] = Field(default_factory=list, examples=[["orders-by-customer"]])
    written: list[str] = Field(default_factory=list, examples=[["wiki/global/historic-sql/orders-by-customer.md"]])
    stale: list[str] = Field(default_factory=list, examples=[[]])
    archived: list[str] = Field(default_factory=list, examples=[[]])
    pending: bool | None = Field(default=None, description="the patterns unit is not digested yet")


class Projection(Result):
    """What the digests were merged into: schema shards, semantic-layer sources, pattern pages."""

    shards: list[str] = Field(examples=[["_schema/shop/sales/orders.json"]])
    sources: list[str] = Field(examples=[["semantic-layer/shop/orders.yaml"]])
    patterns: PatternPages
    unchanged_skipped: int = Field(examples=[0])


class Timings(Result):
    read_ms: float = Field(examples=[210.4])
    parse_ms: float | None = None
    stage_ms: float | None = None
    digest_ms: float | None = None
    project_ms: float | None = None
    total_ms: float | None = Field(default=None, examples=[1840.2])


class IngestResult(Result):
    connection_id: str = Field(examples=["shop"])
    sync_id: str = Field(examples=["20261201T093000Z"])
    unchanged_since: str | None = Field(default=None, examples=[None], description="the history did not change")
    pruned_runs: list[str] | None = Field(default=None, examples=[None])
    provider: str = Field(examples=["deterministic"])
    counts: IngestCounts
    work_units: int = Field(examples=[20])
    digests: Counts = Field(examples=[{"deterministic": 20}], description="provider to units digested")
    rejected: list[Record] = Field(examples=[[]], description="units whose digest failed validation")
    pending_units: list[str] = Field(examples=[[]])
    vanished_tables: list[str] = Field(examples=[[]])
    projection: Projection
    warnings: list[str] = Field(examples=[[]])
    findings: list[Finding]
    parse_stats: Record = Field(examples=[{"templates": 2140, "parsed": 2100, "workers": 2}])
    normalize_stats: Record = Field(examples=[{}])
    read_stats: Record = Field(examples=[{}])
    redactions: Counts = Field(examples=[{"secret-assignment": 1}], description="redaction kind to templates")
    timings: Timings


class StatusResult(Result):
    connection_id: str = Field(examples=["shop"])
    sync_id: str | None = Field(examples=["20261201T093000Z"])
    dialect: str | None = Field(examples=["duckdb"])
    window: Window | None
    counts: IngestCounts | None
    parse_stats: Record | None = Field(examples=[{"templates": 2140, "parsed": 2100}])
    reader_findings: list[Finding] | None
    unknown_tables: Counts | None = Field(examples=[{"tmp_orders": 3}],
                                          description="tables the catalog lacks, to how many templates name them")
    warnings: list[str] = Field(examples=[[]])
    pending_units: list[str] = Field(examples=[[]])
    history: list[str] = Field(examples=[["20261201T093000Z"]])


class Unit(Result):
    unit: str = Field(examples=["shop/table/sales.orders@5c1f2a9b"])
    kind: Literal["usage", "patterns"] = Field(examples=["usage"])
    target: str = Field(examples=["sales.orders"])
    connection: str = Field(examples=["shop"])
    input: Record = Field(description="what to digest: the staged bands, templates and catalog of the target")
    output_schema: Record = Field(description="the JSON schema historic_sql.submit checks the output against")
    instructions: str = Field(examples=["Summarise how this table is used ..."])


class UnitsResult(Result):
    units: list[Unit]
    total: int = Field(examples=[1])
    next: str | None = Field(examples=["historic_sql.submit(unit=<unit>, output={...matching outputSchema...})"])


class SubmitResult(Result):
    unit: str = Field(examples=["shop/table/sales.orders@5c1f2a9b"])
    stored: bool
    projection: Projection
    pending_units: int = Field(examples=[19])


class DigestResult(Result):
    connection_id: str = Field(examples=["shop"])
    sync_id: str = Field(examples=["20261201T093000Z"])
    work_units: int = Field(examples=[20])
    digests: Counts = Field(examples=[{"sampling": 20}])
    rejected: list[Record] = Field(examples=[[]])
    pending_units: list[str] = Field(examples=[[]])
    projection: Projection


class Stats(Result):
    executions_bucket: str = Field(examples=["100-999"])
    distinct_users_bucket: str = Field(examples=["2-5"])
    error_rate_bucket: str | None = Field(default=None, examples=["<1%"])
    p95_runtime_bucket: str | None = Field(default=None, examples=["<1s"])
    recency_bucket: str | None = Field(default=None, examples=["current"],
                                       description="how long before the history's newest query it was last run")
    workload_tier: str | None = Field(default=None, examples=["high"],
                                      description="executions against the connection's busiest table")


class Totals(Result):
    executions: int = Field(examples=[412])
    templates: int = Field(examples=[31])
    distinct_users: int = Field(examples=[4])
    last_seen: str | None = Field(default=None, examples=["2026-11-24T10:00:00Z"])


class ObservedJoin(Result):
    with_table: str = Field(examples=["sales.customers"])
    on: list[list[str]] = Field(examples=[[["orders.customer_id", "customers.id"]]])
    freq: str = Field(examples=["100-999"])


class TopTemplate(Result):
    id: str = Field(examples=["t-5c1f2a9b"])
    canonical_sql: str = Field(examples=["SELECT status, count(*) FROM sales.orders GROUP BY 1"])
    executions_bucket: str = Field(examples=["100-999"])
    distinct_users_bucket: str = Field(examples=["2-5"])
    top_users: list[str] = Field(examples=[["ann"]])


class UsageResult(Result):
    connection_id: str = Field(examples=["shop"])
    sync_id: str = Field(examples=["20261201T093000Z"])
    table: str = Field(examples=["sales.orders"])
    usage: UsageSummary | None
    provider: str | None = Field(examples=["deterministic"])
    current: bool
    stats: Stats
    totals: Totals | None
    columns_by_clause: dict[str, list[list[str]]] = Field(
        examples=[{"where": [["status", "100-999"]]}], description="clause (select, where, groupBy, ...) to columns")
    observed_joins: list[ObservedJoin]
    top_templates: list[TopTemplate]


class PatternEntry(Result):
    slug: str = Field(examples=["orders-by-customer"])
    page: str = Field(examples=["historic-sql/orders-by-customer"])
    connection: str = Field(examples=["shop"])
    title: str | None = Field(examples=["Orders by customer"])
    summary: str | None = Field(examples=["Orders joined to customers, counted per segment."])
    tables_involved: list[str] = Field(examples=[["sales.orders", "sales.customers"]])
    executions: int | None = Field(examples=[412], description="templates reading exactly these tables")
    distinct_users: int | None = Field(examples=[3])
    frequency_tier: str | None = Field(examples=["high"], description="absolute, or within the workload")
    templates: int = Field(examples=[4])
    sl_refs: list[str] = Field(examples=[["orders"]])
    stale_since: str | None = Field(examples=[None])
    archived: bool


class PatternsResult(Result):
    patterns: list[PatternEntry]
    count: int = Field(examples=[1])


class ProbeResult(Result):
    connection_id: str = Field(examples=["warehouse"])
    driver: str = Field(examples=["postgres"])
    status: Literal["ok", "warning", "error"] = Field(examples=["ok"])
    findings: list[Finding]
