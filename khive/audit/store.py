"""The audit store interface and its query filter. Stores are append-only."""

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
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    request_id: str | None = None
    limit: int = 100


class AuditStore(Protocol):
    """Append a request's events in one batch; read them back newest first."""

    async def append(self, events: Sequence[AuditEvent]) -> None: ...

    async def query(self, query: AuditQuery) -> list[AuditEvent]: ...

    async def count(self) -> int: ...

    async def aclose(self) -> None: ...


def glob_to_like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")
