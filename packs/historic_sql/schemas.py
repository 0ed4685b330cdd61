"""What a digest provider must produce: per-table ``usage`` and cross-table ``pattern``s.

One set of pydantic models serves every provider: the deterministic one builds them, the agent's
``historic_sql.submit`` and the MCP sampling replies are validated against them (``parse_output``),
and their JSON schemas are what ``historic_sql.units`` hands out. Invalid output is rejected with
the first reasons pydantic gives, field by field; nothing half-valid is stored.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from khive.errors import OpError

FrequencyTier = Literal["high", "mid", "low", "unused"]
SLUG_RE = re.compile(r"[a-z0-9][a-z0-9\-]*\Z")


class _Model(BaseModel):
    # camelCase: the payload keeps the names the seeds, the SL ``usage`` block and clients know
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommonJoin(_Model):
    table: str = Field(description="the other table, schema.name")
    on: list[str] = Field(description="join conditions as 'this_column = other_column'")


class UsageOutput(_Model):
    """How a table is used, from its staged usage input."""

    narrative: str = Field(min_length=1, description="two or three sentences an analyst would find useful")
    frequencyTier: FrequencyTier
    commonFilters: list[str] = Field(default_factory=list, description="columns usually in WHERE")
    commonGroupBys: list[str] = Field(default_factory=list, description="columns usually in GROUP BY")
    commonJoins: list[CommonJoin] = Field(default_factory=list)
    staleSince: str | None = None


class PatternOutput(_Model):
    """A recurring analytical intent spanning two tables or more."""

    slug: str = Field(description="lowercase words joined by '-', e.g. revenue-by-nation")
    title: str = Field(min_length=1)
    narrative: str = Field(min_length=1)
    definitionSql: str = Field(min_length=1, description="a representative query, literals masked")
    tablesInvolved: list[str] = Field(min_length=2)
    slRefs: list[str] = Field(default_factory=list, description="semantic-layer source names involved")
    constituentTemplateIds: list[str] = Field(default_factory=list)

    @field_validator("slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG_RE.match(value):
            raise ValueError("must be lowercase letters, digits and '-', e.g. revenue-by-nation")
        return value


class PatternsOutput(_Model):
    patterns: list[PatternOutput]


OUTPUTS: dict[str, type[_Model]] = {"usage": UsageOutput, "patterns": PatternsOutput}


def output_schema(kind: str) -> dict[str, Any]:
    return OUTPUTS[kind].model_json_schema()


class InvalidOutput(OpError):
    code = "invalid_output"


def parse_output(kind: str, output: Any) -> BaseModel:
    """``output`` (a mapping, or JSON text, optionally inside a markdown fence) as the model for ``kind``."""
    data = output
    if isinstance(output, str):
        data = _json(output)
    try:
        return OUTPUTS[kind].model_validate(data)
    except ValidationError as exc:
        reasons = [f"{'.'.join(str(p) for p in e['loc']) or '(output)'}: {e['msg']}"
                   for e in exc.errors(include_url=False)[:5]]
        raise InvalidOutput(f"{kind} output rejected: {'; '.join(reasons)}",
                            details={"reasons": reasons, "schema": output_schema(kind)}) from None


_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _json(text: str) -> Any:
    fenced = _FENCE_RE.search(text)
    body = fenced.group(1) if fenced else text
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidOutput(f"output rejected: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                            details={"reasons": [f"not JSON: {exc.msg}"]}) from None
