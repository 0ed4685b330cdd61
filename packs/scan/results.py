"""Result models of the scan pack's verbs, sql.execute and sql.validate included (ADR 0039)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from khive.results import Counts, OpenResult, Result, Rows, SavedFile, TableRef, UsageSummary


class Protection(Result):
    """What the last scan redacted or left out: counts only, never a value (ADR 0035)."""

    recorded: bool = Field(description="false for scans from before redaction was counted")
    redactions: Counts = Field(examples=[{"aws-access-key": 2}], description="redaction kind to count")
    secret_columns: int = Field(examples=[3])
    server_objects_left_out: int = Field(examples=[0])


class ConnectionEntry(Result):
    id: str = Field(examples=["warehouse"])
    driver: str = Field(examples=["postgres"])
    description: str = Field(examples=["the analytics warehouse"])
    last_scan: str | None = Field(examples=["20261201T093000Z"])
    tables: int | None = Field(examples=[42])
    protection: Protection | None


class ConnectionsResult(Result):
    connections: list[ConnectionEntry]


class Changes(Result):
    added: list[str] = Field(examples=[["sales.refunds"]])
    modified: list[str] = Field(examples=[[]])
    deleted: list[str] = Field(examples=[[]])
    unchanged: int = Field(examples=[18])


class DiffSummary(Result):
    tables: Changes
    columns: Changes


class ScanCounts(Result):
    tables: int = Field(examples=[17])
    views: int = Field(examples=[2])
    columns: int = Field(examples=[160])
    foreign_keys: int = Field(examples=[21])
    sampled_columns: int = Field(examples=[120])
    skipped_columns: int = Field(examples=[4])


class LeftOut(Result):
    object: str = Field(examples=["pg_catalog.pg_stat_statements"])
    reason: str = Field(examples=["extension object"])


class Excluded(Result):
    internal: list[LeftOut]
    internal_count: int = Field(examples=[0])
    filtered: int = Field(examples=[0])


class InferredCounts(Result):
    accepted: int = Field(examples=[12])
    review: int = Field(examples=[3])


class Timings(Result):
    catalog_ms: float = Field(examples=[120.5])
    samples_ms: float | None = None
    redact_ms: float | None = None
    inference_ms: float | None = None
    write_ms: float | None = None
    total_ms: float | None = Field(default=None, examples=[980.2])


class ScanReport(OpenResult):
    """A scan run's report (``raw-sources/<connection>/runs/<sync>/report.json``)."""

    sync_id: str = Field(examples=["20261201T093000Z"])
    run_id: str = Field(examples=["run-5f2c"])
    trigger: str = Field(examples=["cli"])
    connection: str = Field(examples=["warehouse"])
    driver: str = Field(examples=["postgres"])
    previous_sync_id: str | None = Field(examples=["20261130T093000Z"])
    unchanged_since: str | None = Field(default=None, examples=[None])
    counts: ScanCounts
    skipped_columns: Counts = Field(examples=[{"secret-name": 3, "sensitive-name": 1}],
                                    description="why a column was not sampled, to how many")
    redactions: Counts = Field(default_factory=dict, examples=[{}])
    excluded: Excluded | None = None
    diff_summary: DiffSummary
    warnings: list[JsonValue] = Field(examples=[[]])
    capability_gaps: list[JsonValue] = Field(examples=[[]])
    inferred_relationships: InferredCounts | None = None
    timings: Timings


class StatusResult(Result):
    latest: ScanReport
    history: list[str] = Field(examples=[["20261130T093000Z", "20261201T093000Z"]])


class TableRow(Result):
    id: str = Field(examples=["sales.orders"])
    db: str = Field(examples=["sales"])
    name: str = Field(examples=["orders"])
    kind: str | None = Field(examples=["table"])
    comment: str | None = Field(examples=["one row per order"])
    estimated_rows: int | None = Field(examples=[48210])
    columns: int = Field(examples=[12])
    score: float | None = Field(default=None, description="with query=: relevance (0..1)")


class TablesResult(Result):
    tables: list[TableRow]
    count: int = Field(examples=[1])


class Samples(OpenResult):
    distinct: int | None = Field(default=None, examples=[4])
    examples: list[JsonValue] = Field(default_factory=list, examples=[["paid", "refunded"]])
    frequencies: list[int] = Field(default_factory=list, examples=[[812, 40]])
    nulls: int | None = Field(default=None, examples=[0])
    sampled_rows: int | None = Field(default=None, examples=[1000])
    skipped: str | None = Field(default=None, examples=[None])
    values: list[JsonValue] = Field(default_factory=list, examples=[["paid", "refunded"]])


