"""How the site reads the project: the public verbs, through ``dispatch``, as one principal.

Nothing here opens a project file or imports a pack: every page is made of verb results, so the
gate, the value rule (khive/values.py), redaction (khive/redact.py) and the audit apply to what the
site shows exactly as they do to what an agent sees. Results are taken as their JSON form (what
the MCP wire carries), so a verb that returns a typed model reads the same as one returning a dict.
A failed op is kept as a :class:`Failure` and shown on the page that needed it, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import MAX_OPS
from khive.execution import parse_request
from khive.identity import os_user
from khive.runtime import Runtime

SITE_CLIENT = "khive-site"  # the audit's `client` of every op the site runs


@dataclass(frozen=True, slots=True)
class Failure:
    """An op that did not answer: its verb, error code and message (already redacted by the dispatcher)."""

    verb: str
    code: str
    message: str

    def describe(self) -> str:
        return f"{self.verb} failed: {self.code}: {self.message}"


Answer = dict[str, Any] | Failure
Call = tuple[str, Mapping[str, Any]]


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _plain(value: object) -> Any:
    return orjson.loads(orjson.dumps(value, default=_json_default))


class Reader:
    """Runs verbs for the site as ``ctx``'s principal; answers are remembered for the reader's lifetime."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._memo: dict[bytes, Answer] = {}

    @property
    def principal(self) -> str:
        return self.ctx.principal

    async def call(self, verb: str, **args: Any) -> Answer:
        (answer,) = await self.many([(verb, args)])
        return answer

    async def many(self, calls: Sequence[Call]) -> list[Answer]:
        """Answers in the order of ``calls``; the ones not yet known run as parallel requests of up to MAX_OPS."""
        keys = [orjson.dumps([verb, dict(args)], option=orjson.OPT_SORT_KEYS) for verb, args in calls]
        missing = list(dict.fromkeys(key for key in keys if key not in self._memo))
        for start in range(0, len(missing), MAX_OPS):
            batch = missing[start:start + MAX_OPS]
            ops = [{"verb": verb, "args": args} for verb, args in (orjson.loads(key) for key in batch)]
            envelope = await dispatch(await parse_request(orjson.dumps(ops).decode()), self.ctx)
            for key, entry in zip(batch, _plain(envelope)["results"], strict=True):
                self._memo[key] = _answer(entry)
        return [self._memo[key] for key in keys]


def _answer(entry: Mapping[str, Any]) -> Answer:
    if entry.get("ok"):
        result = entry.get("result")
        return result if isinstance(result, dict) else {"value": result}
    error = entry.get("error") or {}
    return Failure(str(entry.get("verb", "")), str(error.get("code", "aborted")),
                   str(error.get("message", "the op did not run")))


def operator_reader(runtime: Runtime) -> Reader:
    """The site as the operator sees it: the CLI's principal (the OS user running khive), the CLI transport."""
    user = os_user()
    return Reader(Context(runtime, f"operator:{user}", CLI, presentation="verbose", client=SITE_CLIENT, user=user))


def principal_reader(runtime: Runtime, principal: str, transport: str) -> Reader:
    """The site as a token's principal sees it (``khive serve --http --site``): the gate decides per verb."""
    return Reader(Context(runtime, principal, transport, presentation="verbose", client=SITE_CLIENT))
