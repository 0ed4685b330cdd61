"""Who is asking, over what, and how the answer should be shaped: handed to every verb handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from khive.progress import ProgressSink, discard_progress

T = TypeVar("T")

if TYPE_CHECKING:
    from khive.runtime import Runtime

# Transports. The two MCP ones form "the MCP wire", where operator verbs are blocked.
CLI = "cli"
MCP_STDIO = "mcp-stdio"
MCP_HTTP = "mcp-http"
WIRE_TRANSPORTS = frozenset({MCP_STDIO, MCP_HTTP})

PRESENTATIONS = ("agent", "verbose", "human")


@dataclass(frozen=True, slots=True)
class Context:
    runtime: Runtime
    principal: str
    transport: str
    presentation: str = "agent"
    request_id: str = ""
    progress: ProgressSink = discard_progress
    extra: dict[str, Any] | None = None  # transport-specific handles (e.g. the MCP session)
    user: str = ""  # whose user-scope knowledge applies; default: the principal's name
    client: str = ""  # what the MCP client calls itself: recorded in the audit, never used to authorise

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
