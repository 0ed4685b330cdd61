"""``warm_all``: every pack's ``khive_warm`` tasks, run in the background once the socket is bound.

Requests never wait for warming as a whole; a verb that needs a resource a task is still
opening waits on that resource's own lock (the index's, a driver's), nothing more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from khive.hookspecs import WarmTask
    from khive.runtime import Runtime

log = logging.getLogger(__name__)


@dataclass
class WarmEntry:
    pack: str
    name: str
    resources: tuple[str, ...]
    state: str = "pending"  # pending | running | done | failed
    seconds: float | None = None
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"pack": self.pack, "name": self.name, "state": self.state}
        if self.resources:
            shown["resources"] = list(self.resources)
        if self.seconds is not None:
            shown["seconds"] = round(self.seconds, 3)
        if self.error:
            shown["error"] = self.error
        return shown


@dataclass
class WarmState:
    entries: list[WarmEntry] = field(default_factory=list)
    state: str = "pending"  # pending | running | done (failures are per task)

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "tasks": [entry.to_dict() for entry in self.entries]}


def collect_tasks(runtime: Runtime) -> list[tuple[str, WarmTask]]:
    """(pack, task) for every task every pack hands back; a pack whose hook raises is logged and skipped."""
    found: list[tuple[str, WarmTask]] = []
    for impl in runtime.plugins.hook.khive_warm.get_hookimpls():
        try:
            tasks = impl.function(**{name: runtime for name in impl.argnames})
        except Exception:
            log.exception("khive_warm of pack %s failed", impl.plugin_name)
            continue
        if tasks is not None and not isinstance(tasks, Sequence):
            log.error("khive_warm of pack %s returned %s, not a sequence of WarmTask", impl.plugin_name,
                      type(tasks).__name__)
            continue
        found.extend((impl.plugin_name, task) for task in tasks or ())
    return found


async def warm_all(runtime: Runtime, state: WarmState) -> None:
    tasks = collect_tasks(runtime)
    state.entries = [WarmEntry(pack, task.name, tuple(task.resources)) for pack, task in tasks]
    state.state = "running"
    async with anyio.create_task_group() as group:
        for entry, (_, task) in zip(state.entries, tasks, strict=True):
            group.start_soon(_run_one, entry, task)
    state.state = "done"
    log.info("warm_all finished: %s", ", ".join(f"{e.pack}.{e.name}={e.state}" for e in state.entries) or "no tasks")


async def _run_one(entry: WarmEntry, task: WarmTask) -> None:
    entry.state = "running"
    started = time.perf_counter()
    try:
        await task.run()
        entry.state = "done"
    except Exception as exc:  # one pack's failed warm-up must not stop the daemon or its siblings
        log.exception("warm task %s.%s failed", entry.pack, entry.name)
        entry.state, entry.error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        entry.seconds = time.perf_counter() - started
