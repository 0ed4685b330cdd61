"""MCP sampling across the daemon socket: the daemon's handlers ask, the caller's MCP session answers.

A request forwarded from an MCP session says whether that client can sample; the daemon puts a
``RemoteSampler`` into the handler's context under the same key as the in-process ``Sampler``. A
call sends a ``sample`` frame and waits for the caller's ``sampled`` answer, which the caller gets
from its real ``Sampler`` (push, or the recorded request of the multi-round form: then the text is
None and the caller's MCP server returns ``input_required`` after the envelope, as in-process).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from khive.daemon.frames import receive_frame
from khive.errors import OpError

Send = Callable[[dict[str, Any]], Awaitable[None]]


class RemoteSampler:
    def __init__(self, available: bool, send: Send):
        self.available = available
        self._send = send
        self._seq = 0
        self._waiting: dict[int, tuple[anyio.Event, dict[str, Any]]] = {}
        self._gone = ""

    async def __call__(self, key: str, *, system: str, prompt: str, max_tokens: int = 2000) -> str | None:
        if self._gone:
            raise OpError(f"sampling failed: {self._gone}", code="sampling_failed")
        self._seq += 1
        seq, event = self._seq, anyio.Event()
        answer: dict[str, Any] = {}
        self._waiting[seq] = (event, answer)
        await self._send({"type": "sample", "seq": seq, "key": key, "system": system, "prompt": prompt,
                          "max_tokens": max_tokens})
        await event.wait()
        if "error" in answer:
            raise OpError(f"sampling failed: {answer['error']}", code="sampling_failed")
        text = answer.get("text")
        return text if isinstance(text, str) else None

    async def read_answers(self, frames: BufferedByteReceiveStream) -> bool:
        """Route the caller's ``sampled`` frames to the waiting calls until cancelled or the caller leaves;
        true when it left (false: it sent a bad frame)."""
        left = False
        try:
            while True:
                frame = await receive_frame(frames)
                if frame is None:
                    left = True
                    break
                seq = frame.get("seq")
                if frame.get("type") != "sampled" or not isinstance(seq, int):
                    continue
                waiting = self._waiting.pop(seq, None)
                if waiting is not None:
                    waiting[1].update(frame)
                    waiting[0].set()
        except Exception as exc:  # a bad frame from the caller ends sampling for this request only
            self._gone = f"bad answer from the caller: {exc}"
        self._gone = self._gone or "the caller went away"
        for event, answer in self._waiting.values():
            answer["error"] = self._gone
            event.set()
        self._waiting.clear()
        return left
