"""A blocking client connection to the daemon: what ``khive request`` and the probes use.

Blocking sockets keep the forwarding path free of an event loop; async callers (``khive mcp``)
run it in a worker thread. The one distinction that matters to callers: a failure before the
request frame was fully written (``NotSent``: nothing can have run) versus after (``Lost``).
Before anything is sent, the socket and the process listening on it must belong to this uid
(``UntrustedDaemon`` otherwise; ADR 0032).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from khive.daemon.frames import ConnectionClosed, recv_frame, send_frame
from khive.daemon.peer import check_listener, check_socket_owner
from khive.errors import DaemonError

CONNECT_TIMEOUT = 2.0
Progress = Callable[[float, float | None, "str | None"], None]
# (key, system, prompt, max_tokens) -> the sampled text (None: it comes in the next MCP round)
Sample = Callable[[str, str, str, int], "str | None"]


class NotSent(DaemonError):
    code = "daemon_unavailable"


class Lost(DaemonError):
    code = "daemon_connection_lost"


class DaemonConnection:
    def __init__(self, sock: socket.socket, path: Path):
        self.sock = sock
        self.path = path

    @classmethod
    def open(cls, path: Path, timeout: float = CONNECT_TIMEOUT) -> DaemonConnection:
        """Connect; raises FileNotFoundError / ConnectionRefusedError when no daemon listens there, and
        ``UntrustedDaemon`` when the socket or its listener belongs to another user."""
        check_socket_owner(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            check_listener(sock, path)
        except BaseException:
            sock.close()
            raise
        return cls(sock, path)

    def __enter__(self) -> DaemonConnection:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def hang_up(self) -> None:
        """From another thread: end a request whose caller left; the daemon sees the end of the stream."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: the daemon sees that too

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one frame and read one answer (hello, status, stop); an error frame raises DaemonError."""
        try:
            send_frame(self.sock, message)
        except OSError:
            pass  # a daemon that refuses us says why before hanging up: read that below
        try:
            answer = recv_frame(self.sock)
        except (OSError, ConnectionClosed) as exc:
            raise NotSent(f"the daemon on {self.path} did not answer {message['type']}: {_why(exc)}") from None
        return _checked(answer)

    def request(self, frame: dict[str, Any], on_progress: Progress | None = None,
                on_sample: Sample | None = None) -> dict[str, Any]:
        """Send a request frame and return the envelope; progress frames go to ``on_progress``, sampling
        requests to ``on_sample``, whose answer goes back to the daemon."""
        try:
            send_frame(self.sock, frame)
        except OSError as exc:  # the frame is incomplete on the other side, so nothing ran
            raise NotSent(f"could not send the request to {self.path}: {_why(exc)}") from None
        self.sock.settimeout(None)  # verbs may run for minutes (a scan); a dead daemon closes the socket
        while True:
            try:
                answer = _checked(recv_frame(self.sock))
            except (OSError, ConnectionClosed) as exc:
                raise Lost(f"the daemon on {self.path} went away after the request was sent ({_why(exc)}); "
                           "it may or may not have run", details={"request_id": frame.get("id")}) from None
            if answer["type"] == "progress":
                if on_progress is not None:
                    on_progress(answer.get("done", 0), answer.get("total"), answer.get("message"))
                continue
            if answer["type"] == "sample":
                self._sample(answer, on_sample)
                continue
            if answer["type"] == "envelope" and isinstance(answer.get("envelope"), dict):
                envelope: dict[str, Any] = answer["envelope"]
                return envelope
            raise Lost(f"unexpected {answer['type']!r} frame from {self.path} in answer to a request; "
                       "it may or may not have run", details={"request_id": frame.get("id")})


    def _sample(self, ask: dict[str, Any], on_sample: Sample | None) -> None:
        reply: dict[str, Any] = {"type": "sampled", "seq": ask.get("seq")}
        if on_sample is None:
            reply["error"] = "the caller has no MCP session to sample with"
        else:
            try:
                reply["text"] = on_sample(str(ask.get("key", "")), str(ask.get("system", "")),
                                          str(ask.get("prompt", "")), int(ask.get("max_tokens", 2000)))
            except Exception as exc:  # the client's failure is the handler's sampling error, not ours
                reply["error"] = f"{type(exc).__name__}: {exc}"
        try:
            send_frame(self.sock, reply)
        except OSError:
            pass  # the daemon is gone; the read that follows reports it


def _checked(answer: dict[str, Any]) -> dict[str, Any]:
    if answer["type"] == "error":
        details = answer.get("details") if isinstance(answer.get("details"), dict) else {}
        raise DaemonError(str(answer.get("message", "daemon error")), code=str(answer.get("code", "daemon_error")),
                          details=details)
    return answer


def _why(exc: BaseException) -> str:
    if isinstance(exc, DaemonError):
        return exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
