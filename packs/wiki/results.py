"""Result models of the wiki pack's verbs (ADR 0039)."""

from __future__ import annotations

from pydantic import Field

from khive.results import Result, WriteOutcome

PageKindName = str  # note, warning, rule, pattern, recap (packs/wiki/models.py)


class Links(Result):
    unresolved_refs: list[str] = Field(examples=[["sales/refunds"]], description="refs to pages that do not exist "
                                                                                  "(yet)")
    unresolved_sl_refs: list[str] = Field(examples=[[]], description="semantic-layer names not found")


class WriteResult(WriteOutcome, Links):
    key: str = Field(examples=["sales/orders-playbook"])
    scope: str = Field(examples=["global"])


class Backlink(Result):
    id: str = Field(examples=["wiki:sales/orders-v2"])
    relation: str = Field(examples=["supersedes"])


class ReadResult(Links):
    key: str = Field(examples=["sales/orders-playbook"])
    scope: str = Field(examples=["global"])
    path: str = Field(examples=["wiki/global/sales/orders-playbook.md"])
    sha256: str = Field(examples=["9f2c...e1"], description="the page file's hash: wiki.write's base_sha256 "
                        "writes only over this page")
    title: str | None = Field(examples=["Counting orders"])
    summary: str = Field(examples=["How we count orders"])
    tags: list[str] = Field(examples=[["orders"]])
    refs: list[str] = Field(examples=[["sales/refunds"]])
    sl_refs: list[str] = Field(examples=[["orders.revenue"]])
    relations: dict[str, list[str]] = Field(
        examples=[{"supersedes": ["sales/orders-v1"], "contradicts": [], "supports": [], "related_to": []}],
        description="relation name (as wiki.write takes it) to page keys")
    kind: PageKindName = Field(examples=["note"])
    relevance: list[str] = Field(examples=[["always"]])
    aliases: list[str] = Field(examples=[["order counting"]])
    stale_since: str | None = Field(examples=[None])
    archived: bool
    date: str | None = Field(examples=[None])
    body: str = Field(examples=["Count delivered and shipped orders..."])
    backlinks: list[Backlink]
    superseded_by: list[str] = Field(examples=[[]])
    shadows_global: bool = Field(description="this is the caller's own page and a global page of the key exists")


class SearchHit(Result):
    key: str = Field(examples=["sales/orders-playbook"])
    scope: str = Field(examples=["global"])
    title: str = Field(examples=["Counting orders"])
    summary: str = Field(examples=["How we count orders"])
    kind: PageKindName = Field(examples=["note"])
    tags: list[str] = Field(examples=[["orders"]])
    score: float = Field(examples=[0.82])
    snippet: str | None = Field(examples=["...count **orders** that were delivered..."])
    superseded_by: list[str] = Field(examples=[[]])


class SearchResult(Result):
    hits: list[SearchHit]
    count: int = Field(examples=[1])


class ListedPage(Result):
    key: str = Field(examples=["sales/orders-playbook"])
    scope: str = Field(examples=["global"])
    kind: PageKindName = Field(examples=["note"])
    summary: str = Field(examples=["How we count orders"])
    tags: list[str] = Field(examples=[["orders"]])
    archived: bool | None = Field(examples=[False])


class ListResult(Result):
    pages: list[ListedPage]
    count: int = Field(examples=[1])
    errors: dict[str, str] = Field(examples=[{}], description="file path to why it could not be read")


class DeleteResult(Result):
    deleted: str = Field(examples=["wiki/global/sales/orders-v1.md"])
