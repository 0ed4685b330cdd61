"""The CLI's progress sink: a rich progress bar fed through the one progress API."""

from __future__ import annotations

import anyio

from khive.cli.progress import RichProgressSink


def test_rich_sink_tracks_reports() -> None:
    async def report(sink: RichProgressSink) -> None:
        for done in range(1, 4):
            await sink(done, 3, f"step {done}")

    with RichProgressSink() as sink:
        anyio.run(report, sink)
        (task,) = sink._progress.tasks
        assert (task.completed, task.total, task.description) == (3, 3, "step 3")
    assert sink._progress.live.is_started is False
