"""The daemon's connection handler: peer check, hello, then requests through the one ``dispatch``.

Each connection is handled in its own task; requests on different connections run concurrently.
A request runs to completion even when its client goes away, so a write is never half-applied
because a caller was killed. A request runs as the principal the peer's uid allows
(``peer.principal_for``), whatever its frame claims.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import orjson
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from khive import __version__
from khive.abandon import Abandon, use_abandon
from khive.audit.trail import audit_parse_error
from khive.context import CLI, MCP_HTTP, MCP_STDIO, PRESENTATIONS, Context
from khive.daemon import protocol
from khive.daemon.frames import ConnectionClosed, FrameTooLarge, decode, encode, receive_body
from khive.daemon.peer import peer_credentials, principal_for
from khive.daemon.sampling import RemoteSampler
from khive.daemon.warm import WarmState
from khive.dispatch import dispatch
from khive.errors import DaemonError, DslSyntaxError
from khive.execution import parse_request, request_from_data
from khive.failure import unexpected_failure
from khive.identity import client_label
from khive.project.envfile import ENV_FILE, env_file
from khive.project.locate import CONFIG_NAME
from khive.threads import run_blocking

if TYPE_CHECKING:
    from khive.daemon.paths import DaemonSettings
    from khive.dsl.nodes import Request
    from khive.runtime import Runtime

log = logging.getLogger(__name__)

TRANSPORTS = frozenset({CLI, MCP_STDIO, MCP_HTTP})


@dataclass
class DaemonServer:
    runtime: Runtime
    settings: DaemonSettings
    config_id: str
    started: float = field(default_factory=time.time)
    requests_served: int = 0
    active: int = 0
    last_activity: float = field(default_factory=time.monotonic)
    warm: WarmState = field(default_factory=WarmState)
    stopping: anyio.Event = field(default_factory=anyio.Event)
    stop_reason: str = ""
    uid: int = field(default_factory=os.getuid)
    _hello: dict[str, Any] | None = field(default=None, repr=False)

    def stop(self, reason: str) -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
            log.info("stopping: %s", reason)
            self.stopping.set()

    def hello(self) -> dict[str, Any]:
        if self._hello is None:  # the same for every connection: built once
            writes = sorted(name for name, verb in self.runtime.registry.verbs.items() if not verb.read_only)
            self._hello = {**protocol.hello(self.config_id), "runtime_config_id": self.runtime.config_id,
                           "pid": os.getpid(), "project": str(self.runtime.project), "writes": writes}
        return self._hello

    def status(self) -> dict[str, Any]:
        return {"type": "status", "pid": os.getpid(), "version": __version__, "project": str(self.runtime.project),
                "socket": str(self.settings.socket), "config_id": self.config_id,
                "runtime_config_id": self.runtime.config_id, "uptime_s": round(time.time() - self.started, 3),
                "requests_served": self.requests_served, "active": self.active,
                "idle_s": round(time.monotonic() - self.last_activity, 3),
                "idle_timeout_s": self.settings.idle_seconds, "warm": self.warm.to_dict()}

    async def watch_idle(self) -> None:
        """Stop when idle, when the project is gone, or when khive.yaml or .khive/env changed (clients would
        not match)."""
        config = self.runtime.project / CONFIG_NAME
        loaded, secrets = _read(config), _read(env_file(self.runtime.project))
        step = min(2.0, max(0.05, self.settings.idle_seconds / 4))
        while True:
            await anyio.sleep(step)
            now = _read(config)
            if now is None:  # deleted (a test's temp dir): nothing to serve
                self.stop(f"the project's {CONFIG_NAME} is gone")
                return
            if now != loaded:  # the next client starts a daemon with the new configuration
                self.stop(f"{CONFIG_NAME} changed")
                return
            if _read(env_file(self.runtime.project)) != secrets:
                self.stop(f"{ENV_FILE} changed")
                return
            idle = time.monotonic() - self.last_activity
            if self.active == 0 and idle >= self.settings.idle_seconds:
                self.stop(f"idle for {idle:.0f} s (timeout {self.settings.idle_seconds:g} s)")
                return

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            try:
                raw = stream.extra(SocketAttribute.raw_socket)
                pid, uid, _ = peer_credentials(raw)
                if uid != self.uid:
                    log.warning("refused a connection from pid %d, uid %d (this daemon serves uid %d)", pid, uid,
                                self.uid)
                    await _send(stream, protocol.error("daemon_refused", f"this daemon serves uid {self.uid} only; "
                                                       f"connections from uid {uid} are refused", uid=uid))
                    return
                await self._converse(stream, BufferedByteReceiveStream(stream), uid)
            except Exception:  # one connection's bug ends that connection, never the daemon and its other clients
                log.exception("a connection handler failed; the connection is closed")

    async def _converse(self, stream: SocketStream, frames: BufferedByteReceiveStream, peer_uid: int) -> None:
        identified = False
        while True:
            try:
                body = await receive_body(frames)
                if body is None:  # the peer closed the connection between frames
                    return
                message = decode(body)
            except FrameTooLarge as exc:  # the body is never read: answer and hang up
                await _send(stream, protocol.error(exc.code, exc.message, **exc.details))
                return
            except (ConnectionClosed, DaemonError) as exc:
                await _send(stream, protocol.error("bad_frame", exc.message))
                return
            self.last_activity = time.monotonic()
            kind = message["type"]
            if kind == "hello":
                identified = message.get("config_id") == self.config_id
                await _send(stream, self.hello())
            elif kind == "status":
                await _send(stream, self.status())
            elif kind == "stop":
                await _send(stream, {"type": "stopping", "pid": os.getpid()})
                self.stop("asked to stop by a client")
                return
            elif kind == "request":
                if self.stopping.is_set():  # refused, not started: the client may run it elsewhere
                    await _send(stream, protocol.error("daemon_stopping", f"this daemon is stopping "
                                                       f"({self.stop_reason}); the request did not run"))
                    return
                if not identified:
                    await _send(stream, protocol.error(
                        "daemon_refused", "send hello with this daemon's config_id before a request",
                        config_id=self.config_id))
                    return
                await self._request(stream, frames, message, body, peer_uid)
            else:
                await _send(stream, protocol.error("bad_frame", f"unknown frame type {kind!r}; expected hello, "
                                                   "request, status or stop"))
                return

    async def _request(self, stream: SocketStream, frames: BufferedByteReceiveStream, message: dict[str, Any],
                       body: bytes, peer_uid: int) -> None:
        problem = protocol.request_problem(message, PRESENTATIONS, TRANSPORTS)
        if problem:
            await _send(stream, protocol.error("bad_frame", problem))
            return
        principal, user = principal_for(message["principal"], message["transport"], peer_uid)
        client = client_label(message.get("client"))
        try:
            parsed = await _request_of(message, body)
        except DslSyntaxError as exc:
            text = message["ops"] if "ops" in message else orjson.dumps(message["request"]).decode()
            await audit_parse_error(self.runtime.audit, exc, text, request_id=message["id"],
                                    principal=principal, transport=message["transport"],
                                    user=user or message["user"], client=client)
            await _send(stream, protocol.error(exc.code, exc.message, **exc.details))
            return
        lock = anyio.Lock()
        client_gone = False

        async def send(frame: dict[str, Any] | bytes) -> None:
            nonlocal client_gone
            if client_gone:
                return
            data = frame if isinstance(frame, bytes) else encode(frame)
            async with lock:
                try:
                    await stream.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    client_gone = True

        async def progress(done: float, total: float | None, note: str | None) -> None:
            await send({"type": "progress", "done": done, "total": total, "message": note})

        sampler = RemoteSampler(message["sampling"], send) if "sampling" in message else None
        ctx = Context(self.runtime, principal, message["transport"], presentation=message["presentation"],
                      request_id=message["id"], progress=progress, user=user or message["user"],
                      sampler=sampler, client=client)
        abandon = Abandon()
        use_abandon(abandon)  # for the ops' tasks and threads, which copy this task's context
        self.active += 1
        try:
            with anyio.CancelScope(shield=True):  # a started request finishes, even while the daemon stops
                async with anyio.create_task_group() as group:
                    group.start_soon(_watch_caller, frames, sampler, abandon)
                    envelope = await self._dispatch(parsed, ctx)
                    group.cancel_scope.cancel()
                self.requests_served += 1
                await send(self._envelope_frame(envelope, parsed, ctx.request_id))
        finally:
            use_abandon(None)
            self.active -= 1
            self.last_activity = time.monotonic()
        if client_gone:
            log.warning("request %s finished after its client went away", message["id"])


    @staticmethod
    async def _dispatch(parsed: Request, ctx: Context) -> dict[str, Any]:
        try:
            return await dispatch(parsed, ctx)
        except Exception as exc:  # a bug outside any op: the client still gets an envelope
            log.exception("request %s failed outside any op", ctx.request_id)
            return unexpected_failure([op.verb for op in parsed.ops], ctx.request_id, "daemon", exc)

    @staticmethod
    def _envelope_frame(envelope: dict[str, Any], parsed: Request, request_id: str) -> bytes:
        try:
            return encode({"type": "envelope", "envelope": envelope})
        except (TypeError, ValueError) as exc:  # a value orjson cannot encode slipped into the envelope
            log.exception("the envelope of request %s cannot be encoded", request_id)
            failed = unexpected_failure([op.verb for op in parsed.ops], request_id, "daemon", exc)
            return encode({"type": "envelope", "envelope": failed})


async def _watch_caller(frames: BufferedByteReceiveStream, sampler: RemoteSampler | None, abandon: Abandon) -> None:
    """Until the request ends: the caller's sampling answers, if it samples, else nothing but its departure.

    A caller sends nothing else mid-request; bytes that come anyway are left for the next frame."""
    if sampler is not None:
        left = await sampler.read_answers(frames)
    else:
        try:
            data = await frames.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            left = True
        else:
            frames.feed_data(data)
            left = False
    if left:
        log.info("the caller left mid-request; its interruptible work is stopped")
        await run_blocking(abandon.set)  # a cancel request is a round trip to the database


async def _request_of(message: dict[str, Any], body: bytes) -> Request:
    """The request a frame carries: parsed at the edge (only its shape and, in the frame's ``body``, its
    integers are checked here), or text to parse."""
    if "request" in message:
        return await request_from_data(message["request"], body)
    return await parse_request(message["ops"])


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


async def _send(stream: SocketStream, frame: dict[str, Any]) -> None:
    try:
        await stream.send(encode(frame))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
