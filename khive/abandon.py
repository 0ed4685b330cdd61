"""A request whose caller left: work that runs only for the answer can stop (ADR 0058).

A client that cancels a call (or times out, or quits) closes its connection to the daemon, but an op in a
worker thread cannot be cancelled from the event loop: a PostgreSQL statement ran on to its timeout, holding
its pool slot, for nobody. The daemon gives each request an ``Abandon``; code that blocks on something that
can be interrupted from another thread (a statement: libpq's cancel request) registers how with
``interrupt_on_abandon``, and the daemon calls it when the caller's connection closes. Writes register
nothing: what they started finishes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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
