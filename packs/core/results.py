"""Result models of the core pack's verbs (ADR 0039): what each returns on the wire."""

from __future__ import annotations

from pydantic import Field, JsonValue

from khive.results import OpenResult, Result


class VerbEntry(Result):
    verb: str = Field(examples=["wiki.search"])
    pack: str = Field(examples=["wiki"])
    doc: str = Field(examples=["Search pages: key, summary, score (0..1), snippet; superseded and archived pages "
                               "are hidden."])
    visibility: str = Field(examples=["public"])


class VerbsResult(Result):
    verbs: list[VerbEntry]
    count: int = Field(examples=[37])
    help: str = Field(examples=["any.verb(help=true) shows a verb's parameters"])


class PingResult(Result):
    pong: bool
    echo: JsonValue = Field(examples=[1])


class ConnectionOverview(OpenResult):
    """One connection: its id, driver and description, then what each pack knows about it (``lastScan``,
    ``tables``, ``sources``, ``templates``, ...): packs add their own facts, named in camelCase."""

    id: str = Field(examples=["warehouse"])
    driver: str = Field(examples=["postgres"])
    description: str = Field(examples=["the analytics warehouse"])


class Stale(OpenResult):
    """Something out of date, with its fix (packs add their own fields, camelCase)."""


class PartProblem(Result):
    part: str = Field(examples=["historic_sql"])
    error: str = Field(examples=["ValueError: manifest.json is not JSON"])


class OverviewResult(OpenResult):
    """What is here. Besides these fields, a pack may add a section of its own under its name (``wiki``)."""

    project: str = Field(examples=["analytics"])
    connections: list[ConnectionOverview]
    counts: dict[str, int] = Field(examples=[{"connections": 1, "pages": 12, "sources": 19, "tables": 19}])
    stale: list[Stale]
    problems: list[PartProblem]


class ProcessRef(Result):
    host: str = Field(examples=["db-tools-1"])
    boot: str = Field(examples=["5c0e..."])
    pidns: str = Field(examples=["4026531836"])
    pid: int = Field(examples=[4242])
    start: int = Field(examples=[81234567])


class AuditEntry(Result):
    ts: str = Field(examples=["2026-12-01T09:30:00.123456+00:00"])
    request_id: str = Field(examples=["4f1c..."])
    op_index: int = Field(examples=[0])
    principal: str = Field(examples=["agent:ann"])
    transport: str = Field(examples=["mcp-stdio"])
    user: str = Field(examples=["ann"])
    verb: str = Field(examples=["wiki.search"])
    args_digest: str = Field(examples=["sha256:9a0c..."])
    args: JsonValue = Field(examples=[{"query": "churn"}])
    decision: str = Field(examples=["allow"])
    reason: str = Field(examples=["public verb, default allow"])
    outcome: str = Field(examples=["ok"])
    duration_us: int = Field(examples=[1830])
    write_keys: list[str]
    op_id: str = Field(examples=["18c2f0a1b2c3d4e5f6a7b8c9"])
    process: ProcessRef | None
    client: str = Field(examples=["claude-code"])


class AuditQueryResult(Result):
    events: list[AuditEntry]
    count: int = Field(examples=[1])