class ScanColumn(OpenResult):
    """One column as the scan saw it (with column=, also what the _schema shard adds: ``type``, ``description``)."""

    name: str = Field(examples=["status"])
    ordinal: int | None = Field(default=None, examples=[3])
    native_type: str | None = Field(default=None, examples=["text"])
    normalized_type: str | None = Field(default=None, examples=["string"])
    dimension_type: str | None = Field(default=None, examples=["categorical"])
    nullable: bool | None = None
    primary_key: bool | None = None
    comment: str | None = None
    default: str | None = None
    samples: Samples | None = None


class ForeignKey(OpenResult):
    name: str | None = Field(default=None, examples=["orders_customer_id_fkey"])
    columns: list[str] = Field(examples=[["customer_id"]])
    ref_catalog: str | None = Field(default=None, examples=["shop"])
    ref_db: str = Field(examples=["sales"])
    ref_table: str = Field(examples=["customers"])
    ref_columns: list[str] = Field(examples=[["id"]])


class IncomingKey(Result):
    from_: str = Field(alias="from", examples=["sales.order_items"])
    columns: list[str] = Field(examples=[["order_id"]])
    ref_columns: list[str] = Field(examples=[["id"]])


class Evidence(OpenResult):
    kind: str = Field(examples=["name-match"])
    weight: float = Field(examples=[0.4])
    detail: str = Field(examples=["order_items.order_id names orders.id"])


class Inferred(OpenResult):
    from_db: str = Field(examples=["sales"])
    from_table: str = Field(examples=["order_items"])
    from_columns: list[str] = Field(examples=[["order_id"]])
    to_db: str = Field(examples=["sales"])
    to_table: str = Field(examples=["orders"])
    to_columns: list[str] = Field(examples=[["id"]])
    confidence: float = Field(examples=[0.92])
    tier: str = Field(examples=["accepted"])
    evidence: list[Evidence]


class KeysBothWays(Result):
    out: list[ForeignKey]
    in_: list[IncomingKey] = Field(alias="in")


class InferredBothWays(Result):
    out: list[Inferred]
    in_: list[Inferred] = Field(alias="in")


class EntityHead(Result):
    connection_id: str = Field(examples=["warehouse"])
    sync_id: str = Field(examples=["20261201T093000Z"])
    id: str = Field(examples=["sales.orders"])
    table_ref: TableRef
    usage: UsageSummary | None


class TableEntity(EntityHead):
    kind: str | None = Field(examples=["table"])
    comment: str | None = Field(examples=["one row per order"])
    description: str | None = Field(examples=[None])
    estimated_rows: int | None = Field(examples=[48210])
    primary_key: list[str] = Field(examples=[["id"]])
    columns: list[ScanColumn]
    foreign_keys: KeysBothWays
    inferred_relationships: InferredBothWays


class ColumnEntity(EntityHead):
    """With column=: that column, the keys it is part of, and the keys that point at it."""

    column: ScanColumn
    foreign_keys: list[ForeignKey]
    referenced_by: list[IncomingKey]


class DiffResult(Result):
    from_: str | None = Field(alias="from", examples=["20261130T093000Z"])
    to: str = Field(examples=["20261201T093000Z"])
    diff_summary: DiffSummary


class ResultColumn(Result):
    name: str = Field(examples=["segment"])
    type: str = Field(examples=["VARCHAR"])


class Timeout(Result):
    seconds: float = Field(examples=[30.0])
    source: Literal["request", "connection"] = Field(examples=["connection"])


class Table(Result):
    """Rows a database returned, as the value rule encodes them (docs/values.md)."""

    columns: list[ResultColumn]
    rows: Rows = Field(examples=[[["consumer", "8211167.96"], ["enterprise", "350690.71"]]])
    row_count: int = Field(examples=[2])
    truncated: bool
    elapsed_ms: float = Field(examples=[13.5])
    timeout: Timeout
    notes: list[str] = Field(examples=[[]])
    saved_to: SavedFile | None = Field(default=None, description="with save_to=: the file written")
    rows_shown: int | None = Field(default=None, description="with save_to=: how many rows the preview holds")


class ExecuteResult(Table):
    connection_id: str = Field(examples=["warehouse"])
    sql: str = Field(examples=["SELECT segment, ... LIMIT 101"])
    tables: list[str] = Field(examples=[["sales.customers"]])


class ValidateResult(Result):
    allowed: bool
    reason: str = Field(examples=["one read-only SELECT"])
    statement_kind: str = Field(examples=["select"])
    code: str = Field(examples=["ok"], description="the gate's reason code (details.gate_code of sql_refused)")
    functions: list[str] = Field(examples=[[]])
    tables: list[str] = Field(examples=[["sales.orders"]])


ScanRunResult = ScanReport
EntityResult = TableEntity | ColumnEntity
