"""The ``historicSql:`` block of a connection: window, thresholds, noise filters and redaction.

Keys are camelCase, like the records in ``models.py`` (the block sits in khive.yaml beside other
tools' settings that already use these names). Every regex is compiled at validation time, so a
bad pattern is a config error that names the key, never a failure halfway through a read.

Service-account rules are evaluated in order and the first rule whose pattern matches the user
decides (like firewall rules): ``exclude`` drops that user's executions before aggregation,
``mark-only`` keeps them and marks the template ``service-account``, ``include`` keeps them
unmarked (an exception to a broader rule further down). Patterns match anywhere in the user name,
case-insensitively. Orchestrator modes use the same three words per tool: ``exclude`` drops the
templates the tool issued, ``mark-only`` keeps them with the tool's marker, ``include`` keeps them
unmarked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from khive.errors import ConfigError
from khive.redact import check_pattern

FilterMode = Literal["exclude", "include", "mark-only"]
_ENV_REF = re.compile(r"env:[A-Za-z_][A-Za-z0-9_]*\Z")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc}): {pattern!r}") from None
    return pattern


class ServiceAccountRule(_Model):
    pattern: str = Field(description="regex searched in the user name, case-insensitively")
    mode: FilterMode = "exclude"

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        return _compiles(value)


class OrchestratorModes(_Model):
    """What to do with queries each tool issued, recognised by the tool's comment or naming convention."""

    dbt: FilterMode = "mark-only"
    looker: FilterMode = "mark-only"
    metabase: FilterMode = "mark-only"
    redash: FilterMode = "mark-only"
    hex: FilterMode = "mark-only"
    tableau: FilterMode = "mark-only"
    khive: FilterMode = "exclude"  # khive's own scan sampling is never usage

    def modes(self) -> dict[str, FilterMode]:
        return {"dbt": self.dbt, "looker": self.looker, "metabase": self.metabase, "redash": self.redash,
                "hex": self.hex, "tableau": self.tableau, "khive": self.khive}


class HistoricSqlFilters(_Model):
    serviceAccounts: list[ServiceAccountRule] = Field(default_factory=list)
    orchestrators: OrchestratorModes = Field(default_factory=OrchestratorModes)
    maxErrorRate: float = Field(default=0.5, ge=0, le=1,
                                description="templates failing more often than this are dropped")
    dropTrivialProbes: bool = Field(default=True, description="SELECT 1, SELECT version(): queries touching no table")


Provider = Literal["deterministic", "agent", "sampling"]


class HistoricSqlConfig(_Model):
    enabled: bool = Field(default=False, description="reading query history needs privileges: opt in")
    url: str | None = Field(default=None, description="env:VAR: a separate role's connection string for reading "
                                                      "history (pg_read_all_stats); default: the connection's url")
    provider: Provider = Field(default="deterministic", description="who writes usage narratives and patterns")
    queryLog: str | None = Field(default=None, description="a JSONL/CSV query log, relative to the project; "
                                                           "the source for sqlite and duckdb connections")
    queryLogFormat: Literal["jsonl", "csv"] | None = None
    searchPath: list[str] = Field(default_factory=list,
                                  description="schemas unqualified names resolve against (default: the engine's)")
    windowDays: int = Field(default=90, ge=1, le=3650)
    minExecutions: int = Field(default=5, ge=1)
    concurrency: int = Field(default=12, ge=1, le=64)
    filters: HistoricSqlFilters = Field(default_factory=HistoricSqlFilters)
    redactionPatterns: list[str] = Field(default_factory=list,
                                         description="regexes replaced in stored SQL, case-insensitively")
    staleArchiveAfterDays: int = Field(default=90, ge=1)
    patternMinUsers: int = Field(default=2, ge=1, description="distinct users a set of tables read together needs "
                                                              "before it is a pattern")

    @field_validator("url")
    @classmethod
    def _url_is_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_REF.match(value):
            raise ValueError("must be an env:VAR reference (connection strings hold secrets), "
                             "e.g. env:WAREHOUSE_HISTORY_URL")
        return value

    @field_validator("redactionPatterns")
    @classmethod
    def _redaction(cls, value: list[str]) -> list[str]:
        return [check_pattern(pattern) for pattern in value]  # the core redaction service's own check


def connection_settings(connection: str, raw: Mapping[str, Any] | None) -> HistoricSqlConfig:
    """The validated ``historicSql:`` block of ``connection``; a ConfigError naming the key and the fix."""
    try:
        return HistoricSqlConfig.model_validate(dict(raw or {}))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(["connections", connection, "historicSql", *(str(p) for p in first["loc"])])
        if first["type"] == "extra_forbidden":
            fix = f"remove {first['loc'][-1]!r}; known keys: {', '.join(_known(first['loc']))}"
        elif first["type"] == "literal_error":
            fix = f"use one of {first.get('ctx', {}).get('expected', '')}"
        else:
            fix = "see the historicSql settings in the README"
        raise ConfigError(f"khive.yaml: {where}: {first['msg']}; fix: {fix}",
                          details={"field": where, "fix": fix, "errors": len(exc.errors())}) from None


def _known(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = HistoricSqlConfig
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return sorted(model.model_fields)
