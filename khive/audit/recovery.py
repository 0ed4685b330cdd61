"""Shared by both stores: the rows a write-ahead trail stores, the merged read, and recovery.

Recovery turns the open ops (started, no outcome yet) of processes that are gone into
``interrupted`` outcomes; ops of live processes, or of processes this one cannot judge (another
host or pid namespace), stay open and read as ``running``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from khive.audit.events import INTERRUPTED, AuditEvent, audit_json, clean_text
from khive.audit.process import Liveness, ProcessId, judge

# Every stored row, in this column order (the merged read returns the same shape).
COLUMNS = ("ts", "request_id", "op_index", "principal", "transport", "verb", "args_digest", "args_redacted",
           "decision", "reason", "outcome", "duration_us", "write_keys", "kind", "op_id", "user_name", "process")
# What an open op keeps until its outcome arrives: enough to write that outcome without the start row.
OPEN_COLUMNS = ("op_id", "ts", "request_id", "op_index", "principal", "transport", "user_name", "verb",
                "args_digest", "decision", "process")


def row_values(kind: str, event: AuditEvent) -> tuple[Any, ...]:
    """A row's values in COLUMNS order, JSON columns as text, ts left to the store."""
    return (event.ts, clean_text(event.request_id), event.op_index, clean_text(event.principal),
            clean_text(event.transport), clean_text(event.verb), event.args_digest, audit_json(event.args_redacted),
            event.decision, clean_text(event.reason), clean_text(event.outcome), event.duration_us,
            audit_json(list(event.write_keys)), kind, event.op_id, clean_text(event.user),
            process_json(event.process))


def open_values(event: AuditEvent) -> tuple[Any, ...]:
    return (event.op_id, event.ts, clean_text(event.request_id), event.op_index, clean_text(event.principal),
            clean_text(event.transport), clean_text(event.user), clean_text(event.verb), event.args_digest,
            event.decision, process_json(event.process))


def open_event(row: tuple[Any, ...], ts: datetime) -> AuditEvent:
    op_id, _, request_id, op_index, principal, transport, user, verb, digest, decision, process = row
    return AuditEvent(ts=ts, request_id=str(request_id), op_index=int(op_index), principal=str(principal),
                      transport=str(transport), verb=str(verb), args_digest=str(digest), args_redacted=None,
                      decision=str(decision), reason="", outcome="", duration_us=0, user=str(user), op_id=str(op_id),
                      process=parse_process(process))


def merged_event(row: tuple[Any, ...], ts: datetime) -> AuditEvent:
    (_, request_id, op_index, principal, transport, verb, digest, args, decision, reason, outcome, duration_us,
     write_keys, _, op_id, user, process) = row
    return AuditEvent(ts=ts, request_id=str(request_id), op_index=int(op_index), principal=str(principal),
                      transport=str(transport), verb=str(verb), args_digest=str(digest), args_redacted=_json(args),
                      decision=str(decision), reason=str(reason), outcome=str(outcome), duration_us=int(duration_us),
                      write_keys=tuple(_json(write_keys) or ()), user=str(user), op_id=str(op_id),
                      process=parse_process(process))


def interrupted(open_ops: Iterable[AuditEvent], me: ProcessId, now: datetime) -> list[AuditEvent]:
    """``interrupted`` outcome rows for the open ops whose process is certainly gone."""
    found = []
    for start in open_ops:
        owner = start.process
        if owner is None or judge(owner, me) is not Liveness.GONE:
            continue
        reason = (f"interrupted: {owner.describe()} ended before the op finished (no outcome was written); "
                  f"recorded by {me.describe()}")
        found.append(start.ended(now, decision=start.decision, reason=reason, outcome=INTERRUPTED, duration_us=0,
                                 process=me))
    return found


@lru_cache(maxsize=64)
def process_json(process: ProcessId | None) -> str:
    return orjson.dumps(process.to_dict() if process else None).decode()


def parse_process(raw: Any) -> ProcessId | None:
    return ProcessId.from_dict(_json(raw))


def _json(raw: Any) -> Any:
    return orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw  # PostgreSQL hands jsonb back decoded
