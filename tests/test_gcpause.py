"""The shared pause of the cyclic collector: counted, so concurrent requests never turn it back on early."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from khive.gcpause import paused_gc


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_overlapping_pauses_in_two_threads_keep_the_collector_off_until_the_last_ends() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with paused_gc():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with paused_gc():
            second_in.set()
            first_out.wait(5)
            seen["after the first ended"] = gc.isenabled()
        seen["after both ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"after the first ended": False, "after both ended": True}


def test_a_collector_turned_off_elsewhere_stays_off() -> None:
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_collector_comes_back_when_the_paused_work_raises() -> None:
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("the scan failed")
    assert gc.isenabled()
