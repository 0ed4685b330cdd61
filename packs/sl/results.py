"""Result models of the sl pack's verbs (ADR 0039)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from khive.results import Counts, OpenResult, Record, Result, Rows, SavedFile


class SourceSummary(Result):
    name: str = Field(examples=["orders"])
    connection_id: str = Field(examples=["warehouse"])
    table: str | None = Field(examples=["sales.orders"])
    description: str | None = Field(examples=["One row per order."])
    column_count: int = Field(examples=[12])
    measure_count: int = Field(examples=[5])
    join_count: int = Field(examples=[2])
    frequency_tier: str | None = Field(examples=["hot"])


class ListResult(Result):
    sources: list[SourceSummary]
    count: int = Field(examples=[1])
    errors: dict[str, str] = Field(examples=[{}], description="file path to why it did not load")


class SearchHit(SourceSummary):
    score: float = Field(examples=[0.71])
    snippet: str | None = Field(examples=["sum of **revenue** per order"])
    matches: list[str] = Field(examples=[["revenue"]], description="the source's measures and columns the query names")


class SearchResult(Result):
    hits: list[SearchHit]
    count: int = Field(examples=[1])


class Problem(Result):
    file: str = Field(examples=["semantic-layer/warehouse/orders.yaml"])
    line: int | None = Field(examples=[7])
    field: str | None = Field(examples=["measures[1].expr"])
    message: str = Field(examples=["unknown column totl"])
    fix: str = Field(examples=["did you mean total?"])
    severity: Literal["error", "info"] = Field(examples=["error"], description="info: kept, never invalidates")


class Backlink(Result):
    id: str = Field(examples=["wiki:sales/revenue-playbook"])
    relation: str = Field(examples=["sl_refs"])


class ReadResult(Result):
    name: str = Field(examples=["orders"])
    connection_id: str = Field(examples=["warehouse"])
    path: str = Field(examples=["semantic-layer/warehouse/orders.yaml"])
    format: str = Field(examples=["yaml"])
    yaml: str | None = Field(default=None, examples=["name: orders\ntable: sales.orders\n..."],
                             description="format=yaml: the file as written, comments kept")
    source: Record | None = Field(default=None, description="format=json: the source file's fields, as the file "
                                                             "names them")
    description: str | None = Field(examples=["One row per order."])
    problems: list[Problem]
    backlinks: list[Backlink]


class WriteResult(Result):
    name: str = Field(examples=["orders"])
    connection_id: str = Field(examples=["warehouse"])
    path: str = Field(examples=["semantic-layer/warehouse/orders.yaml"])
    created: bool
    changed: bool
    sha256: str = Field(examples=["5e1b...07"])
    commit_error: str | None = Field(examples=[None], description="git commit failed (the file is written)")


class ValidateResult(Result):
    valid: bool
    name: str | None = Field(examples=["orders"])
    path: str = Field(examples=["semantic-layer/warehouse/orders.yaml"])
    exists: bool
    problems: list[Problem]


class DictionaryHit(Result):
    connection_id: str = Field(examples=["warehouse"])
    table: str = Field(examples=["sales.orders"])
    column: str = Field(examples=["status"])
    value: JsonValue = Field(examples=["refunded"])
    matched_on: str = Field(examples=["exact"])
    frequency: int | None = Field(examples=[40])
    sampled_rows: int | None = Field(examples=[1000])
    complete: bool
    origin: str = Field(examples=["scan"])
    sources: list[str] = Field(examples=[["orders"]])


class Coverage(Result):
    sync_id: str | None = Field(examples=["20261201T093000Z"])
    from_: str = Field(alias="from", examples=["shards"])
    columns: int = Field(examples=[160])
    profiled: int = Field(examples=[120])
    skipped: int = Field(examples=[4])
    skipped_reasons: Counts = Field(examples=[{"sensitive-name": 4}])
    not_profiled: int = Field(examples=[36])


class MissReason(OpenResult):
    """Why a value may not have been found (``reason``), with what to do (``message``) and the columns concerned."""

    reason: str = Field(examples=["value_not_in_samples"])
    message: str = Field(examples=["value not seen in samples (samples are bounded: top-20 values per column)"])


class DictionaryResult(Result):
    query: str = Field(examples=["refunded"])
    hits: list[DictionaryHit]
    count: int = Field(examples=[1])
    coverage: dict[str, Coverage] = Field(
        examples=[{"warehouse": {"syncId": "20261201T093000Z", "from": "shards", "columns": 160, "profiled": 120,
                                 "skipped": 4, "skippedReasons": {"sensitive-name": 4}, "notProfiled": 36}}],
        description="connection to what its latest scan profiled")
    reasons: list[MissReason] | None = Field(default=None, description="only when nothing was found")


class BootstrapResult(Result):
    connection_id: str = Field(examples=["warehouse"])
    tables: int = Field(examples=[19])
    created: list[str] = Field(examples=[["semantic-layer/warehouse/orders.yaml"]])
    updated: list[str] = Field(examples=[[]])
    unchanged: list[str] = Field(examples=[[]])
    skipped: list[Record] = Field(examples=[[]], description="{table or source, reason}")
    errors: list[Record] = Field(examples=[[]], description="{path, problems}")
    notes: list[str] = Field(examples=[[]])
    renamed: list[Record] = Field(examples=[[]], description="{table, source, reason}")


class CompileResult(Result):
    connection_id: str = Field(examples=["warehouse"])
    sql: str | None = Field(default=None, examples=["SELECT customers.segment AS segment, SUM(orders.total) ..."])
    plan: Record | None = Field(default=None, description="include=[\"plan\"]: sources, joins, preAggregations, ...")
    notes: list[str] = Field(examples=[[]])


class QueryColumn(Result):
    name: str = Field(examples=["segment"])
    type: str = Field(examples=["VARCHAR"])


class QueryTimeout(Result):
    seconds: float = Field(examples=[30.0])
    source: str = Field(examples=["connection"])


class QueryResult(CompileResult):
    columns: list[QueryColumn]
    rows: Rows = Field(examples=[[["consumer", "8211167.96"]]])
    row_count: int = Field(examples=[1])
    truncated: bool
    elapsed_ms: float = Field(examples=[13.5])
    timeout: QueryTimeout
    saved_to: SavedFile | None = Field(default=None, description="with save_to=: the file written")
    rows_shown: int | None = Field(default=None, description="with save_to=: how many rows the preview holds")


class ImportWarning(Result):
    file: str = Field(examples=["models/orders.yml"])
    line: int | None = Field(examples=[12])
    element: str = Field(examples=["metric:revenue"])
    message: str = Field(examples=["ratio metrics are not imported"])
    skipped: bool


class ImportResult(Result):
    created: list[str] = Field(examples=[["semantic-layer/warehouse/orders.yaml"]])
    updated: list[str] = Field(examples=[[]])
    unchanged: list[str] = Field(examples=[[]])
    skipped: list[str] = Field(examples=[[]])
    warnings: list[ImportWarning]
    sources: int = Field(examples=[3])
    measures: int = Field(examples=[9])
    metrics: int = Field(examples=[4])
    dry_run: bool
    root: str = Field(examples=["/home/ann/dbt-project"])
    commit_errors: list[str] | None = None
