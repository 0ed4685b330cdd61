"""Pausing Python's cyclic garbage collector while a step builds many acyclic objects.

Each collection of the oldest generation walks every live container. A step that keeps a large catalog in
memory (10,000 tables of a scan run) while it builds hundreds of thousands of small dicts (index documents,
generated sources) triggers a collection every few hundred allocations, each walking the whole catalog:
the time grows with the square of the size. Nothing such a step builds is cyclic, so pausing loses nothing;
the collector resumes, and finds any cycle made meanwhile, when the step ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block (reference counting still frees everything), then as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
