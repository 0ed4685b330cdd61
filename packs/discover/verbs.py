"""Verbs of the discover pack: search, lookup, doctor."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import Field

from khive import sink
from khive.context import Context
from khive.limits import BUDGET_TOKENS_MAX, QueryText, searched
from khive.verbs import NoParams, Params, Verb
from packs.discover import doctor, lookup, render, search

Kind = Literal["wiki", "pattern", "sl_source", "sl_measure", "sl_dimension", "table", "column"]
Format = Literal["json", "text"]


class SearchParams(Params):
    query: QueryText = Field(description="what you are looking for, in words")
    kinds: list[Kind] | None = Field(default=None, description="keep only these kinds (filtered after ranking)")
    connection: str | None = Field(default=None, description="scope raw-schema and semantic-layer refs")
    limit: int = Field(default=15, ge=1, le=50)
    explain: bool = Field(default=False, description="lane ranks, raw scores, matched terms and every bonus")
    budget_tokens: int | None = Field(default=None, ge=1, le=BUDGET_TOKENS_MAX,
                                      description="shed sections until the payload fits")
    format: Format = "json"
    include_recaps: bool = Field(default=False, description="also recap pages (recent ones first)")
    save_to: str | None = Field(default=None, description=sink.SAVE_TO_DOC + " (one row per ref)")


def search_verb(params: SearchParams, ctx: Context) -> Any:
    """Ranked refs across wiki, semantic layer and raw schema: score 0..1, snippet, matchedOn, uncovered terms."""
    payload = search.run(ctx.runtime.index, query=params.query, kinds=params.kinds, connection=params.connection,
                         limit=params.limit, explain=params.explain, budget_tokens=params.budget_tokens,
                         user=ctx.user_name, include_recaps=params.include_recaps, today=dt.date.today())
    if params.save_to:
        payload = sink.save_records(ctx.runtime.files, params.save_to, payload, "refs", author=ctx.principal)
    if params.format == "text":
        return {"text": render.search_text(payload), **({"budget": payload["budget"]} if "budget" in payload else {}),
                **({"savedTo": payload["savedTo"]} if "savedTo" in payload else {})}
    return payload


class LookupParams(Params):
    id: Annotated[str, searched("the id")] = Field(  # an unknown id is searched for, word by word
        min_length=1, description="a ref id or docId, a qualified table/column name, a wiki key, an SL name")
    depth: int = Field(default=1, ge=1, le=3, description="how many hops of neighbours")
    connection: str | None = Field(default=None, description="when a name exists in several connections")
    budget_tokens: int | None = Field(default=None, ge=1, le=BUDGET_TOKENS_MAX,
                                      description="shed sections until the payload fits")
    format: Format = "json"


def lookup_verb(params: LookupParams, ctx: Context) -> Any:
    """One entity: neighbours by relation within depth, covering documents, usage, evidence (paths, hashes)."""
    payload = lookup.run(ctx.runtime.index, ctx.runtime.files, ident=params.id, depth=params.depth,
                         connection=params.connection, user=ctx.user_name, budget_tokens=params.budget_tokens)
    if params.format == "text":
        return {"text": render.lookup_text(payload), **({"budget": payload["budget"]} if "budget" in payload else {})}
    return payload


def doctor_verb(params: NoParams, ctx: Context) -> Any:
    """What retrieval can see: reachability, connectivity, hit@3 over bench/retrieval-suite.json, a grade, findings."""
    index, today = ctx.runtime.index, dt.date.today()

    def run_search(*, query: str, kinds: list[str] | None, connection: str | None) -> dict[str, Any]:
        return search.run(index, query=query, kinds=kinds, connection=connection, limit=3, explain=False,
                          budget_tokens=None, user=ctx.user_name, include_recaps=False, today=today)

    return doctor.run(index, run_search)


VERBS = (
    Verb("discover.search", SearchParams, search_verb, search_verb.__doc__ or "",
         write_keys=lambda p: sink.write_key(p.save_to), write_key_rule="export:exports/<save_to> (only with save_to)"),
    Verb("discover.lookup", LookupParams, lookup_verb, lookup_verb.__doc__ or ""),
    Verb("discover.doctor", NoParams, doctor_verb, doctor_verb.__doc__ or ""),
)
