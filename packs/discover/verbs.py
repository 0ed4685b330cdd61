"""Verbs of the discover pack: search, lookup, doctor."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field

from khive.context import Context
from khive.verbs import Params, Verb
from packs.discover import render, search
from packs.discover.refs import KINDS

Kind = Literal["wiki", "pattern", "sl_source", "sl_measure", "sl_dimension", "table", "column"]
Format = Literal["json", "text"]
assert set(KINDS) == set(Kind.__args__)  # type: ignore[attr-defined]


class SearchParams(Params):
    query: str = Field(min_length=1, description="what you are looking for, in words")
    kinds: list[Kind] | None = Field(default=None, description="keep only these kinds (filtered after ranking)")
    connection: str | None = Field(default=None, description="scope raw-schema and semantic-layer refs")
    limit: int = Field(default=15, ge=1, le=50)
    explain: bool = Field(default=False, description="lane ranks, raw scores, matched terms and every bonus")
    budget_tokens: int | None = Field(default=None, ge=1, description="shed sections until the payload fits")
    format: Format = "json"
    include_recaps: bool = Field(default=False, description="also recap pages (recent ones first)")


async def search_verb(params: SearchParams, ctx: Context) -> Any:
    """Ranked refs across wiki, semantic layer and raw schema: score 0..1, snippet, matchedOn, uncovered terms."""
    payload = search.run(ctx.runtime.index, query=params.query, kinds=params.kinds, connection=params.connection,
                         limit=params.limit, explain=params.explain, budget_tokens=params.budget_tokens,
                         user=ctx.user_name, include_recaps=params.include_recaps, today=dt.date.today())
    if params.format == "text":
        return {"text": render.search_text(payload), **({"budget": payload["budget"]} if "budget" in payload else {})}
    return payload


VERBS = (
    Verb("discover.search", SearchParams, search_verb, search_verb.__doc__ or ""),
)
