"""The one way blocking work leaves the event loop: ``run_blocking``.

Everything that can take longer than a few hundred microseconds (file and socket I/O, SQLite,
``git``, YAML and SQL parsing, ranking) runs in a worker thread, so the loop stays free to answer
every other agent. Workers come from anyio's default limiter (40 threads for the whole process), so
thread use stays bounded however many requests arrive. A worker is never abandoned on cancellation:
a write that started finishes. The threading rule itself is ADR 0027 and ``khive.execution``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")


async def run_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker thread; context variables (the request's limits) go along."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
