"""Who is on the other end of the daemon's socket, as the kernel says (ADR 0032).

Both ends check: the daemon serves only its own uid and decides a request's principal from the
peer's uid (the frame may narrow it, never widen it); a client talks only to a daemon socket owned
by, and listened on by, its own uid, so a socket another user bound in a shared directory never
receives a request.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from pathlib import Path

from khive.context import MCP_HTTP, MCP_STDIO
from khive.errors import DaemonError
from khive.identity import AGENT, OPERATOR, os_user

_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class UntrustedDaemon(DaemonError):
    """The daemon socket belongs to, or is answered by, another user: nothing was sent to it."""

    code = "daemon_untrusted"


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process on the other end of a Unix socket, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    pid, uid, gid = _PEERCRED.unpack(raw)
    return pid, uid, gid


def check_socket_owner(path: Path) -> None:
    """Before connecting: the socket file must be ours (a missing one is left to ``connect``)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        owner = os_user(info.st_uid)
        what = "socket" if stat.S_ISSOCK(info.st_mode) else "file (not a socket)"
        raise UntrustedDaemon(f"{path} is a {what} of user {owner} (uid {info.st_uid}), not of {os_user()}: nothing "
                              "was sent to it; point KHIVE_SOCKET at a directory only you can write",
                              details={"socket": str(path), "owner_uid": info.st_uid})


def check_listener(sock: socket.socket, path: Path) -> None:
    """After connecting, before sending: the listening process must run as this uid."""
    pid, uid, _ = peer_credentials(sock)
    if uid != os.getuid():
        raise UntrustedDaemon(f"the process listening on {path} (pid {pid}) runs as {os_user(uid)} (uid {uid}), not "
                              f"as {os_user()}: nothing was sent to it; point KHIVE_SOCKET at a directory only you "
                              "can write", details={"socket": str(path), "peer_uid": uid, "peer_pid": pid})


def principal_for(frame_principal: str, transport: str, peer_uid: int) -> tuple[str, str]:
    """(principal, user) a request frame from ``peer_uid`` runs as.

    Over the CLI the peer is ``operator:<its user>`` (or, narrowed, ``agent:<its user>``); over MCP
    stdio ``agent:<its user>``. Over MCP HTTP the serving process (of this same uid) authenticated a
    bearer token and names its principal, which stands. The frame's name is never believed.
    """
    if transport == MCP_HTTP:
        return frame_principal, ""
    user = os_user(peer_uid)
    kind = frame_principal.partition(":")[0]
    if transport == MCP_STDIO or kind != OPERATOR:
        return f"{AGENT}:{user}", user
    return f"{OPERATOR}:{user}", user
