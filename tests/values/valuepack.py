"""A pack with values nothing can encode, loaded through KHIVE_EXTRA_PACKS=valuepack:PACK.

``v.shape_rows`` hands a driver's rows with such a value to the shared ``query_result`` (as a driver
does); ``v.shape_result`` returns one straight from its handler, which the dispatcher's safety net meets.
"""

from __future__ import annotations

import time
from typing import Any

from khive.connections.types import query_result
from khive.context import Context
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Params, Verb


class Shape:
    """A driver value whose text form itself fails."""

    def __str__(self) -> str:
        raise ValueError("this shape has no text form")


class NoParams(Params):
    pass


async def shape_rows(params: NoParams, ctx: Context) -> dict[str, Any]:
    result = query_result([{"name": "id", "type": "int4"}, {"name": "outline", "type": "geometry"}],
                          [[1, Shape()]], 10, time.perf_counter())
    return {"rows": result.rows}


async def shape_result(params: NoParams, ctx: Context) -> dict[str, Any]:
    return {"found": [{"outline": Shape()}]}


class ValuePack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="v", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("v.shape_rows", NoParams, shape_rows, "Rows holding a value without a text form."),
                Verb("v.shape_result", NoParams, shape_result, "A result holding a value without a text form.")]


PACK = ValuePack()
