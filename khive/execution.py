"""Where one op's work runs: the threading rule of ADR 0027, as the dispatcher applies it.

One event loop answers every agent of a daemon, so it only does work whose cost has a small fixed
bound: the dispatcher's bookkeeping, parsing a request text of at most ``INLINE_PARSE_CHARS`` (or
checking a request its client parsed, of at most ``INLINE_REQUEST_NODES`` values in a frame of at most
``INLINE_REQUEST_BYTES``), and finishing
(depth guard, dump, presentation) a result of at most ``INLINE_RESULT_NODES`` values.
Everything whose cost grows with its input runs in a worker thread (``khive.threads``):

- a plain ``def`` handler runs in a worker, and its result is finished in the same worker;
- an ``async def`` handler runs on the loop and only awaits (its blocking steps go through
  ``ctx.run_blocking``); its result is finished on the loop when small, else in a worker;
- ``help=true`` builds the parameter schema in a worker; a longer request text is parsed in one.

So ``ping()`` never waits for a worker thread: however busy the workers are, the loop answers it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pydantic import BaseModel

from khive.context import Context
from khive.dsl import jsonform, parse
from khive.dsl.nodes import Request
from khive.errors import OpError, ResultTooDeep
from khive.guard import within_depth
from khive.present import present
from khive.results import HelpResult, check_result
from khive.threads import run_blocking
from khive.values import jsonable
from khive.verbs import Verb

INLINE_PARSE_CHARS = 1024  # the slowest DSL texts parse at ~3.5 us a character: at most ~4 ms on the loop
INLINE_REQUEST_NODES = 1000  # checking a parsed request's shape costs well under 1 us a value
INLINE_REQUEST_BYTES = 16 * 1024  # and its strings up to ~0.1 us a character (a long "$prev..." look-alike)
INLINE_RESULT_NODES = 1000  # finishing costs ~0.5 us a value: at most ~0.5 ms on the loop


_DECLARED: Any = object()  # finish(): check against the verb's own result model


@dataclass(frozen=True, slots=True)
class Finished:
    """One op's result: canonical (what ``$prev`` and the audit see) and as the caller asked to see it."""

    result: Any
    shown: Any


async def run_op(verb: Verb, params: BaseModel | None, ctx: Context) -> Finished:
    """Run ``verb``'s handler (or its help, when ``params`` is None) by the threading rule."""
    if params is None:
        return await run_blocking(lambda: finish(verb, verb.help(), ctx, declared=HelpResult))
    if not verb.runs_on_loop:
        return await run_blocking(_call_and_finish, verb, params, ctx)
    raw = await verb.handler(params, ctx)
    if _at_most(raw, INLINE_RESULT_NODES):
        return finish(verb, raw, ctx)
    return await run_blocking(finish, verb, raw, ctx)


def _call_and_finish(verb: Verb, params: BaseModel, ctx: Context) -> Finished:
    raw = verb.handler(params, ctx)
    if inspect.isawaitable(raw):  # e.g. a callable object with an async __call__: it would never run
        if inspect.iscoroutine(raw):
            raw.close()
        raise OpError(f"{verb.name}: its handler returned an awaitable but is not declared `async def`; "
                      "declare it async def (an orchestrator) or make it return its result",
                      code="internal_error", details={"verb": verb.name})
    return finish(verb, raw, ctx)


def finish(verb: Verb, raw: Any, ctx: Context, *, declared: Any = _DECLARED) -> Finished:
    """Depth guard, dump, the result contract, presentation: everything between a handler's return and the
    envelope. ``declared`` is the model the result is checked against (the verb's, unless said otherwise)."""
    limit = ctx.runtime.max_result_depth
    if not within_depth(raw, limit):
        raise ResultTooDeep(f"{verb.name} returned a result nested deeper than {limit} levels",
                            details={"limit": limit})
    result = raw.model_dump(mode="json", by_alias=True) if isinstance(raw, BaseModel) else raw
    result = jsonable(result)  # khive/values.py: encoded by the value rule, or unencodable_value
    check_result(verb.name, verb.result if declared is _DECLARED else declared, result)  # khive/results.py
    return Finished(result, result if verb.always_verbose else present(result, ctx.presentation))


def _at_most(value: Any, budget: int) -> bool:
    """Whether ``value`` holds at most ``budget`` values; stops counting as soon as it is over."""
    stack = [value]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        if isinstance(item, dict):
            stack.extend(islice(item.values(), budget + 1))  # never copies more than could still fit
        elif isinstance(item, (list, tuple)):
            stack.extend(item[: budget + 1])
        elif isinstance(item, BaseModel):
            stack.extend(item.__dict__.values())
    return True


async def parse_request(text: str) -> Request:
    """``dsl.parse(text)``, in a worker thread unless the text is short (a long text parses for seconds)."""
    if len(text) <= INLINE_PARSE_CHARS:
        return parse(text)
    return await run_blocking(parse, text)


async def request_from_data(data: Any, frame: bytes) -> Request:
    """A request its client parsed, from the JSON form's data (``jsonform.from_data``) and the ``frame`` it
    was decoded from; in a worker thread when it holds many values or the frame is long."""
    if len(frame) <= INLINE_REQUEST_BYTES and _at_most(data, INLINE_REQUEST_NODES):
        return jsonform.from_data(data, frame.decode())
    return await run_blocking(lambda: jsonform.from_data(data, frame.decode()))
