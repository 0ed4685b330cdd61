"""The one way blocking work leaves the event loop: ``run_blocking``.

Everything that can take longer than a few hundred microseconds (file and socket I/O, SQLite,
``git``, YAML and SQL parsing, ranking) runs in a worker thread, so the loop stays free to answer
every other agent. Workers come from anyio's default limiter (40 threads for the whole process), so
thread use stays bounded however many requests arrive. A worker is never abandoned on cancellation:
a write that started finishes. The threading rule itself is ADR 0027 and ``khive.execution``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")

LOOP_SWITCH_INTERVAL_S = 0.001


def favour_the_event_loop() -> None:
    """For a process that serves many agents from one loop (the daemon, ``khive serve``): a worker busy with
    pure Python holds the GIL for a whole switch interval (5 ms by default) each time the loop wants it back,
    and a ``ping()`` needs it a few dozen times. A shorter interval keeps other agents' small requests quick
    while one op computes or a long request text is parsed."""
    sys.setswitchinterval(LOOP_SWITCH_INTERVAL_S)


async def run_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker thread; context variables (the request's limits) go along."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
