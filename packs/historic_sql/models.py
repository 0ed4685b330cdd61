"""The one record shape every query-history reader produces, and the pipeline's intermediate shapes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TemplateStats(_Model):
    # camelCase: these records are the staged JSON payload other tools and the seeds already know
    executions: int = Field(ge=0)
    distinctUsers: int = Field(default=0, ge=0)
    firstSeen: str | None = None
    lastSeen: str | None = None
    p50RuntimeMs: float | None = None
    p95RuntimeMs: float | None = None
    errorRate: float = Field(default=0.0, ge=0, le=1)
    rowsProduced: int | None = None


class AggregatedTemplate(_Model):
    """One normalized query template with its aggregated execution statistics."""

    templateId: str  # a hash of the normalized SQL (or the engine query id)
    canonicalSql: str  # literals masked
    dialect: str
    stats: TemplateStats
    topUsers: list[str] = Field(default_factory=list)
    markers: list[str] = Field(default_factory=list, description="dbt, looker, metabase, service-account, ...")


class ProbeFinding(_Model):
    """One problem (or fact) a reader's probe found, with the fix."""

    severity: str  # error | warning | info
    code: str
    message: str
    fix: str = ""
