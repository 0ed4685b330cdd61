"""Result models of the discover pack's verbs (ADR 0039).

Sections a budget can shed (``summary``, ``snippet``, ``explain``, ``excerpt``) have defaults: a payload
trimmed to fit ``budget_tokens`` leaves them out rather than sending nulls.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from khive.results import BudgetReport, Record, Result, SavedFile, TableRef, UsageSummary

RefKind = Literal["wiki", "pattern", "sl_source", "sl_measure", "sl_dimension", "table", "column"]


class LaneEvidence(Result):
    rank: int = Field(examples=[1])
    raw: float = Field(examples=[7.42])


class Explain(Result):
    fused: float = Field(examples=[0.0325])
    base: float = Field(examples=[0.0301])
    lanes: dict[str, LaneEvidence] = Field(examples=[{"wiki.fts": {"rank": 1, "raw": 7.42}}],
                                           description="lane (and engine) to this ref's rank there")
    bonuses: dict[str, float] = Field(examples=[{"usage": 0.002}], description="bonus name to its weight")
    matched_terms: list[str] = Field(examples=[["refund", "rate"]])


class Ref(Result):
    """One ranked ref: what it is, where to look it up (``id`` for ``discover.lookup``), why it matched."""

    kind: RefKind = Field(examples=["table"])
    id: str = Field(examples=["sales.orders"])
    doc_id: str = Field(examples=["table:shop/sales.orders"])
    score: float = Field(examples=[0.93])
    summary: str | None = Field(default=None, examples=["One row per order."])
    snippet: str | None = Field(default=None, examples=["orders: id, customer_id, **status**, total"])
    matched_on: str = Field(examples=["name"])
    connection_id: str | None = Field(default=None, examples=["shop"], description="raw and semantic-layer refs")
    table_ref: TableRef | None = Field(default=None, description="tables and columns")
    column_name: str | None = Field(default=None, examples=[None], description="columns")
    page_kind: str | None = Field(default=None, examples=[None], description="pages: note, warning, rule, ...")
    flags: list[str] | None = Field(default=None, examples=[None])
    reached: str | None = Field(default=None, examples=[None], description="pulled in by a relation of a better ref")
    explain: Explain | None = Field(default=None, description="explain=true")
    confidence: Literal["low"] | None = Field(default=None, examples=[None], description="possiblyRelevant refs")
    matched_terms: list[str] | None = Field(default=None, examples=[None], description="possiblyRelevant refs")
    gap: str | None = Field(default=None, examples=[None], description="possiblyRelevant: a query word the top "
                                                                       "refs miss")


class Coverage(Result):
    covered: list[str] = Field(examples=[["refund"]])
    missing: list[str] = Field(examples=[["rate"]])
    share: float = Field(examples=[0.5])
    thin: bool


class Question(Result):
    question: str = Field(examples=["None of the best matches is about rate: which table, measure or page?"])
    about: list[str] = Field(examples=[["rate"]])
    why: str = Field(examples=["weakly_covered"])
    options: list[str] = Field(examples=[[]])


class Scopes(Result):
    given: list[str] | None = Field(examples=[None])
    inferred: list[str] = Field(examples=[["sales"]])
    why: dict[str, str] = Field(examples=[{"sales": "the question names sales/"}], description="scope to why")


class FloorPage(Result):
    id: str = Field(examples=["sales/refund-rule"])
    doc_id: str = Field(examples=["wiki:sales/refund-rule"])
    page_kind: str | None = Field(examples=["rule"])
    summary: str | None = Field(examples=["Refunds count against the month they were paid in."])


class Delivered(Result):
    id: str = Field(examples=["sales/refund-rule"])
    kind: RefKind = Field(examples=["wiki"])
    doc_id: str = Field(examples=["wiki:sales/refund-rule"])
    path: str = Field(examples=["wiki/global/sales/refund-rule.md"])
    content_hash: str | None = Field(examples=["sha256:77ab..."])
    format: str = Field(examples=["markdown"])
    body: str = Field(examples=["Refunds count against ..."])
    truncated: bool
    chars: int = Field(examples=[812])


class SearchResult(Result):
    query: str = Field(examples=["refund rate"])
    terms: list[str] = Field(examples=[["refund", "rate"]])
    uncovered: list[str] = Field(examples=[[]], description="query words nothing in the project mentions")
    coverage: Coverage
    questions: list[Question]
    scopes: Scopes
    floor: list[FloorPage] = Field(description="relevance: always pages, whatever was asked")
    refs: list[Ref]
    count: int = Field(examples=[1])
    possibly_relevant: list[Ref] = Field(examples=[[]])
    delivered: list[Delivered] | None = Field(default=None, description="render_bodies=true")
    budget: BudgetReport | None = Field(default=None, description="budget_tokens=: what was kept and dropped")
    saved_to: SavedFile | None = Field(default=None, description="save_to=: the file written")


class TextResult(Result):
    """format="text": the same answer as prose for the agent to read."""

    text: str = Field(examples=["1. table sales.orders (0.93): One row per order. ..."])
    budget: BudgetReport | None = None
    saved_to: SavedFile | None = None


class Provenance(Result):
    path: str = Field(examples=["_schema/shop/sales/orders.json"])
    source: str = Field(examples=["scan"])
    connection_id: str | None = Field(examples=["shop"])


class Entity(Result):
    kind: RefKind = Field(examples=["table"])
    id: str = Field(examples=["sales.orders"])
    doc_id: str = Field(examples=["table:shop/sales.orders"])
    path: str = Field(examples=["_schema/shop/sales/orders.json"])
    title: str = Field(examples=["sales.orders"])
    summary: str | None = Field(default=None, examples=["One row per order."])
    tags: list[str] = Field(examples=[[]])
    aliases: list[str] = Field(examples=[[]])
    confidence: float = Field(examples=[1.0])
    confidence_why: str = Field(examples=["read from the database catalog"])
    resolved_by: str = Field(examples=["qualified name"])
    provenance: Provenance
    content_hash: str | None = Field(examples=["sha256:12fe..."])
    connection_id: str | None = Field(default=None, examples=["shop"])
    table_ref: TableRef | None = None
    column_name: str | None = Field(default=None, examples=[None])


class Neighbour(Result):
    id: str = Field(examples=["sales.customers"])
    doc_id: str = Field(examples=["table:shop/sales.customers"])
    kind: RefKind | None = Field(examples=["table"])
    title: str | None = Field(default=None, examples=["sales.customers"])
    summary: str | None = Field(default=None, examples=["One row per customer."])
    exists: bool | None = Field(default=None, description="false: the relation names something not indexed")
    relation: str = Field(examples=["fk"])
    direction: str = Field(examples=["out"])
    distance: int = Field(examples=[1])
    via: str | None = Field(examples=[None], description="distance > 1: the entity it was reached through")
    confidence: float = Field(examples=[0.95])


class Document(Result):
    kind: RefKind = Field(examples=["wiki"])
    id: str = Field(examples=["sales/orders-playbook"])
    doc_id: str = Field(examples=["wiki:sales/orders-playbook"])
    why: Literal["covers", "mentions"] = Field(examples=["covers"])
    summary: str | None = Field(default=None, examples=["How to count orders."])


class Evidence(Result):
    doc_id: str = Field(examples=["table:shop/sales.orders"])
    path: str = Field(examples=["_schema/shop/sales/orders.json"])
    content_hash: str | None = Field(examples=["sha256:12fe..."])
    excerpt: str | None = Field(default=None, examples=["One row per order."])


class LookupResult(Result):
    entity: Entity
    usage: UsageSummary | None
    depth: int = Field(examples=[1])
    neighbours: dict[str, list[Neighbour]] = Field(
        examples=[{"fk": [{"id": "sales.customers", "docId": "table:shop/sales.customers", "kind": "table",
                           "title": "sales.customers", "summary": "One row per customer.", "relation": "fk",
                           "direction": "out", "distance": 1, "via": None, "confidence": 0.95}]}],
        description="relation (fk, contains, sl_table, ...) to its neighbours")
    documents: list[Document]
    evidence: list[Evidence]
    budget: BudgetReport | None = None


class Dimension(Result):
    """One measured dimension of retrieval health: its value (0..1, or null when not measured) and points."""

    value: float | None = Field(default=None, examples=[0.9])
    points: float = Field(examples=[13.5])
    of: int = Field(examples=[15])
    status: str | None = Field(default=None, examples=[None], description="not-applicable: nothing to measure")


class Reachability(Dimension):
    indexed: int = Field(examples=[40])
    artifacts: int = Field(examples=[40])


class Connectivity(Dimension):
    tables_covered: int = Field(examples=[12])
    tables: int = Field(examples=[19])
    documents_linked: int = Field(examples=[20])
    documents: int = Field(examples=[25])


class Benchmark(Dimension):
    status: str | None = Field(examples=["measured"])
    suite: str = Field(examples=["bench/discover-cases.yaml"])
    hit_at3: float | None = Field(examples=[0.9])
    cases: int = Field(examples=[10])


class Scanned(Dimension):
    connections: int = Field(examples=[1])
    scanned: int = Field(examples=[1])


class LinkHealth(Dimension):
    references: int = Field(examples=[30])
    broken: int = Field(examples=[0])


class Described(Dimension):
    tables: int = Field(examples=[19])
    described: int = Field(examples=[19])


class History(Dimension):
    enabled: int = Field(examples=[1])
    ingested: int = Field(examples=[1])


class HealthFinding(Result):
    severity: str = Field(examples=["medium"])
    code: str = Field(examples=["tables_undescribed"])
    title: str = Field(examples=["3 tables have no description"])
    detail: str = Field(examples=["Add a description in the semantic layer or a COMMENT in the database."])
    location: str | None = Field(examples=[None])
    category: str = Field(examples=["described"])
    ref: str = Field(examples=["tables_undescribed"])
    metadata: Record = Field(examples=[{"dimension": "described"}])
    confidence: float = Field(examples=[1.0])


class DoctorResult(Result):
    grade: str = Field(examples=["A"])
    score: float = Field(examples=[96.5])
    summary: str = Field(examples=["A (96.5/100): retrieval sees the project well"])
    reachability: Reachability
    connectivity: Connectivity
    benchmark: Benchmark
    scanned: Scanned
    links: LinkHealth
    described: Described
    history: History
    findings: list[HealthFinding]
    ok: bool
