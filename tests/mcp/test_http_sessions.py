"""``khive serve --http``: MCP sessions are capped per bearer token as well as in total, so one token holder
cannot lock the others out (ADR 0032). Raw Streamable HTTP against a real server on a loopback port."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from mcp_helpers import ServeProcess, clean_env

pytestmark = [pytest.mark.slow]

Serve = Callable[..., ServeProcess]
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = {"mcp-protocol-version": "2025-06-18"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def with_server(project: Path, settings: str) -> None:
    config = project / "khive.yaml"
    text = config.read_text().replace("  tokens: []\n", "")
    config.write_text(text.replace("server:\n", "server:\n" + settings + (
        '  tokens:\n    - {token: env:TOKEN_A, principal: "agent:alpha"}\n'
        '    - {token: env:TOKEN_B, principal: "agent:beta"}\n'), 1))


def start(project: Path, khive_serve: Serve, settings: str = "") -> ServeProcess:
    with_server(project, settings)
    return khive_serve(project, env=clean_env(TOKEN_A="token-a", TOKEN_B="token-b"))


def open_session(http: httpx.Client, url: str, token: str) -> httpx.Response:
    return http.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})


def ping(http: httpx.Client, url: str, token: str, session: str) -> int:
    headers = {**HEADERS, **VERSION, "Authorization": f"Bearer {token}", "mcp-session-id": session}
    return http.post(url, json=PING, headers=headers).status_code


def hold(stack: ExitStack, http: httpx.Client, url: str, token: str, session: str) -> None:
    """Keep a GET event stream open on ``session``: the session is in use while it is."""
    headers = {"Accept": "text/event-stream", **VERSION, "Authorization": f"Bearer {token}", "mcp-session-id": session}
    response = stack.enter_context(http.stream("GET", url, headers=headers))
    assert response.status_code == 200


def test_a_token_at_its_cap_gives_up_its_oldest_idle_session(project: Path, khive_serve: Serve) -> None:
    server = start(project, khive_serve)  # the defaults: 100 per token
    with httpx.Client(timeout=20) as http:
        sessions = [open_session(http, server.url, "token-a") for _ in range(101)]
        assert {response.status_code for response in sessions} == {200}
        ids = [response.headers["mcp-session-id"] for response in sessions]
        assert ping(http, server.url, "token-a", ids[0]) == 404  # the oldest idle one made room
        codes = [ping(http, server.url, "token-a", session) for session in ids[1:]]
        assert [i for i, code in enumerate(codes, start=1) if code != 200] == []


def test_busy_sessions_at_the_cap_refuse_a_new_one_and_leave_other_tokens_alone(project: Path,
                                                                             khive_serve: Serve) -> None:
    server = start(project, khive_serve, "  max_http_sessions: 4\n  max_http_sessions_per_token: 2\n")
    with httpx.Client(timeout=20) as http, ExitStack() as streams:
        mine = [open_session(http, server.url, "token-a").headers["mcp-session-id"] for _ in range(2)]
        for session in mine:
            hold(streams, http, server.url, "token-a", session)
        refused = open_session(http, server.url, "token-a")
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["data"] == {"code": "session_limit", "limit": 2, "open": 2}
        assert "max_http_sessions_per_token" in error["message"]
        others = [open_session(http, server.url, "token-b") for _ in range(2)]  # the other token still gets in
        assert [response.status_code for response in others] == [200, 200]
        streams.close()  # the first token's streams end: its sessions are idle again, once the server notices
        deadline = time.monotonic() + 20
        while (status := open_session(http, server.url, "token-a").status_code) == 429 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == 200


def test_a_session_answers_only_the_token_that_opened_it(project: Path, khive_serve: Serve) -> None:
    server = start(project, khive_serve)
    with httpx.Client(timeout=20) as http:
        session = open_session(http, server.url, "token-a").headers["mcp-session-id"]
        assert ping(http, server.url, "token-b", session) == 404
        assert ping(http, server.url, "token-a", session) == 200
