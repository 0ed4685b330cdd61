"""Streamable HTTP sessions, capped per bearer token as well as in total (ADR 0032).

The MCP SDK caps the sessions of a server in total (``server.max_http_sessions``; 503 beyond it),
so one token holder could open them all and lock every other token out. This ASGI middleware sits
between the bearer check and the SDK and keeps track of the sessions each token opened:

* A token holds at most ``per_token`` sessions (``server.max_http_sessions_per_token``). Opening
  one more closes that token's least recently used *idle* session (no request in flight, no open
  GET stream), with a DELETE of its own through the SDK; when all of them are busy, the new session
  is refused with HTTP 429 and a JSON-RPC error whose ``data.code`` is ``session_limit``.
* A session answers only the token that opened it; another token gets the 404 of an unknown session.

A session is learned from the ``mcp-session-id`` header of the answer that opened it, and forgotten
on a DELETE, on a 404 (the SDK expired it) or when it is closed to make room.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio
import orjson

TOKEN_SCOPE_KEY = "khive.token"
SESSION_HEADER = b"mcp-session-id"
SERVER_ERROR = -32000  # JSON-RPC: implementation-defined server error
INVALID_REQUEST = -32600  # what the SDK answers for a session it does not know

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def token_id(token: str) -> str:
    """What the cap keys a token by: a digest, so the token's text is kept nowhere."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


@dataclass
class _Session:
    token: str
    last_used: float
    in_flight: int = 0


class SessionCap:
    def __init__(self, app: Any, *, per_token: int, clock: Callable[[], float] = time.monotonic):
        self.app = app
        self.per_token = per_token
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._opening: Counter[str] = Counter()  # opening requests in flight, per token
        self._lock: anyio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = str(scope.get(TOKEN_SCOPE_KEY, "anonymous"))
        session_id = _header(scope.get("headers") or [], SESSION_HEADER)
        if session_id is not None:
            await self._in_session(session_id, token, scope, receive, send)
        elif scope.get("method") == "POST":  # only a POST without a session id opens one
            await self._opening_request(token, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def held(self, token: str) -> int:
        """Sessions ``token`` holds open (as far as this server has seen)."""
        return sum(1 for session in self._sessions.values() if session.token == token)

    async def _in_session(self, session_id: str, token: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._sessions.get(session_id)
        if session is None:  # not one we know: the SDK answers (404 for an expired or made-up id)
            await self.app(scope, receive, send)
            return
        if session.token != token:  # answered exactly like a session that does not exist
            await _reply(send, 404, INVALID_REQUEST, "Session not found")
            return
        session.in_flight += 1
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.last_used = self._clock()
            ended = scope.get("method") == "DELETE" and status is not None and status < 300
            if status == 404 or ended:
                self._sessions.pop(session_id, None)

    async def _opening_request(self, token: str, scope: Scope, receive: Receive, send: Send) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            held = [(session.last_used, sid) for sid, session in self._sessions.items() if session.token == token]
            evict = None
            if len(held) + self._opening[token] >= self.per_token:
                idle = sorted(entry for entry in held if self._sessions[entry[1]].in_flight == 0)
                if not idle:
                    why = (f"this token holds {len(held)} open MCP sessions, every one in use; the limit per token "
                           f"is {self.per_token} (server.max_http_sessions_per_token): close a session (HTTP DELETE) "
                           "or retry later")
                    await _reply(send, 429, SERVER_ERROR, why,
                                 {"code": "session_limit", "limit": self.per_token, "open": len(held)},
                                 retry_after=True)
                    return
                evict = idle[0][1]
                del self._sessions[evict]
            self._opening[token] += 1
        pending = True

        async def watch(message: Message) -> None:
            nonlocal pending
            if message["type"] == "http.response.start" and pending:
                opened = _header(message.get("headers") or [], SESSION_HEADER)
                if opened is not None and int(message["status"]) < 400:
                    self._sessions[opened] = _Session(token, self._clock())
                # counted as a session from here on, not as an opening (the answer may stream a while longer)
                pending = False
                self._opening[token] -= 1
            await send(message)

        try:
            if evict is not None:
                await self._close(evict, scope)
            await self.app(scope, receive, watch)
        finally:
            if pending:
                self._opening[token] -= 1

    async def _close(self, session_id: str, scope: Scope) -> None:
        """End a session through the SDK, as its client's DELETE would."""
        kept = ("type", "asgi", "http_version", "scheme", "path", "raw_path", "root_path", "server", "client", "state")
        request: dict[str, Any] = {key: scope[key] for key in kept if key in scope}
        request.update({key: value for key, value in scope.items() if str(key).startswith("khive.")})
        host = [(name, value) for name, value in scope.get("headers") or [] if name == b"host"]
        request.update(method="DELETE", query_string=b"", headers=[*host, (SESSION_HEADER, session_id.encode())])

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        await self.app(request, receive, discard)


def _header(headers: Any, name: bytes) -> str | None:
    for key, value in headers:
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _reply(send: Send, status: int, code: int, message: str, data: dict[str, Any] | None = None, *,
                 retry_after: bool = False) -> None:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after:
        headers.append((b"retry-after", b"5"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
