"""Result contracts: every verb declares the shape of what it returns (ADR 0039).

A pack declares a verb's result as a pydantic model (or a union of models) on ``Verb.result``. The
model describes the result *on the wire*, after the value rule (``khive.values.jsonable``): handlers
keep returning plain dicts, and the model is the contract that docs/verbs.md documents, ``$prev``
paths rely on, and the dispatcher checks.

The casing rule: every key a result model names is camelCase (``connectionId``, ``rowCount``). Python
field names stay snake_case and ``Result``'s alias generator spells them on the wire. Keys that are
data, not names khive chose (tables, files, redaction kinds, relation names), live in ``dict[str, X]``
fields and keep their spelling. The envelope's own keys are protocol (``request_id``, ``ok``, ...).

How much the dispatcher checks (``ResultCheck``):

- ``keys`` (the default): the top-level keys of a dict result against the model's fields, a log line
  on a mismatch. It costs a set difference per op and never fails one.
- ``strict`` (the test suite; ``KHIVE_RESULT_CHECK=strict`` for a process): the whole result
  validated against the model in strict mode, as JSON, the way a client reads it. A mismatch fails
  the op with ``internal_error`` and ``details.stage = "result_contract"``: it is a bug in the pack.
"""

from __future__ import annotations

import logging
import re
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from khive.errors import OpError

log = logging.getLogger(__name__)

RESULT_CHECK_ENV = "KHIVE_RESULT_CHECK"


class Result(BaseModel):
    """Base for result models: wire names are camelCase, and a key the model does not name is an error."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)


CAMEL_RE = re.compile(r"[a-z][a-zA-Z0-9]*\Z")


class OpenResult(Result):
    """An object other packs add fields to (``overview()``): extra fields are allowed, and named in camelCase."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _camel_extras(self) -> OpenResult:
        wrong = sorted(key for key in (self.model_extra or {}) if not CAMEL_RE.match(key))
        if wrong:
            raise ValueError(f"keys must be camelCase (ADR 0039): {', '.join(wrong)}")
        return self


Rows = list[list[JsonValue]]  # a database's rows, already encoded by the value rule: never re-coerced
Counts = dict[str, int]  # counts keyed by data (a redaction kind, a schema, a skip reason)
Record = dict[str, JsonValue]  # an object whose keys are data (a file's own fields, a user's frontmatter)


class TableRef(Result):
    """Where a table lives: catalog (database or project), schema (``db``) and name."""

    catalog: str | None = Field(examples=["shop"])
    db: str = Field(examples=["sales"])
    name: str = Field(examples=["orders"])


class CommonJoin(Result):
    table: str = Field(examples=["sales.customers"])
    on: list[str] = Field(examples=[["orders.customer_id = customers.id"]])


class UsageSummary(Result):
    """How a table is used, from the query history (historic_sql writes it; scan, sl and discover show it)."""

    narrative: str | None = Field(default=None, examples=["Orders are counted per month and region."])
    frequency_tier: str | None = Field(default=None, examples=["hot"])
    # null when the file it was read from lacks the key (a hand-edited shard or source)
    common_filters: list[str] | None = Field(default_factory=list, examples=[["orders.status = 'paid'"]])
    common_group_bys: list[str] | None = Field(default_factory=list, examples=[["orders.region"]])
    common_joins: list[CommonJoin | str] | None = Field(default_factory=list)
    stale_since: str | None = None


class Finding(Result):
    """One thing a check found: how bad, a stable code, what and how to fix it."""

    severity: Literal["info", "warning", "error"] = Field(examples=["warning"])
    code: str = Field(examples=["pg_stat_statements_missing"])
    message: str = Field(examples=["pg_stat_statements is not installed in this database"])
    fix: str = Field(default="", examples=["CREATE EXTENSION pg_stat_statements;"])


class WriteOutcome(Result):
    """What a write to a project file did (``FileStore``): changed or not, its digest, a failed git commit."""

    path: str = Field(examples=["wiki/global/sales/orders-playbook.md"])
    changed: bool
    sha256: str = Field(examples=["9f2c...e1"])
    commit_error: str | None = Field(default=None, description="git commit failed (the file is written)")


class SavedFile(Result):
    """A result written to a file under the project's exports/ (``save_to=``)."""

    path: str = Field(examples=["exports/revenue-by-segment.csv"])
    format: Literal["csv", "jsonl", "json"] = Field(examples=["csv"])
    rows: int = Field(examples=[1200])
    bytes: int = Field(examples=[48213])
    sha256: str = Field(examples=["01149c76...599b"])


class TokenCounts(Result):
    total: int = Field(examples=[1830])
    budget: int = Field(examples=[2000])
    core: int = Field(examples=[410])
    sections: Counts = Field(examples=[{"evidenceExcerpts": 900, "summaries": 300}],
                             description="section to what it costs")


