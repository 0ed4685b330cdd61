"""Pack bugs outside any handler's own error handling, for the crash-isolation tests; loaded next to
daemonpack with KHIVE_EXTRA_PACKS=daemonpack:PACK,faultpack:PACK.

``f.unencodable`` answers with a value no JSON encoder takes; ``f.oddkeys`` declares a write key that
is not a string, so the dispatcher itself (its audit) fails after the op ran.
"""

from __future__ import annotations

from typing import Any

from khive.context import Context
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import NoParams, Verb


class NotJson:
    """Neither orjson nor anything else knows how to write this: not even its text form exists."""

    def __str__(self) -> str:
        raise RuntimeError("no text form")

    __repr__ = __str__


async def unencodable(params: NoParams, ctx: Context) -> dict[str, Any]:
    return {"value": NotJson()}


async def oddkeys(params: NoParams, ctx: Context) -> dict[str, Any]:
    return {"ran": True}


class FaultPack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="f", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("f.unencodable", NoParams, unencodable, "Answer with a value JSON cannot hold."),
                Verb("f.oddkeys", NoParams, oddkeys, "Declare a write key that is not a string.",
                     write_keys=lambda params: [NotJson()], read_only=False)]


PACK = FaultPack()
