"""Run a parsed request: resolve, validate, substitute ``$prev``, claim write keys, gate, audit the
start, handle, guard, audit the outcome; then shape the envelope.

    {"results": [...], "summary": {"total", "succeeded", "failed", "aborted"},
     "status": "success" | "partial" | "failed", "requestId": "..."}

Parallel ops run concurrently (at most ``server.max_parallel_ops`` of one request at a time, started in
input order) and never abort each other; a chain runs in order and aborts the rest after its first
failure. Preparation (everything up to the gate) happens in input order, so write-key claims are
deterministic: a later op claiming an earlier op's key fails. The audit is
write-ahead (ADR 0029): an op runs only after its start event is committed.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from khive.answer_fit import fit_answer
from khive.audit.trail import RequestTrail
from khive.context import Context
from khive.dsl.nodes import Mode, Op, Ref, Request
from khive.envelope import summarize
from khive.errors import (
    QUOTED_CHARS,
    InvalidArgs,
    KhiveError,
    LimitExceeded,
    OpError,
    PermissionDenied,
    RefError,
    WriteConflict,
    bounded,
)
from khive.execution import run_op
from khive.limits import use as use_limits
from khive.values import ANSWER_ROW_BYTES, MIN_ROW_SHARE
from khive.verbs import Verb

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Outcome:
    """What happened to one op; becomes one result entry and one audit event."""

    verb: str
    args: Mapping[str, Any]
    ok: bool = False
    result: Any = None  # canonical (pre-presentation) result
    shown: Any = None  # the result as the caller's presentation shows it
    error: KhiveError | None = None
    aborted: bool = False
    decision: str = "not-evaluated"
    reason: str = ""
    write_keys: tuple[str, ...] = ()
    duration_us: int = 0
    verb_decl: Verb | None = None


@dataclass(slots=True)
class _Prepared:
    verb: Verb
    params: BaseModel | None  # None for help=true
    outcome: _Outcome


async def dispatch(request: Request, ctx: Context) -> dict[str, Any]:
    """Dispatch every op of ``request`` and return the envelope (a plain dict)."""
    use_limits(ctx.runtime.limits)  # for argument validation here and in the worker threads of its ops
    request_id = ctx.request_id or uuid.uuid4().hex
    if not ctx.request_id:
        ctx = ctx.with_(request_id=request_id)
    if ctx.on_wire and ctx.row_share is None:  # one MCP answer carries every op's rows: they share its budget
        ctx = ctx.with_(row_share=max(MIN_ROW_SHARE, ANSWER_ROW_BYTES // max(1, len(request.ops))))
    trail = RequestTrail(ctx.runtime.audit, request_id=request_id, principal=ctx.principal,
                         transport=ctx.transport, user=ctx.user_name, client=ctx.client,
                         redactor=ctx.runtime.redactor)
    try:
        if request.mode is Mode.CHAIN:
            outcomes = await _run_chain(request.ops, ctx, trail)
        else:
            outcomes = await _run_parallel(request.ops, ctx, trail)
    except BaseException as exc:  # ops that started get an outcome even when the request dies
        with anyio.CancelScope(shield=True):
            await trail.close(failure=exc)
        raise
    await trail.close(outcomes)
    envelope = _envelope(outcomes, ctx, request_id)
    return fit_answer(envelope) if ctx.on_wire else envelope  # an MCP answer over 1 MiB reaches no client


async def _run_parallel(ops: tuple[Op, ...], ctx: Context, trail: RequestTrail) -> list[_Outcome]:
    claimed: dict[str, int] = {}
    prepared: list[_Prepared | None] = []
    outcomes: list[_Outcome] = []
    for index, op in enumerate(ops):
        item = _prepare(op, op.args, ctx)
        if isinstance(item, _Outcome):
            prepared.append(None)
            outcomes.append(item)
            continue
        conflict = next((key for key in item.outcome.write_keys if key in claimed), None)
        if conflict is not None:
            earlier = claimed[conflict]
            item.outcome.error = WriteConflict(
                f"write key {conflict!r} is already claimed by op {earlier} ({ops[earlier].verb}) in this batch",
                details={"write_key": conflict, "claimed_by": {"index": earlier, "verb": ops[earlier].verb}},
            )
            prepared.append(None)
            outcomes.append(item.outcome)
            continue
        for key in item.outcome.write_keys:
            claimed[key] = index
        prepared.append(item)
        outcomes.append(item.outcome)

    started = await _write_ahead(trail, list(enumerate(outcomes)))  # one transaction, before any op runs
    runnable = [(index, item) for index, item in enumerate(prepared)
                if started and item is not None and item.outcome.decision == "allow"]
    if len(runnable) == 1:
        await _execute_audited(*runnable[0], ctx, trail)
    elif runnable:
        # At most max_parallel_ops of one request run at once (ADR 0028): a few workers take the ops in
        # input order, so one big batch cannot hold every worker thread and database connection.
        queue = iter(runnable)

        async def worker() -> None:
            for index, item in queue:
                await _execute_audited(index, item, ctx, trail)

        async with anyio.create_task_group() as group:
            for _ in range(min(ctx.runtime.max_parallel_ops, len(runnable))):
                group.start_soon(worker)
    return outcomes


async def _run_chain(ops: tuple[Op, ...], ctx: Context, trail: RequestTrail) -> list[_Outcome]:
    outcomes: list[_Outcome] = []
    prev: Any = None
    failed_at: int | None = None
    for index, op in enumerate(ops):
        if failed_at is not None:
            outcomes.append(_Outcome(op.verb, op.args, aborted=True,
                                     reason=f"aborted: op {failed_at} of the chain failed"))
            continue
        try:
            args = _substitute(op.args, prev) if index else op.args
        except RefError as exc:
            outcomes.append(_Outcome(op.verb, op.args, error=exc))
            failed_at = index
            continue
        item = _prepare(op, args, ctx)
        outcome = item if isinstance(item, _Outcome) else item.outcome
        # Its start (args as they are after $prev) shares a transaction with the previous op's outcome.
        started = await _write_ahead(trail, [(index, outcome)])
        if started and not isinstance(item, _Outcome) and outcome.decision == "allow":
            await _execute(item, ctx)
            trail.finished(index)
        outcomes.append(outcome)
        if outcome.ok:
            prev = outcome.result
        else:
            failed_at = index
    return outcomes


def _prepare(op: Op, args: Mapping[str, Any], ctx: Context) -> _Prepared | _Outcome:
    """Resolve, validate, compute write keys and ask the gate; an _Outcome means it stops here."""
    runtime = ctx.runtime
    outcome = _Outcome(op.verb, args)
    try:
        verb = runtime.registry.resolve(op.verb)
    except OpError as exc:
        outcome.error = exc
        return outcome
    outcome.verb_decl = verb
    help_only = args.get("help") is True
    params: BaseModel | None = None
    if not help_only:
        try:
            params = verb.params.model_validate(dict(args))
        except ValidationError as exc:
            outcome.error = _invalid_args(verb, exc)
            return outcome
    try:  # a pack's write-key rule (or the gate) failing fails this op only, like a failing handler
        if params is not None and verb.write_keys is not None:
            outcome.write_keys = tuple(verb.write_keys(params))
            if not all(isinstance(key, str) for key in outcome.write_keys):
                raise TypeError(f"write keys must be strings, got {outcome.write_keys!r:.200}")
        decision = runtime.gate.decide(ctx.principal, ctx.transport, verb, help_only=help_only)
    except KhiveError as exc:
        outcome.error = exc
        return outcome
    except Exception as exc:
        log.exception("preparing %s failed", verb.name)
        outcome.error = OpError(f"{verb.name} failed before it ran: {type(exc).__name__}: {exc}",
                                code="internal_error", details={"stage": "prepare"})
        return outcome
    outcome.decision = "allow" if decision.allowed else "deny"
    outcome.reason = decision.reason
    if not decision.allowed:
        outcome.error = PermissionDenied(f"{verb.name} denied: {decision.reason}",
                                         details={"verb": verb.name, "reason": decision.reason})
        return outcome
    return _Prepared(verb, params, outcome)


async def _write_ahead(trail: RequestTrail, ops: list[tuple[int, _Outcome]]) -> bool:
    """Commit the start events of ``ops`` (and the events of those that stop here); False: nothing may run."""
    try:
        await trail.before(ops)
    except KhiveError as exc:  # audit_store_unavailable: an op that cannot be audited does not run
        for _, outcome in ops:
            if outcome.error is None and not outcome.aborted:
                outcome.error = exc
        return False
    return True


async def _execute_audited(index: int, item: _Prepared, ctx: Context, trail: RequestTrail) -> None:
    await _execute(item, ctx)
    await trail.after(index)


async def _execute(item: _Prepared, ctx: Context) -> None:
    outcome, verb = item.outcome, item.verb
    started = time.perf_counter_ns()
    try:
        finished = await run_op(verb, item.params, ctx)  # in a worker thread unless it is async (ADR 0027)
        outcome.result, outcome.shown = finished.result, finished.shown
        outcome.ok = True
    except KhiveError as exc:  # OpError and the shared services' errors (connection_failed, ...)
        outcome.error = exc
    except Exception as exc:  # a pack bug must not take the request down; it is logged and reported
        log.exception("verb %s failed", verb.name)
        outcome.error = OpError(f"{verb.name} failed: {type(exc).__name__}: {exc}", code="internal_error")
    finally:
        outcome.duration_us = (time.perf_counter_ns() - started) // 1000


def _substitute(value: Any, prev: Any) -> Any:
    if isinstance(value, Ref):
        return _follow(value, prev)
    if isinstance(value, Mapping):
        return {key: _substitute(item, prev) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, prev) for item in value]
    return value


def _follow(ref: Ref, prev: Any) -> Any:
    current = prev
    walked = "$prev"
    for step in ref.path:
        if isinstance(step, int):
            if not isinstance(current, list):
                raise RefError(f"{ref}: {walked} is {_kind(current)}, not a list", details=_ref_details(ref, current))
            if step >= len(current):
                raise RefError(f"{ref}: index {step} is out of range ({walked} has {len(current)} items)",
                               details=_ref_details(ref, current))
            current = current[step]
            walked += f"[{step}]"
        else:
            if not isinstance(current, dict) or step not in current:
                fields = sorted(current) if isinstance(current, dict) else []
                shown = ", ".join(fields) if fields else f"none ({walked} is {_kind(current)})"
                raise RefError(f"{ref}: {walked} has no field {step!r}; available fields: {shown}",
                               details=_ref_details(ref, current))
            current = current[step]
            walked += f".{step}"
    return current


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "null" if value is None else f"a {type(value).__name__}"


def _ref_details(ref: Ref, at: Any) -> dict[str, Any]:
    return {"ref": str(ref), "available": sorted(at) if isinstance(at, dict) else None}


_PROBLEMS_SHOWN = 10  # of one op's invalid arguments, in its error


def _invalid_args(verb: Verb, exc: ValidationError) -> InvalidArgs:
    problems = []
    errors = exc.errors(include_url=False)
    for error in errors[:_PROBLEMS_SHOWN]:
        field = bounded(".".join(str(part) for part in error["loc"]) or "(arguments)", QUOTED_CHARS)
        if error["type"] == "extra_forbidden":
            known = ", ".join(sorted(verb.params.model_fields)) or "none"
            message = f"unknown argument {field!r}; {verb.name} takes: {known}"
        elif error["type"] == "missing":
            message = f"missing required argument {field!r}"
        else:
            message = f"argument {field!r}: {error['msg']} (got {error.get('input')!r:.80})"
        limit = error.get("ctx", {}) if error["type"] == "limit_exceeded" else {}  # which limit, its value, the fix
        problems.append({"field": field, "message": message, "type": error["type"], **limit})
    summary = "; ".join(problem["message"] for problem in problems)
    unshown = len(errors) - len(problems)
    if unshown:  # thousands of unknown arguments or bad items: the first ones say what is wrong
        summary += f"; and {unshown:,} more problems"
    kind = LimitExceeded if all(p["type"] == "limit_exceeded" for p in problems) else InvalidArgs
    return kind(f"{verb.name}: {summary}", details={"verb": verb.name, "errors": problems, "more_errors": unshown})


def _envelope(outcomes: list[_Outcome], ctx: Context, request_id: str) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for outcome in outcomes:
        if outcome.aborted:
            results.append({"ok": False, "verb": outcome.verb, "aborted": True})
        elif outcome.ok:
            results.append({"ok": True, "verb": outcome.verb, "result": outcome.shown})
        else:
            error = outcome.error or OpError("unknown failure", code="internal_error")
            # a database error can echo a literal, a path a token: errors leave redacted (ADR 0035)
            results.append({"ok": False, "verb": outcome.verb, "error": ctx.runtime.redactor.args(error.to_dict())})
    return {"results": results, **summarize(results), "requestId": request_id}