class BudgetReport(Result):
    """What ``budget_tokens=`` kept and dropped (``khive/budget.py``): sections shed in ``order``."""

    budget_tokens: int = Field(examples=[2000])
    tokens: TokenCounts
    fits: bool
    order: list[str] = Field(examples=[["evidenceExcerpts", "related", "neighbours", "summaries"]])
    kept: list[str] = Field(examples=[["summaries"]])
    dropped: list[str] = Field(examples=[["evidenceExcerpts"]])
    token_method: str = Field(examples=["approximate"])


class HelpResult(Result):
    """What ``any.verb(help=true)`` returns: the verb's declaration, its parameter and result schemas."""

    verb: str = Field(examples=["wiki.search"])
    pack: str = Field(examples=["wiki"])
    doc: str = Field(examples=["Search pages: key, summary, score (0..1), snippet."])
    visibility: Literal["public", "operator"] = Field(examples=["public"])
    read_only: bool
    write_keys: str = Field(examples=["none"], description="the write-key rule, none, or declared")
    params: Record = Field(description="the JSON schema of the arguments")
    result: Record | None = Field(description="the JSON schema of the result")


class ResultCheck(StrEnum):
    KEYS = "keys"
    STRICT = "strict"


_check = ResultCheck.KEYS  # the process's mode: set by a composition root or the test suite


def set_result_check(mode: ResultCheck | str) -> None:
    """Set how much the dispatcher checks results in this process (``keys`` or ``strict``)."""
    global _check
    _check = ResultCheck(mode)


def result_check_from(env: Mapping[str, str]) -> None:
    """For composition roots: ``KHIVE_RESULT_CHECK=strict`` turns the full check on for this process."""
    value = env.get(RESULT_CHECK_ENV)
    if value:
        set_result_check(value)


def check_result(verb: str, declared: Any, result: Any) -> None:
    """Check ``result`` (the canonical, JSON-safe result of ``verb``) against its declared model."""
    if declared is None:
        return
    if _check is ResultCheck.STRICT:
        _strict(verb, declared, result)
    elif type(result) is dict and (known := top_level_keys(declared)) is not None:
        unknown = result.keys() - known
        if unknown:
            _warn_once(verb, frozenset(unknown))


def _strict(verb: str, declared: Any, result: Any) -> None:
    try:
        adapter(declared).validate_json(orjson.dumps(result), strict=True)
    except ValidationError as exc:
        errors = [{"at": ".".join(str(part) for part in error["loc"]) or "(result)", "problem": error["msg"]}
                  for error in exc.errors(include_url=False)[:20]]
        raise OpError(f"{verb} returned a result that does not match its declared model: "
                      + "; ".join(f"{e['at']}: {e['problem']}" for e in errors[:5]),
                      code="internal_error", details={"stage": "result_contract", "errors": errors}) from None


@cache
def adapter(declared: Any) -> TypeAdapter[Any]:
    return TypeAdapter(declared)


@cache
def top_level_keys(declared: Any) -> frozenset[str] | None:
    """Every wire name a result may carry at its top level (over each member of a union); None when any
    member is open (``OpenResult``: packs add sections of their own, so no key is unknown)."""
    if any(model.model_config.get("extra") == "allow" for model in members(declared)):
        return None
    return frozenset(name for model in members(declared)
                     for field_name, field in model.model_fields.items()
                     for name in (field.alias or field_name,))


def members(declared: Any) -> tuple[type[BaseModel], ...]:
    """The models of a declared result: one model, or each model of a union."""
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        return (declared,)
    return tuple(model for arg in typing.get_args(declared) for model in members(arg))


@cache
def _warn_once(verb: str, unknown: frozenset[str]) -> None:
    log.warning("%s returned keys its result model does not declare: %s", verb, ", ".join(sorted(unknown)))


def result_schema(declared: Any) -> dict[str, Any] | None:
    """The JSON schema of a declared result (wire names), or None when the verb declares none."""
    return None if declared is None else adapter(declared).json_schema(by_alias=True, mode="serialization")


# -- examples, for docs/verbs.md ---------------------------------------------------------------------

def example(declared: Any) -> Any:
    """An example value of ``declared``, built from the models' field examples (placeholders elsewhere)."""
    return _example(declared, "value")


def _example(kind: Any, name: str) -> Any:
    if kind is JsonValue or kind is Any:
        return None
    origin = typing.get_origin(kind)
    if origin is Annotated:
        return _example(typing.get_args(kind)[0], name)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return {field.alias or field_name: _field_example(field, field_name)
                for field_name, field in kind.model_fields.items() if not field.exclude}
    if origin in (types.UnionType, typing.Union):
        options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return _example(options[0], name) if options else None
    if origin is Literal:
        return typing.get_args(kind)[0]
    if origin is list:
        (item,) = typing.get_args(kind) or (Any,)
        return [_example(item, name)]
    if origin is dict:
        _, item = typing.get_args(kind) or (str, Any)
        return {f"<{name}>": _example(item, name)}
    return _PLACEHOLDERS.get(kind, None) if kind is not str else f"<{name}>"


def _field_example(field: Any, name: str) -> Any:
    if field.examples:
        return field.examples[0]
    return _example(field.annotation, to_camel(name))


_PLACEHOLDERS: dict[Any, Any] = {int: 0, float: 0.5, bool: True, type(None): None}
