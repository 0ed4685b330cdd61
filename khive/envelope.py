"""The envelope's contract: what every request answers, whichever transport carried it (ADR 0039).

``khive.dispatch`` and ``khive.failure`` build envelopes as plain dicts; these models are their declared
shape. The MCP tool's ``outputSchema`` is generated from them, so ``structuredContent`` and the schema a
client validates it against cannot drift apart. Each op's ``result`` is the verb's own result model (see
docs/verbs.md) after the caller's presentation, so the envelope leaves it open.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, JsonValue

from khive.results import Record, Result


class ErrorBody(Result):
    """A failed op's error: a stable code from the catalogue (docs/errors.md), a message, details."""

    code: str = Field(examples=["invalid_args"])
    message: str = Field(examples=["wiki.search: query: Field required"])
    details: Record = Field(examples=[{"verb": "wiki.search"}])


class OpSucceeded(Result):
    ok: Literal[True]
    verb: str = Field(examples=["wiki.search"])
    result: JsonValue


class OpFailed(Result):
    ok: Literal[False]
    verb: str = Field(examples=["wiki.search"])
    error: ErrorBody


class OpAborted(Result):
    """A chain's op that never ran because an earlier one failed."""

    ok: Literal[False]
    verb: str = Field(examples=["discover.lookup"])
    aborted: Literal[True]


class Summary(Result):
    total: int
    succeeded: int
    failed: int
    aborted: int


class Envelope(Result):
    results: list[OpSucceeded | OpFailed | OpAborted]
    summary: Summary
    status: Literal["success", "partial", "failed"]
    request_id: str = Field(description="the caller's id, or one khive chose; the audit events carry it")


def envelope_schema() -> dict[str, Any]:
    """The JSON schema of an envelope, by its wire names (the MCP tool's ``outputSchema``)."""
    return Envelope.model_json_schema(by_alias=True, mode="serialization")


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``summary`` and ``status`` of an envelope whose op entries are ``results``."""
    succeeded = sum(1 for result in results if result.get("ok"))
    aborted = sum(1 for result in results if result.get("aborted"))
    total = len(results)
    status = "success" if succeeded == total else ("failed" if succeeded == 0 else "partial")
    return {"summary": {"total": total, "succeeded": succeeded, "failed": total - succeeded - aborted,
                        "aborted": aborted}, "status": status}


def is_failure(envelope: dict[str, Any]) -> bool:
    """Whether the request failed as a whole (no op succeeded): MCP's ``isError``. A partial result is not an
    error to the client: its successful ops are the answer, and each failed op says why in its entry."""
    return envelope.get("status") == "failed"
