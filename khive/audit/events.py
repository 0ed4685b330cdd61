"""Audit events: one per dispatched op (allowed or denied; ok, failed, aborted, interrupted), one per
rejected request text (a parse error), and the rows the write-ahead trail stores for them.

An op that runs is stored as two appended rows (ADR 0029): a ``start`` row, committed before the op
runs, and an ``outcome`` row appended after it. An op that never runs (denied, invalid, aborted)
and a parse error are one ``event`` row. Readers see one merged :class:`AuditEvent` per op; its
outcome is ``running`` while a start has no outcome row yet.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from khive.audit.process import ProcessId
from khive.errors import LEGACY_CODES
from khive.redact import BUILTIN, SECRET_NAME, Redactor, marker

MASK = marker(SECRET_NAME)  # what a value under a secret-named key becomes

# Row kinds.
START, OUTCOME, EVENT = "start", "outcome", "event"
# Outcomes the trail itself assigns (the others are "ok" and error codes).
RUNNING, INTERRUPTED, ABORTED = "running", "interrupted", "aborted"
PARSE_VERB = "(parse)"  # a request text rejected before dispatch has no verb
_SCALARS = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True, slots=True)
class AuditEvent:
    ts: datetime  # when the op started (or was refused)
    request_id: str
    op_index: int
    principal: str
    transport: str
    verb: str
    args_digest: str
    args_redacted: Any
    decision: str  # allow | deny | not-evaluated
    reason: str
    outcome: str  # ok | <error code> | aborted | interrupted | running
    duration_us: int
    write_keys: tuple[str, ...] = field(default=())
    user: str = ""  # whose user-scope knowledge applied
    op_id: str = ""  # links an op's start and outcome rows; "" for rows written before ADR 0029
    process: ProcessId | None = None  # the process that ran (or refused) it
    client: str = ""  # the MCP client's self-declared name: information only, never an identity (ADR 0032)

    def to_dict(self) -> dict[str, Any]:
        """The event as ``audit.query`` and ``khive audit --json`` show it (camelCase keys, ADR 0039)."""
        return {
            "ts": self.ts.isoformat(),
            "requestId": self.request_id,
            "opIndex": self.op_index,
            "principal": self.principal,
            "transport": self.transport,
            "user": self.user,
            "verb": self.verb,
            "argsDigest": self.args_digest,
            "args": self.args_redacted,
            "decision": self.decision,
            "reason": self.reason,
            "outcome": LEGACY_CODES.get(self.outcome, self.outcome),  # one spelling, whenever it was written
            "durationUs": self.duration_us,
            "writeKeys": list(self.write_keys),
            "opId": self.op_id,
            "process": self.process.to_dict() if self.process else None,
            "client": self.client,
        }

    def ended(self, ts: datetime, *, decision: str, reason: str, outcome: str, duration_us: int,
              process: ProcessId) -> AuditEvent:
        """The outcome row of this (start) event: the who and what repeated, the arguments not."""
        return AuditEvent(ts, self.request_id, self.op_index, self.principal, self.transport, self.verb,
                          self.args_digest, None, decision, reason, outcome, duration_us, (), self.user, self.op_id,
                          process, self.client)  # positional: dataclasses.replace costs 4x more, once per op


def new_op_id() -> str:
    """Unique, and ordered by time: index entries of ops written together land on the same pages.
    (``random`` is reseeded in a forked child, and costs no system call, unlike ``os.urandom``.)"""
    return f"{time.time_ns():016x}{random.getrandbits(32):08x}"


def digest_args(args: Any) -> str:
    raw = _dumps(args, sort=True)
    return hashlib.sha256(raw).hexdigest()[:32]


def audit_json(value: Any) -> str:
    """JSON text of redacted arguments that every store accepts, whatever the value holds."""
    return _dumps(value).decode()


def clean_text(text: str) -> str:
    """A text column's value as both stores accept it: lone surrogates and NUL spelled out."""
    if text.isascii() and "\x00" not in text:
        return text
    return text.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")


def plain_args(value: Any) -> Any:
    """Arguments as plain JSON-like values: mappings as dicts, ``$prev`` references as their text."""
    kind = type(value)
    if kind in _SCALARS:  # most values: no ABC check (isinstance against Mapping is slow, once per value)
        return value
    if kind is dict or isinstance(value, Mapping):
        return {str(k): plain_args(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [plain_args(v) for v in value]
    return value if isinstance(value, (str, int, float)) else str(value)


def redact(value: Any, redactor: Redactor = BUILTIN) -> Any:
    """Arguments as the trail stores them: values under secret-named keys masked, credentials in text replaced
    by markers (the core redaction service, khive/redact.py; ADR 0035)."""
    return redactor.args(value)


def parse_error_event(*, ts: datetime, text: str, reason: str, line: int, column: int, request_id: str,
                      principal: str, transport: str, user: str, process: ProcessId, client: str = "") -> AuditEvent:
    """A request text rejected before dispatch. The text itself is never stored (it may hold secrets the
    redaction rules cannot see in text that does not parse): only its digest, its length and where it broke."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return AuditEvent(ts=ts, request_id=request_id, op_index=0, principal=principal, transport=transport,
                      verb=PARSE_VERB, args_digest=digest,
                      args_redacted={"text_sha256": digest, "text_chars": len(text), "reason": reason,
                                     "line": line, "column": column},
                      decision="not-evaluated", reason=f"parse_error: {reason} at line {line}, column {column}",
                      outcome="parse_error", duration_us=0, user=user, op_id=new_op_id(), process=process,
                      client=client)


def _dumps(value: Any, *, sort: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_SORT_KEYS if sort else 0)
    try:
        raw = orjson.dumps(value, option=option, default=str)
    except TypeError:  # an integer beyond 64 bits or a lone surrogate (DSL text, a $prev value)
        return orjson.dumps(_encodable(value), option=option)
    # PostgreSQL's jsonb refuses NUL; rare enough to take the slow path (an escaped backslash may land here too).
    return orjson.dumps(_encodable(value), option=option) if b"\\u0000" in raw else raw


def _encodable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return clean_text(str(value))
