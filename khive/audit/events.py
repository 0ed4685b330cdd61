"""The audit event: one per dispatched op, allowed or denied, ok, failed or aborted."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

_SECRET_KEY_RE = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|credential|private[_-]?key|auth|dsn",
                            re.I)
_URL_PASSWORD_RE = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@/\s]+@", re.I)
MASK = "***"


@dataclass(frozen=True, slots=True)
class AuditEvent:
    ts: datetime
    request_id: str
    op_index: int
    principal: str
    transport: str
    verb: str
    args_digest: str
    args_redacted: dict[str, Any]
    decision: str  # allow | deny | not-evaluated
    reason: str
    outcome: str  # ok | <error code> | aborted
    duration_us: int
    write_keys: tuple[str, ...] = field(default=())
    client: str = ""  # the MCP client's self-declared name: information only, never an identity

    def to_dict(self) -> dict[str, Any]:
        return {
            "ts": self.ts.isoformat(),
            "request_id": self.request_id,
            "op_index": self.op_index,
            "principal": self.principal,
            "transport": self.transport,
            "verb": self.verb,
            "args_digest": self.args_digest,
            "args": self.args_redacted,
            "decision": self.decision,
            "reason": self.reason,
            "outcome": self.outcome,
            "duration_us": self.duration_us,
            "write_keys": list(self.write_keys),
            "client": self.client,
        }


def digest_args(args: Any) -> str:
    raw = orjson.dumps(args, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.sha256(raw).hexdigest()[:32]


def redact(value: Any, key: str | None = None) -> Any:
    """Mask values under secret-looking keys and passwords inside URLs."""
    if key is not None and _SECRET_KEY_RE.search(key):
        return MASK
    if isinstance(value, dict):
        return {str(k): redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str) and "://" in value:
        return _URL_PASSWORD_RE.sub(lambda m: f"{m.group('scheme')}{MASK}@", value)
    return value
