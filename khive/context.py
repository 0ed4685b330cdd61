"""Who is asking, over what, and how the answer should be shaped: handed to every verb handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from khive.progress import ProgressSink, discard_progress
from khive.transports import CLI, MCP_HTTP, MCP_STDIO, PRESENTATIONS, WIRE_TRANSPORTS

T = TypeVar("T")

if TYPE_CHECKING:
    from khive.services import Sampler, Services

__all__ = ["CLI", "MCP_HTTP", "MCP_STDIO", "PRESENTATIONS", "WIRE_TRANSPORTS", "Context"]


@dataclass(frozen=True, slots=True)
class Context:
    runtime: Services  # the shared services (khive/services.py); khive.runtime.Runtime in production
    principal: str
    transport: str
    presentation: str = "agent"
    request_id: str = ""
    progress: ProgressSink = discard_progress
    sampler: Sampler | None = None  # the MCP client's model, when the request came over MCP with a session
    user: str = ""  # whose user-scope knowledge applies; default: the principal's name
    client: str = ""  # what the MCP client calls itself: recorded in the audit, never used to authorise
    row_share: int | None = None  # bytes of rows each op of an MCP request may answer with (its share of the answer)

    @property
    def user_name(self) -> str:
        return self.user or self.principal.split(":", 1)[-1] or "anonymous"

    def with_(self, **changes: Any) -> Context:
        return replace(self, **changes)

    @property
    def on_wire(self) -> bool:
        return self.transport in WIRE_TRANSPORTS

    async def run_blocking(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """For async handlers: ``fn(*args, **kwargs)`` in a worker thread, so the event loop never waits on it."""
        from khive import threads  # not at import time: the CLI's forwarding path loads no event loop library

        return await threads.run_blocking(fn, *args, **kwargs)
