"""Verbs of the core pack."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from khive.audit.store import AuditQuery
from khive.context import Context
from khive.overview import collect_overview
from khive.verbs import NoParams, Params, Verb, Visibility
from packs.core.results import AuditQueryResult, OverviewResult, PingResult, VerbsResult


class VerbsParams(Params):
    pack: str | None = Field(default=None, description="only verbs of this pack")


async def list_verbs(params: VerbsParams, ctx: Context) -> dict[str, Any]:
    """List every verb with its one-line doc and visibility."""
    # async and inline: it reads only the in-memory registry, so it never waits for a worker (ADR 0027)
    catalogue = [
        {"verb": verb.name, "pack": verb.pack, "doc": verb.summary, "visibility": verb.visibility.value}
        for name, verb in sorted(ctx.runtime.registry.verbs.items())
        if params.pack is None or verb.pack == params.pack
    ]
    return {"verbs": catalogue, "count": len(catalogue), "help": "any.verb(help=true) shows a verb's parameters"}


class PingParams(Params):
    echo: Any = Field(default=None, description="returned unchanged")


async def ping(params: PingParams, ctx: Context) -> dict[str, Any]:
    """Answer immediately; echoes its argument (a no-op for checks and benchmarks)."""
    # async: answered by the event loop itself, however busy the worker threads are (ADR 0027)
    return {"pong": True, "echo": params.echo}


def overview(params: NoParams, ctx: Context) -> dict[str, Any]:
    """What is here: connections and what each holds, last scan and ingest, counts, and what is stale (cheap)."""
    return collect_overview(ctx.runtime)  # file reads: a plain def runs in a worker thread (ADR 0027)


_GLOB_CHARS = 1_000  # SQLite refuses a LIKE pattern of 50,000 bytes as "too complex" (an internal error)


class AuditQueryParams(Params):
    verb: str | None = Field(default=None, max_length=_GLOB_CHARS, description="verb glob, e.g. wiki.*")
    principal: str | None = Field(default=None, max_length=_GLOB_CHARS, description="principal glob")
    outcome: str | None = Field(default=None, description="ok, an error code, aborted, interrupted, running, "
                                                          "parse_error")
    since: datetime | None = Field(default=None, description="ISO time, inclusive")
    until: datetime | None = Field(default=None, description="ISO time, exclusive")
    request_id: str | None = None
    limit: int = Field(default=100, ge=1, le=10_000)


async def audit_query(params: AuditQueryParams, ctx: Context) -> dict[str, Any]:
    """Read the audit trail back, newest first, one event per op (operator)."""
    # async: the audit store's API is async (the PostgreSQL store awaits its driver; ADR 0027)
    events = await ctx.runtime.audit.query(AuditQuery(**params.model_dump()))
    return {"events": [event.to_dict() for event in events], "count": len(events)}


VERBS = (
    Verb("verbs", VerbsParams, list_verbs, list_verbs.__doc__ or "", result=VerbsResult),
    Verb("ping", PingParams, ping, ping.__doc__ or "", result=PingResult),
    Verb("overview", NoParams, overview, overview.__doc__ or "", result=OverviewResult),
    Verb("audit.query", AuditQueryParams, audit_query, audit_query.__doc__ or "",
         visibility=Visibility.OPERATOR, result=AuditQueryResult),
)

__all__ = ["VERBS", "NoParams"]
