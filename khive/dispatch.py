"""Run a parsed request: resolve, validate, substitute ``$prev``, claim write keys, gate, handle,
guard, audit; then shape the envelope.

    {"results": [...], "summary": {"total", "succeeded", "failed", "aborted"},
     "status": "success" | "partial" | "failed", "request_id": "..."}

Parallel ops run concurrently (at most ``server.max_parallel_ops`` of one request at a time, started in
input order) and never abort each other; a chain runs in order and aborts the rest after its first
failure. Preparation (everything up to the gate) happens in input order, so write-key claims are
deterministic: a later op claiming an earlier op's key fails.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from khive.audit.events import AuditEvent, digest_args, redact
from khive.context import Context
from khive.dsl.nodes import Mode, Op, Ref, Request
from khive.errors import InvalidArgs, KhiveError, OpError, PermissionDenied, RefError, ResultTooDeep, WriteConflict
from khive.guard import within_depth
from khive.present import present
from khive.verbs import Verb

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Outcome:
    """What happened to one op; becomes one result entry and one audit event."""

    verb: str
    args: Mapping[str, Any]
    ok: bool = False
    result: Any = None  # canonical (pre-presentation) result
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
    request_id = ctx.request_id or uuid.uuid4().hex
    if not ctx.request_id:
        ctx = ctx.with_(request_id=request_id)
    if request.mode is Mode.CHAIN:
        outcomes = await _run_chain(request.ops, ctx)
    else:
        outcomes = await _run_parallel(request.ops, ctx)
    await _audit(outcomes, ctx)
    return _envelope(outcomes, ctx, request_id)


async def _run_parallel(ops: tuple[Op, ...], ctx: Context) -> list[_Outcome]:
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

    runnable = [item for item in prepared if item is not None and item.outcome.decision == "allow"]
    if len(runnable) == 1:
        await _execute(runnable[0], ctx)
    elif runnable:
        # At most max_parallel_ops of one request run at once (ADR 0028): a few workers take the ops in
        # input order, so one big batch cannot hold every worker thread and database connection.
        queue = iter(runnable)

        async def worker() -> None:
            for item in queue:
                await _execute(item, ctx)

        async with anyio.create_task_group() as group:
            for _ in range(min(ctx.runtime.max_parallel_ops, len(runnable))):
                group.start_soon(worker)
    return outcomes


async def _run_chain(ops: tuple[Op, ...], ctx: Context) -> list[_Outcome]:
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
            outcomes.append(_Outcome(op.verb, _show_refs(op.args), error=exc))
            failed_at = index
            continue
        item = _prepare(op, args, ctx)
        outcome = item if isinstance(item, _Outcome) else item.outcome
        if not isinstance(item, _Outcome) and outcome.decision == "allow":
            await _execute(item, ctx)
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


async def _execute(item: _Prepared, ctx: Context) -> None:
    outcome, verb = item.outcome, item.verb
    started = time.perf_counter_ns()
    try:
        if item.params is None:
            raw: Any = verb.help()
        else:
            raw = await verb.handler(item.params, ctx)
        if not within_depth(raw, ctx.runtime.max_result_depth):
            raise ResultTooDeep(f"{verb.name} returned a result nested deeper than "
                                f"{ctx.runtime.max_result_depth} levels",
                                details={"limit": ctx.runtime.max_result_depth})
        outcome.result = raw.model_dump(mode="json", by_alias=True) if isinstance(raw, BaseModel) else raw
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


def _show_refs(value: Any) -> Any:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, Mapping):
        return {key: _show_refs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_show_refs(item) for item in value]
    return value


def _invalid_args(verb: Verb, exc: ValidationError) -> InvalidArgs:
    problems = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "extra_forbidden":
            known = ", ".join(sorted(verb.params.model_fields)) or "none"
            message = f"unknown argument {field!r}; {verb.name} takes: {known}"
        elif error["type"] == "missing":
            message = f"missing required argument {field!r}"
        else:
            message = f"argument {field!r}: {error['msg']} (got {error.get('input')!r:.80})"
        problems.append({"field": field, "message": message, "type": error["type"]})
    summary = "; ".join(problem["message"] for problem in problems)
    return InvalidArgs(f"{verb.name}: {summary}", details={"verb": verb.name, "errors": problems})


async def _audit(outcomes: list[_Outcome], ctx: Context) -> None:
    now = datetime.now(UTC)
    events = []
    for index, outcome in enumerate(outcomes):
        args = _show_refs(outcome.args)
        if outcome.aborted:
            code = "aborted"
        elif outcome.ok:
            code = "ok"
        else:
            code = outcome.error.code if outcome.error else "internal_error"
        events.append(AuditEvent(
            ts=now, request_id=ctx.request_id, op_index=index, principal=ctx.principal,
            transport=ctx.transport, verb=outcome.verb, args_digest=digest_args(args),
            args_redacted=redact(args), decision=outcome.decision,
            reason=outcome.reason or (outcome.error.message if outcome.error else ""),
            outcome=code, duration_us=outcome.duration_us, write_keys=outcome.write_keys, client=ctx.client,
        ))
    try:
        await ctx.runtime.audit.append(events)
    except Exception:
        log.exception("could not append %d audit events for request %s", len(events), ctx.request_id)
        raise


def _envelope(outcomes: list[_Outcome], ctx: Context, request_id: str) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    succeeded = failed = aborted = 0
    for outcome in outcomes:
        if outcome.aborted:
            aborted += 1
            results.append({"ok": False, "verb": outcome.verb, "aborted": True})
        elif outcome.ok:
            succeeded += 1
            always_verbose = outcome.verb_decl is not None and outcome.verb_decl.always_verbose
            shown = outcome.result if always_verbose else present(outcome.result, ctx.presentation)
            results.append({"ok": True, "verb": outcome.verb, "result": shown})
        else:
            failed += 1
            error = outcome.error or OpError("unknown failure", code="internal_error")
            results.append({"ok": False, "verb": outcome.verb, "error": error.to_dict()})
    total = len(outcomes)
    status = "success" if succeeded == total else ("failed" if succeeded == 0 else "partial")
    return {
        "results": results,
        "summary": {"total": total, "succeeded": succeeded, "failed": failed, "aborted": aborted},
        "status": status,
        "request_id": request_id,
    }
