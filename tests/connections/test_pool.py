"""The driver pool with real SQLite and DuckDB drivers: bounded, reused, first come first served,
bounded waits, broken drivers replaced, closed on shutdown."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from khive.connections.config import ConnectionConfig
from khive.connections.driver import Driver, open_driver
from khive.connections.pool import DriverPool, PoolClosed, PoolTimeout
from khive.errors import KhiveError

Opener = tuple[list[Driver], Callable[[], Driver]]


@pytest.fixture
def opener(tmp_path: Path) -> Opener:
    path = tmp_path / "shop.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    opened: list[Driver] = []

    def open_one() -> Driver:
        driver = open_driver("shop", ConnectionConfig(driver="sqlite", path=str(path)), secrets={"path": str(path)})
        opened.append(driver)
        return driver

    return opened, open_one


def wait_until(condition: Callable[[], bool], limit: float = 10.0) -> None:
    event = threading.Event()
    for _ in range(int(limit / 0.01)):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("condition never held")


def test_drivers_are_reused_and_never_more_than_size(opener: Opener) -> None:
    opened, open_one = opener
    pool = DriverPool("shop", 2, open_one)
    with pool.lease(1) as first, pool.lease(1) as second:
        assert not first.reused and not second.reused and first.driver is not second.driver
        with pytest.raises(PoolTimeout) as timeout:
            pool.acquire(0.05)
        assert timeout.value.details == {"connection": "shop", "pool_size": 2, "waited_s": 0.05}
    with pool.lease(1) as again:
        assert again.reused and again.driver in (first.driver, second.driver)
        assert again.driver.execute("SELECT 1", limit=1, timeout_s=1).rows == [[1]]
    assert len(opened) == 2 and pool.stats() == {"size": 2, "open": 2, "idle": 2, "waiting": 0}


def test_waiters_are_served_first_come_first_served(opener: Opener) -> None:
    _, open_one = opener
    pool = DriverPool("shop", 1, open_one)
    held = pool.acquire(1)
    served: list[int] = []

    def wait(index: int) -> None:
        with pool.lease(10):
            served.append(index)

    threads = []
    for index in range(4):
        thread = threading.Thread(target=wait, args=(index,))
        thread.start()
        threads.append(thread)
        waiting = index + 1
        wait_until(lambda: pool.stats()["waiting"] == waiting)  # noqa: B023  (used before the next round)
    pool.release(held)
    for thread in threads:
        thread.join(10)
    assert served == [0, 1, 2, 3]


def test_a_driver_whose_connection_failed_is_replaced(opener: Opener) -> None:
    opened, open_one = opener
    pool = DriverPool("shop", 2, open_one)
    with pytest.raises(KhiveError), pool.lease(1) as lease:
        raise KhiveError("lost", code="connection_failed")
    broken = lease.driver
    with pytest.raises(KhiveError), pool.lease(1) as lease:
        raise KhiveError("syntax", code="query_failed")  # the statement failed, the session did not
    kept = lease.driver
    assert kept is not broken and len(opened) == 2
    with pool.lease(1) as lease:
        assert lease.driver is kept and lease.reused
    with pytest.raises(RuntimeError), pool.lease(1):
        raise RuntimeError("a bug while leased: the session state is unknown")
    assert pool.stats()["idle"] == 0


def test_closing_the_pool_closes_idle_drivers_and_turns_waiters_away(opener: Opener) -> None:
    _, open_one = opener
    pool = DriverPool("shop", 1, open_one)
    with pool.lease(1) as lease:
        lease.driver.execute("SELECT 1", limit=1, timeout_s=1)
    held = pool.acquire(1)
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            pool.acquire(10)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    wait_until(lambda: pool.stats()["waiting"] == 1)
    pool.close()
    thread.join(10)
    assert isinstance(outcome[0], PoolClosed)
    pool.release(held)  # a driver coming back after the close is closed, not kept
    assert held.driver._conn is None  # type: ignore[attr-defined]
    assert pool.stats()["open"] == 0
    with pytest.raises(PoolClosed):
        pool.acquire(1)


def test_idle_drivers_expire(opener: Opener) -> None:
    opened, open_one = opener
    now = [0.0]
    pool = DriverPool("shop", 2, open_one, idle_seconds=60, clock=lambda: now[0])
    with pool.lease(1) as lease:
        lease.driver.execute("SELECT 1", limit=1, timeout_s=1)
    now[0] = 61
    with pool.lease(1) as fresh:
        assert not fresh.reused and fresh.driver is not lease.driver
    assert lease.driver._conn is None  # type: ignore[attr-defined]
    assert len(opened) == 2


def test_duckdb_drivers_are_not_kept_open_between_leases(tmp_path: Path) -> None:
    path = tmp_path / "wh.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE t AS SELECT 1 AS x").close()
    config = ConnectionConfig(driver="duckdb", path=str(path))
    pool = DriverPool("wh", 2, lambda: open_driver("wh", config, secrets={"path": str(path)}))
    with pool.lease(1) as lease:
        assert lease.driver.execute("SELECT x FROM t", limit=1, timeout_s=1).rows == [[1]]
    assert pool.stats()["open"] == 0  # the file is free for a writer again
    duckdb.connect(str(path)).execute("INSERT INTO t VALUES (2)").close()


def test_a_failing_opener_frees_its_slot(opener: Opener) -> None:
    attempts = []

    def broken() -> Driver:
        attempts.append(1)
        raise KhiveError("cannot connect", code="connection_failed")

    pool = DriverPool("shop", 1, broken)
    for _ in range(3):
        with pytest.raises(KhiveError):
            pool.acquire(0.05)
    assert len(attempts) == 3 and pool.stats()["open"] == 0
