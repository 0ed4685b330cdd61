"""A request whose caller left: work that runs only for the answer can stop (ADR 0058).

A client that cancels a call (or times out, or quits) closes its connection to the daemon, but an op in a
worker thread cannot be cancelled from the event loop: a PostgreSQL statement ran on to its timeout, holding
its pool slot, for nobody. The daemon gives each request an ``Abandon``; code that blocks on something that
can be interrupted from another thread (a statement: libpq's cancel request) registers how with
``interrupt_on_abandon``, and the daemon calls it when the caller's connection closes. Writes register
nothing: what they started finishes. ``khive mcp`` dispatching locally (no daemon) sets the request's
``Abandon`` when the SDK cancels the call; DuckDB and SQLite statements register ``interrupt()`` as
PostgreSQL registers its cancel request (ADR 0058, eighth session).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from khive.errors import KhiveError

log = logging.getLogger(__name__)


class Abandon:
    """Set once, by the caller's departure; the interrupts registered at that moment run then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # registered from worker threads, set from the event loop
        self._interrupts: dict[int, Callable[[], object]] = {}
        self._next = 0
        self.is_set = False

    def set(self) -> None:
        with self._lock:
            self.is_set = True
            interrupts = list(self._interrupts.values())
        for interrupt in interrupts:
            _run(interrupt)

    @contextmanager
    def interrupting(self, interrupt: Callable[[], object]) -> Iterator[None]:
        with self._lock:
            key, self._next = self._next, self._next + 1
            self._interrupts[key] = interrupt
            already = self.is_set
        if already:
            _run(interrupt)
        try:
            yield
        finally:
            with self._lock:
                del self._interrupts[key]


def _run(interrupt: Callable[[], object]) -> None:
    try:
        interrupt()
    except Exception:  # an interrupt that fails leaves the work to its own timeout, as before
        log.warning("interrupting work whose caller left failed", exc_info=True)


_current: ContextVar[Abandon | None] = ContextVar("khive_abandon", default=None)


def use_abandon(abandon: Abandon | None) -> None:
    """The request of this task (and of the worker threads it starts, which copy the context)."""
    _current.set(abandon)


def abandoned() -> bool:
    """Whether the caller of the current request has left."""
    current = _current.get()
    return current is not None and current.is_set


@contextmanager
def interrupt_on_abandon(interrupt: Callable[[], object]) -> Iterator[None]:
    """Run ``interrupt`` (from another thread) if the caller leaves while the block runs."""
    current = _current.get()
    if current is None:
        yield
        return
    with current.interrupting(interrupt):
        yield


_REPEAT_S = 0.05  # between interrupts of a statement that may not have started yet


@contextmanager
def keep_interrupting_on_abandon(interrupt: Callable[[], object]) -> Iterator[None]:
    """``interrupt_on_abandon`` for a client whose interrupt stops only a statement already running (DuckDB's
    and SQLite's ``interrupt()``): a caller that leaves just before the statement starts would be missed, so the
    interrupt is repeated until the block ends, and never after it (the connection's next statement)."""
    lock = threading.Lock()
    ended = threading.Event()

    def once() -> bool:
        with lock:
            if not ended.is_set():
                interrupt()
        return not ended.is_set()

    def repeat() -> None:
        while once():
            ended.wait(_REPEAT_S)

    with interrupt_on_abandon(lambda: threading.Thread(target=repeat, name="khive-abandon", daemon=True).start()):
        try:
            yield
        finally:
            with lock:
                ended.set()


def caller_left(connection: str, details: Mapping[str, object]) -> KhiveError:
    """The error of a statement interrupted because its caller left (every driver's, audited ``caller_left``)."""
    return KhiveError(f"statement cancelled: its caller left before the answer (connection {connection!r})",
                      code="caller_left", details=dict(details))
