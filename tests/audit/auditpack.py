"""An in-process pack for the write-ahead audit tests: verbs that look at the trail while they run,
block until released, return values JSON cannot hold, and count their runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from khive.audit.store import AuditQuery, AuditStore
from khive.context import Context
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Params, Verb


class EchoParams(Params):
    x: Any = None


class AuditPack:
    """``second_store`` opens the trail through another connection, as another process would."""

    def __init__(self, second_store: Callable[[], AuditStore] | None = None):
        self.second_store = second_store
        self.runs: list[Any] = []
        self.started: anyio.Event | None = None
        self.release: anyio.Event | None = None

    async def peek(self, params: EchoParams, ctx: Context) -> dict[str, Any]:
        """What another connection sees of this request while this op runs."""
        assert self.second_store is not None
        store = self.second_store()
        try:
            events = await store.query(AuditQuery(request_id=ctx.request_id))
        finally:
            await store.aclose()
        return {"seen": [{"op_index": e.op_index, "verb": e.verb, "outcome": e.outcome, "args": e.args_redacted}
                         for e in sorted(events, key=lambda e: e.op_index)]}

    async def block(self, params: EchoParams, ctx: Context) -> dict[str, Any]:
        assert self.started is not None and self.release is not None
        self.started.set()
        await self.release.wait()
        return {}

    async def huge(self, params: EchoParams, ctx: Context) -> dict[str, Any]:
        return {"n": 2**70, "s": "lone \ud800 surrogate", "nul": "a\x00b"}

    async def count(self, params: EchoParams, ctx: Context) -> dict[str, Any]:
        self.runs.append(params.x)
        return {"runs": len(self.runs)}

    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="a", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("a.peek", EchoParams, self.peek, "What the trail shows of this request."),
                Verb("a.block", EchoParams, self.block, "Wait until released."),
                Verb("a.huge", EchoParams, self.huge, "Values JSON cannot hold."),
                Verb("a.count", EchoParams, self.count, "Count runs.", write_keys=lambda p: [f"a:{p.x}"],
                     read_only=False)]
