"""One request's write-ahead audit (ADR 0029), as the dispatcher drives it.

    before(ops)      one committed transaction: a start for each op about to run, a complete event
                     for each op that stops here (denied, invalid, unknown verb, write conflict), and
                     the outcomes of finished ops not written yet; raises ``audit_store_unavailable``
                     when the store cannot take it: then nothing runs
    after(op)        the op's outcome, appended once it has finished; ops of a batch that finish in
                     the same turn of the event loop share one transaction (the first of them writes
                     for all, the others return at once)
    finished(op)     the op has finished; its outcome goes with the next ``before`` or ``close``: a
                     chain's next op starts at once, so one transaction holds the outcome of op i and
                     the start of op i + 1
    close(ops)       at the end: events for ops never recorded (aborted chain ops); for ops started but
                     never finished because the request itself ended early (an exception, a
                     cancellation), an ``interrupted`` outcome

A failed outcome write is logged and retried by ``close``; the op's start is already durable.
``close`` returns once every outcome is committed (or its failure logged): an answered op has its
outcome in the trail.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio

from khive.audit.events import (
    ABORTED,
    INTERRUPTED,
    AuditEvent,
    digest_args,
    new_op_id,
    parse_error_event,
    plain_args,
    redact,
)
from khive.audit.process import this_process
from khive.audit.store import AuditStore
from khive.errors import DslSyntaxError, KhiveError
from khive.redact import BUILTIN, Redactor

log = logging.getLogger(__name__)

STARTED = "started"  # a start row's own outcome column; readers see `running` or the op's outcome


class OpState(Protocol):
    """What the dispatcher knows about one op (its ``_Outcome``)."""

    @property
    def verb(self) -> str: ...
    @property
    def args(self) -> Mapping[str, Any]: ...
    @property
    def ok(self) -> bool: ...
    @property
    def error(self) -> KhiveError | None: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def decision(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def write_keys(self) -> tuple[str, ...]: ...
    @property
    def duration_us(self) -> int: ...


class RequestTrail:
    def __init__(self, store: AuditStore, *, request_id: str, principal: str, transport: str, user: str,
                 client: str = "", redactor: Redactor = BUILTIN):
        self._store = store
        self._redactor = redactor  # the project's redaction service: arguments and reasons are stored redacted
        self.request_id, self.principal, self.transport, self.user = request_id, principal, transport, user
        self.client = client  # what an MCP client calls itself: information only (ADR 0032)
        self._process = this_process()
        self._recorded: set[int] = set()  # op indexes with a start or a complete event
        self._open: dict[int, tuple[AuditEvent, OpState]] = {}  # started, outcome not written yet
        self._finished: list[int] = []  # open ops whose outcome waits for the writer below
        self._writing = False

    async def before(self, ops: Iterable[tuple[int, OpState]]) -> None:
        now = datetime.now(UTC)
        starts: list[tuple[int, AuditEvent, OpState]] = []
        events: list[tuple[int, AuditEvent]] = []
        for index, op in ops:
            if op.error is None and not op.aborted:
                starts.append((index, self._event(index, op, now, STARTED), op))
            else:
                events.append((index, self._event(index, op, now, _code(op))))
        done, self._finished = self._finished, []
        try:
            await self._store.write(starts=[start for _, start, _ in starts], events=[event for _, event in events],
                                    outcomes=[self._outcome(*self._open[i]) for i in done])
        except BaseException:
            self._finished = done + self._finished
            raise
        for i in done:
            del self._open[i]
        self._recorded.update(index for index, _, _ in starts)
        self._recorded.update(index for index, _ in events)
        self._open.update((index, (start, op)) for index, start, op in starts)

    def finished(self, index: int) -> None:
        self._finished.append(index)

    async def after(self, index: int) -> None:
        self._finished.append(index)
        if self._writing:  # the op writing now (or its next round) takes this outcome too
            return
        self._writing = True
        try:
            while self._finished:
                if len(self._open) > len(self._finished):  # siblings still running: let those done now join
                    await anyio.sleep(0)
                done, self._finished = self._finished, []
                outcomes = [self._outcome(*self._open[i]) for i in done]
                try:
                    await self._store.write(outcomes=outcomes)
                except Exception:  # close() tries again
                    log.exception("could not append %d outcomes of request %s", len(done), self.request_id)
                    continue
                for i in done:
                    del self._open[i]
        finally:
            self._writing = False

    async def close(self, ops: Sequence[OpState] = (), failure: BaseException | None = None) -> None:
        now = datetime.now(UTC)
        events = [self._event(index, op, now, _code(op)) for index, op in enumerate(ops)
                  if index not in self._recorded]
        outcomes = [self._outcome(start, op, failure) for start, op in self._open.values()]
        try:
            await self._store.write(events=events, outcomes=outcomes)
        except Exception:
            log.exception("could not append %d audit events for request %s", len(events) + len(outcomes),
                          self.request_id)
            return
        self._open.clear()

    def _event(self, index: int, op: OpState, ts: datetime, outcome: str) -> AuditEvent:
        args = plain_args(op.args)
        return AuditEvent(ts=ts, request_id=self.request_id, op_index=index, principal=self.principal,
                          transport=self.transport, verb=op.verb, args_digest=digest_args(args),
                          args_redacted=redact(args, self._redactor), decision=op.decision,
                          reason=self._redactor.text(_reason(op)), outcome=outcome,
                          duration_us=op.duration_us, write_keys=op.write_keys, user=self.user, op_id=new_op_id(),
                          process=self._process, client=self.client)

    def _outcome(self, start: AuditEvent, op: OpState, failure: BaseException | None = None) -> AuditEvent:
        finished = op.ok or op.error is not None or op.aborted
        if finished:
            code, reason = _code(op), self._redactor.text(_reason(op))
        else:
            cause = f" ({type(failure).__name__})" if failure is not None else ""
            code, reason = INTERRUPTED, f"interrupted: the request ended before the op finished{cause}"
        return start.ended(datetime.now(UTC), decision=op.decision, reason=reason, outcome=code,
                           duration_us=op.duration_us, process=self._process)


def _code(op: OpState) -> str:
    if op.aborted:
        return ABORTED
    if op.ok:
        return "ok"
    return op.error.code if op.error else "internal_error"


def _reason(op: OpState) -> str:
    return op.reason or (op.error.message if op.error else "")


async def audit_parse_error(store: AuditStore, exc: DslSyntaxError, text: str, *, request_id: str, principal: str,
                            transport: str, user: str, client: str = "") -> bool:
    """Audit a request text rejected before dispatch: where it broke and its digest, never the text.

    Nothing ran, so a store that cannot take the event only costs the event: logged, False.
    """
    event = parse_error_event(ts=datetime.now(UTC), text=text, reason=exc.reason, line=exc.line, column=exc.column,
                              request_id=request_id or new_request_id(), principal=principal, transport=transport,
                              user=user, process=this_process(), client=client)
    try:
        await store.append([event])
    except Exception:
        log.exception("could not audit a parse error of request %s", event.request_id)
        return False
    return True


def new_request_id() -> str:
    return uuid.uuid4().hex
