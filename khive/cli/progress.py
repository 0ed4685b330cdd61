"""A rich progress bar as a progress sink, on stderr so stdout stays machine-readable."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class RichProgressSink:
    def __init__(self) -> None:
        columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total}"),
                   TimeElapsedColumn())
        self._progress = Progress(*columns, console=Console(stderr=True), transient=True)
        self._task: TaskID | None = None

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.update(done, total, message)

    def update(self, done: float, total: float | None, message: str | None) -> None:
        """The same as awaiting the sink, for callers without an event loop (a forwarded request)."""
        if self._task is None:
            self._progress.start()
            self._task = self._progress.add_task(message or "working", total=total)
        self._progress.update(self._task, completed=done, total=total, description=message or "working")

    def __enter__(self) -> RichProgressSink:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._task is not None:
            self._progress.stop()
