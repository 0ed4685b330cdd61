"""Raw JSON-RPC lines a real stdio client can send that the MCP SDK's own parser refuses.

``json.dumps`` of a Python string holding a lone surrogate writes ``"\\ud800"``: valid JSON text that
pydantic's JSON parser refuses. The SDK then drops the line without a word, so the client waits for an
answer that never comes and the audit never hears of the request. khive must answer such a line with a
typed JSON-RPC error naming the request's id, audit it like any other text that does not parse, and keep
serving.
"""
from __future__ import annotations

import json
import select
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp_helpers import KHIVE, audit_events, clean_env

from khive.scaffold import init_project

ANSWER_TIMEOUT_S = 20.0


class RawStdio:
    def __init__(self, project: Path) -> None:
        env = clean_env(KHIVE_NO_DAEMON="1")
        self.process = subprocess.Popen([str(KHIVE), "--project", str(project), "mcp"], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_TIMEOUT_S)
        assert ready, "no answer: the server dropped the line"
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def call(self, request_id: int, arguments: bytes) -> dict[str, Any]:
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"request","arguments":%s}}'
                  % (request_id, arguments))
        return self.answer()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()


def test_a_lone_surrogate_in_the_json_rpc_line_is_answered_typed_and_audited(tmp_path: Path) -> None:
    project = tmp_path / "project"
    init_project(project, "raw")
    server = RawStdio(project)
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert server.answer()["id"] == 0
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

        for request_id, arguments in ((1, json.dumps({"ops": 'ping(echo="\ud800")'}).encode()),
                                      (2, json.dumps({"ops": '{"ops": [{"verb": "ping", "args": {"echo": "\udc00"}}]}'
                                                      }).encode())):
            answer = server.call(request_id, arguments)
            assert answer["id"] == request_id, answer
            assert answer["error"]["code"] in (-32700, -32602), answer
            assert answer["error"]["data"]["reason"] == "parse_error", answer
            pong = server.call(100 + request_id, b'{"ops":"ping()"}')
            assert pong["id"] == 100 + request_id and not pong["result"]["isError"], pong
    finally:
        server.close()
    parse_errors = [event for event in anyio.run(audit_events, project) if event.verb == "(parse)"]
    assert len(parse_errors) == 2, parse_errors
