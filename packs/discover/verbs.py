"""Verbs of the discover pack: search, lookup, doctor."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import Field

from khive import sink
from khive.context import Context
from khive.limits import BUDGET_TOKENS_MAX, QueryText, searched
from khive.verbs import NoParams, Params, Verb
from packs.discover import doctor, lookup, pages, render, search
from packs.discover.results import DoctorResult, LookupResult, SearchResult, TextResult

Kind = Literal["wiki", "pattern", "sl_source", "sl_measure", "sl_dimension", "table", "column"]
PageKind = Literal["note", "warning", "rule", "pattern", "recap"]  # the wiki's page kinds
Format = Literal["json", "text"]
Label = Annotated[str, Field(min_length=1, max_length=200)]


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
    scopes: list[Label] | None = Field(
        default=None, max_length=20,
        description="pages only, a hard filter: tiers (global, user), key prefixes (sales) or paths "
                    "(wiki/global/sales); a page stays when it matches one. Default: inferred, pages there lifted")
    page_kind: PageKind | None = Field(default=None, description="pages only: keep pages of this kind")
    relevance_phases: list[Label] | None = Field(
        default=None, max_length=10,
        description="the phase(s) of the work: pages marked for one are lifted, pages marked only for others "
                    "dropped")
    render_bodies: bool = Field(default=False, description="also the text of the first 5 pages and sources "
                                                           "(capped), in one answer")
    save_to: str | None = Field(default=None, description=sink.SAVE_TO_DOC + " (one row per ref)")


def search_verb(params: SearchParams, ctx: Context) -> Any:
    """Ranked refs across wiki, SL and raw schema; what the best ones miss, a low-confidence tier, questions."""
    page_filter = pages.PageFilter(
        scopes=pages.parse_scopes(params.scopes, ctx.user_name) if params.scopes is not None else None,
        page_kind=params.page_kind, phases=list(params.relevance_phases or []))
    payload = search.run(ctx.runtime.index, ctx.runtime.files, query=params.query, kinds=params.kinds,
                         connection=params.connection, limit=params.limit, explain=params.explain,
                         budget_tokens=params.budget_tokens, user=ctx.user_name, include_recaps=params.include_recaps,
                         today=dt.date.today(), page_filter=page_filter, render_bodies=params.render_bodies)
    if params.save_to:
        payload = sink.save_records(ctx.runtime.files, params.save_to, payload, "refs", author=ctx.principal)
    if params.format == "text":
        return {"text": render.search_text(payload), **({"budget": payload["budget"]} if "budget" in payload else {}),
                **({"savedTo": payload["savedTo"]} if "savedTo" in payload else {})}
    return payload


class LookupParams(Params):
    id: Annotated[str, searched("the id")] = Field(  # an unknown id is searched for, word by word
        min_length=1, description="a ref id or docId, a project file path (with #entry for one table or member), "
                                  "a qualified table/column name, a wiki key, an SL name or a declared alias")
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
    """What retrieval can see, measured: a score of 100, a grade and why, findings most severe first."""
    index, today = ctx.runtime.index, dt.date.today()

    def run_search(*, query: str, kinds: list[str] | None, connection: str | None) -> dict[str, Any]:
        return search.run(index, ctx.runtime.files, query=query, kinds=kinds, connection=connection, limit=3,
                          explain=False,
                          budget_tokens=None, user=ctx.user_name, include_recaps=False, today=today)

    return doctor.run(index, run_search, ctx.runtime.config.connections)


VERBS = (
    Verb("discover.search", SearchParams, search_verb, search_verb.__doc__ or "",
         write_keys=lambda p: sink.write_key(p.save_to), write_key_rule="export:exports/<save_to> (only with save_to)",
         result=SearchResult | TextResult),
    Verb("discover.lookup", LookupParams, lookup_verb, lookup_verb.__doc__ or "", result=LookupResult | TextResult),
    Verb("discover.doctor", NoParams, doctor_verb, doctor_verb.__doc__ or "", result=DoctorResult),
)
