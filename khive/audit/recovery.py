"""Shared by both stores: the rows a write-ahead trail stores, the merged read, and recovery.

Rows name their process by a key into a small append-only table of processes (each process
registers once), so a start costs a few bytes of identity, not a hundred. Recovery turns the open
ops (started, no outcome yet) of processes that are gone into ``interrupted`` outcomes; ops of
live processes, or of processes this one cannot judge (another host or pid namespace), stay open
and read as ``running``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from khive.audit.events import EVENT, INTERRUPTED, OUTCOME, START, AuditEvent, audit_json, clean_text
from khive.audit.process import Liveness, ProcessId, judge

# Every stored row, in this column order.
COLUMNS = ("ts", "request_id", "op_index", "principal", "transport", "verb", "args_digest", "args_redacted",
           "decision", "reason", "outcome", "duration_us", "write_keys", "kind", "op_id", "user_name", "process_id",
           "client")
# What an open op keeps until its outcome arrives: enough to judge its process and write that outcome.
OPEN_COLUMNS = ("op_id", "ts", "request_id", "op_index", "verb", "process_id")
PROCESS_COLUMNS = ("host", "boot", "pidns", "pid", "start")
NO_PROCESS = 0  # rows written before ADR 0029, and outcome rows (their start names the process)


def row_values(kind: str, event: AuditEvent, ts: Any, process_id: int) -> tuple[Any, ...]:
    """A row's values in COLUMNS order, JSON columns as text, ``ts`` as the store keeps it.

    An outcome row is lean (its start holds who and what): it keeps the request, op index and verb
    for a human reading raw rows, and a process only when another process recorded it (interrupted).
    Text columns are taken as they are; a store that refuses one retries with ``cleaned`` rows.
    """
    if kind == OUTCOME:
        return (ts, event.request_id, event.op_index, "", "", event.verb, "", "null", event.decision, event.reason,
                event.outcome, event.duration_us, "[]", kind, event.op_id, "",
                process_id if event.outcome == INTERRUPTED else NO_PROCESS, "")
    return (ts, event.request_id, event.op_index, event.principal, event.transport, event.verb, event.args_digest,
            audit_json(event.args_redacted), event.decision, event.reason, event.outcome, event.duration_us,
            audit_json(list(event.write_keys)) if event.write_keys else "[]", kind, event.op_id, event.user,
            process_id, event.client)


def open_values(event: AuditEvent, ts: Any, process_id: int) -> tuple[Any, ...]:
    return (event.op_id, ts, event.request_id, event.op_index, event.verb, process_id)


def written_processes(*batches: Sequence[AuditEvent]) -> set[ProcessId | None]:
    """The processes the events of a write name, each once (a store registers them before the write)."""
    return {event.process for batch in batches for event in batch}


def write_rows(starts: Sequence[AuditEvent], events: Sequence[AuditEvent], outcomes: Sequence[AuditEvent],
               process_ids: Mapping[ProcessId | None, int], ts: Callable[[datetime], Any]
               ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """One write's rows (COLUMNS) and the open ops its starts add (OPEN_COLUMNS); ``ts`` as the store keeps it,
    ``process_ids`` the key of every process in ``written_processes``."""
    rows = [row_values(kind, event, ts(event.ts), process_ids[event.process])
            for kind, batch in ((START, starts), (EVENT, events), (OUTCOME, outcomes)) for event in batch]
    opened = [open_values(event, ts(event.ts), process_ids[event.process]) for event in starts]
    return rows, opened


def process_values(process: ProcessId) -> tuple[Any, ...]:
    return (process.host, process.boot, process.pidns, process.pid, process.start)


def cleaned(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows with every text value as both stores accept it (lone surrogates and NUL spelled out):
    a request id, a principal or an error message can carry anything a client sent."""
    return [tuple(clean_text(value) if isinstance(value, str) else value for value in row) for row in rows]


def open_event(row: tuple[Any, ...], ts: datetime) -> AuditEvent:
    """An open op (OPEN_COLUMNS without process_id, then PROCESS_COLUMNS) as the start of its outcome."""
    op_id, _, request_id, op_index, verb, *process = row
    return AuditEvent(ts=ts, request_id=str(request_id), op_index=int(op_index), principal="", transport="",
                      verb=str(verb), args_digest="", args_redacted=None, decision="allow", reason="", outcome="",
                      duration_us=0, op_id=str(op_id), process=_process(process))


def merged_event(row: tuple[Any, ...], ts: datetime) -> AuditEvent:
    """A merged read's row: COLUMNS up to op_id and user_name, the client, then PROCESS_COLUMNS."""
    (_, request_id, op_index, principal, transport, verb, digest, args, decision, reason, outcome, duration_us,
     write_keys, _, op_id, user, client, *process) = row
    return AuditEvent(ts=ts, request_id=str(request_id), op_index=int(op_index), principal=str(principal),
                      transport=str(transport), verb=str(verb), args_digest=str(digest), args_redacted=_json(args),
                      decision=str(decision), reason=str(reason), outcome=str(outcome), duration_us=int(duration_us),
                      write_keys=tuple(_json(write_keys) or ()), user=str(user), op_id=str(op_id),
                      process=_process(process), client=str(client or ""))


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


def _process(values: list[Any]) -> ProcessId | None:
    host, boot, pidns, pid, start = values
    if pid is None:
        return None
    return ProcessId(host=str(host), boot=str(boot), pidns=str(pidns), pid=int(pid), start=int(start))


def _json(raw: Any) -> Any:
    return orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw  # PostgreSQL hands jsonb back decoded
