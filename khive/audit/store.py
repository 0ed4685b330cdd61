"""The audit store interface and its query filter. Stores are append-only.

``write`` appends in ONE transaction, committed before it returns: op starts (each also listed
as open until its outcome arrives), complete events, and outcomes (which close their starts). A
write either commits or raises ``audit_store_unavailable``; cancelling its caller does not leave
that unknown (the stores do not let a cancellation interrupt it).
``recover`` appends an ``interrupted`` outcome for every open op whose process is gone.
``query`` reads one merged event per op, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from khive.audit.events import AuditEvent


@dataclass(frozen=True, slots=True)
class AuditQuery:
    verb: str | None = None  # glob
    principal: str | None = None  # glob
    outcome: str | None = None  # ok, an error code, aborted, interrupted, running
    since: datetime | None = None
    until: datetime | None = None
    request_id: str | None = None
    limit: int = 100


class AuditStore(Protocol):
    """Append starts, events and outcomes; recover the ops of dead processes; read merged events."""

    async def write(self, *, starts: Sequence[AuditEvent] = (), events: Sequence[AuditEvent] = (),
                    outcomes: Sequence[AuditEvent] = ()) -> None: ...

    async def append(self, events: Sequence[AuditEvent]) -> None: ...

    async def recover(self) -> int: ...

    async def query(self, query: AuditQuery) -> list[AuditEvent]: ...

    async def count(self) -> int: ...

    async def aclose(self) -> None: ...


def glob_to_like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")
