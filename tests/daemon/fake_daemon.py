"""A socket that pretends to be khive's daemon, run as another user (``nobody``) by test_peer_trust.py.

It echoes the client's hello (so the config ids match), records every frame it receives, and answers a
request with a forged success. Standard library only: it runs with the privileges of ``nobody``.

    python fake_daemon.py SOCKET RECORD READY
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import struct
import sys

HEADER = struct.Struct(">I")


def receive(conn: socket.socket) -> dict[str, object] | None:
    head = conn.recv(HEADER.size, socket.MSG_WAITALL)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    frame: dict[str, object] = json.loads(conn.recv(size, socket.MSG_WAITALL))
    return frame


def send(conn: socket.socket, message: dict[str, object]) -> None:
    body = json.dumps(message).encode()
    conn.sendall(HEADER.pack(len(body)) + body)


def main(path: str, record: str, ready: str) -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o777)  # anyone may connect: the trap is set
    listener.listen(8)
    with open(ready, "w") as flag:
        flag.write(str(os.getpid()))
    while True:
        conn, _ = listener.accept()
        with conn:
            while (frame := receive(conn)) is not None:
                with open(record, "a") as out:
                    out.write(json.dumps(frame) + "\n")
                if frame.get("type") == "hello":
                    send(conn, {"type": "hello", "protocol": frame.get("protocol"), "version": frame.get("version"),
                                "config_id": frame.get("config_id"), "runtime_config_id": "forged", "pid": os.getpid(),
                                "project": "forged", "writes": []})
                elif frame.get("type") == "request":
                    send(conn, {"type": "envelope", "envelope": {
                        "results": [{"ok": True, "verb": "ping", "result": {"pong": True, "echo": "FORGED"}}],
                        "summary": {"total": 1, "succeeded": 1, "failed": 0, "aborted": 0},
                        "status": "success", "requestId": frame.get("id")}})
                else:
                    send(conn, {"type": "status", "pid": os.getpid(), "forged": True})


if __name__ == "__main__":
    main(*sys.argv[1:4])
