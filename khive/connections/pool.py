"""Drivers per connection, bounded and shared fairly (ADR 0028).

Every verb path that queries a connection leases a driver here instead of opening its own: at most
``pool_size`` drivers of a connection are open at once, so one agent cannot take every database
connection, and callers that find the pool busy wait in arrival order (first come, first served:
a freed driver goes to the longest waiter, never to a newcomer), each for at most its own timeout.

Idle drivers are kept for reuse, so a warm daemon does not reconnect per query, unless the driver
says it should not be kept (DuckDB holds a lock on its file while open, which would shut out a
writer between queries). A driver that failed in a way that may have broken its session is closed
rather than returned; so are drivers idle for longer than ``IDLE_SECONDS``. Leasing blocks, so async
code leases in a worker thread (``leased``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from khive.connections.driver import Driver
from khive.errors import KhiveError

log = logging.getLogger(__name__)

IDLE_SECONDS = 300.0
# Errors after which the driver's session is still usable: the statement failed, the connection did not.
SESSION_INTACT = frozenset({"query_failed", "statement_timeout", "read_only_violation", "permission_denied",
                            "sql_refused", "privileged_role"})


class PoolTimeout(KhiveError):
    """Every driver of the connection stayed busy for the whole wait."""

    code = "pool_timeout"


class PoolClosed(KhiveError):
    """The runtime is shutting down; no new queries start."""

    code = "pool_closed"


@dataclass
class Lease:
    """A driver lent to one caller. ``reused``: it ran queries before (it may have gone stale while idle);
    ``discard``: close it on return instead of keeping it."""

    driver: Driver
    reused: bool
    discard: bool = False


class _Waiter:
    __slots__ = ("driver", "event", "granted")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.granted = False
        self.driver: Driver | None = None  # None with granted: a slot to open a new driver in


class DriverPool:
    def __init__(self, connection: str, size: int, opener: Callable[[], Driver], *,
                 idle_seconds: float = IDLE_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.connection = connection
        self.size = size
        self._opener = opener
        self._idle_seconds = idle_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._idle: list[tuple[Driver, float]] = []  # (driver, when it came back); the newest last
        self._open = 0  # drivers open or being opened: leased plus idle
        self._waiters: deque[_Waiter] = deque()
        self._closed = False

    # -- leasing ---------------------------------------------------------------------------------

    def acquire(self, timeout_s: float) -> Lease:
        """A driver within ``timeout_s`` seconds, or PoolTimeout; blocks, so call it from a worker thread."""
        driver, reused = self._take(timeout_s)
        if driver is None:  # a free slot: open a driver in it
            try:
                driver = self._opener()
            except BaseException:
                self._give_back(None)
                raise
        return Lease(driver, reused)

    def release(self, lease: Lease, error: BaseException | None = None) -> None:
        """Return a leased driver; it is closed instead when ``error`` may have broken its session."""
        intact = error is None or (isinstance(error, KhiveError) and error.code in SESSION_INTACT)
        keep = intact and not lease.discard and getattr(lease.driver, "reusable", True)
        self._give_back(lease.driver if keep else None, closing=None if keep else lease.driver)

    @contextmanager
    def lease(self, timeout_s: float) -> Iterator[Lease]:
        lease = self.acquire(timeout_s)
        try:
            yield lease
        except BaseException as exc:
            self.release(lease, exc)
            raise
        self.release(lease)

    @asynccontextmanager
    async def leased(self, timeout_s: float) -> AsyncIterator[Lease]:
        """``lease`` for async code: the wait happens in a worker thread, never on the event loop."""
        import anyio.to_thread

        lease = await anyio.to_thread.run_sync(self.acquire, timeout_s)
        try:
            yield lease
        except BaseException as exc:
            await anyio.to_thread.run_sync(self.release, lease, exc)
            raise
        await anyio.to_thread.run_sync(self.release, lease)

    def drop_idle(self) -> None:
        """Close every idle driver (after one turned out stale: the others were idle as long)."""
        with self._lock:
            stale = [driver for driver, _ in self._idle]
            self._idle.clear()
            self._open -= len(stale)
        _close_all(stale)

    def close(self) -> None:
        """No new leases; idle drivers close now, leased ones when they come back; waiters get PoolClosed."""
        with self._lock:
            self._closed = True
            idle = [driver for driver, _ in self._idle]
            self._idle.clear()
            self._open -= len(idle)
            waiters = list(self._waiters)
            self._waiters.clear()
        for waiter in waiters:
            waiter.event.set()  # not granted: it raises PoolClosed
        _close_all(idle)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"size": self.size, "open": self._open, "idle": len(self._idle), "waiting": len(self._waiters)}

    # -- internals -------------------------------------------------------------------------------

    def _take(self, timeout_s: float) -> tuple[Driver | None, bool]:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            expired = self._expire_idle()
            taken: tuple[Driver | None, bool] | None = None
            waiter = _Waiter()
            if self._waiters:  # others are ahead of us
                self._waiters.append(waiter)
            elif self._idle:
                taken = self._idle.pop()[0], True
            elif self._open < self.size:
                self._open += 1
                taken = None, False
            else:
                self._waiters.append(waiter)
        _close_all(expired)
        if taken is not None:
            return taken
        waiter.event.wait(timeout_s)
        with self._lock:
            if not waiter.granted:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                if self._closed:
                    raise self._closed_error()
                raise PoolTimeout(
                    f"connection {self.connection!r}: all {self.size} drivers stayed busy for {timeout_s:g}s "
                    f"(pool_size {self.size}); retry, or raise connections.{self.connection}.pool_size in khive.yaml",
                    details={"connection": self.connection, "pool_size": self.size, "waited_s": timeout_s})
        return waiter.driver, waiter.driver is not None

    def _give_back(self, driver: Driver | None, closing: Driver | None = None) -> None:
        """Hand ``driver`` (or, when None, its slot) to the longest waiter, else keep it idle (or free the slot)."""
        with self._lock:
            if self._waiters and not self._closed:
                waiter = self._waiters.popleft()
                waiter.driver, waiter.granted = driver, True
                waiter.event.set()
            elif driver is not None and not self._closed:
                self._idle.append((driver, self._clock()))
            else:
                self._open -= 1
                if driver is not None:
                    closing = driver
        if closing is not None:
            _close_all([closing])

    def _expire_idle(self) -> list[Driver]:
        """Idle drivers past their time, removed from the pool (the caller closes them outside the lock)."""
        cutoff = self._clock() - self._idle_seconds
        expired = [driver for driver, since in self._idle if since < cutoff]
        if expired:
            self._idle = [(driver, since) for driver, since in self._idle if since >= cutoff]
            self._open -= len(expired)
        return expired

    def _closed_error(self) -> PoolClosed:
        return PoolClosed(f"connection {self.connection!r}: khive is shutting down; the query did not start",
                          details={"connection": self.connection})


class DriverPools:
    """One pool per connection, made on first use; ``close`` on runtime shutdown."""

    def __init__(self, opener: Callable[[str], Driver], size_of: Callable[[str], int]):
        self._opener = opener
        self._size_of = size_of
        self._pools: dict[str, DriverPool] = {}
        self._lock = threading.Lock()

    def pool(self, connection: str) -> DriverPool:
        with self._lock:
            found = self._pools.get(connection)
            if found is None:
                size = self._size_of(connection)  # an unknown connection raises connection_not_found here
                found = self._pools[connection] = DriverPool(connection, size, lambda: self._opener(connection))
            return found

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            pool.close()


def _close_all(drivers: list[Driver]) -> None:
    for driver in drivers:
        try:
            driver.close()
        except Exception:  # closing a broken connection may fail too; it is gone either way
            log.debug("closing a pooled driver failed", exc_info=True)
