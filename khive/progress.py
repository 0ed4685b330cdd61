"""One small progress API for long-running verbs (scan, ingest).

A handler calls ``await ctx.progress(done, total, message)``; the composition root decides
where it goes: MCP progress notifications, a rich progress bar in the CLI, a recorder in tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]


async def discard_progress(done: float, total: float | None, message: str | None) -> None:
    return None


@dataclass
class ProgressRecorder:
    """A sink that keeps every report, for tests and for replay."""

    events: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.events.append((done, total, message))
