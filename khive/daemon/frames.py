"""Frames on the daemon socket: a 4-byte big-endian body length, then an orjson object.

The length is checked against the receiver's limit before a byte of the body is read, so an
oversize frame costs nothing but its header; the receiver answers with an error and closes.
"""

from __future__ import annotations

import socket
import struct
from typing import TYPE_CHECKING, Any

import orjson

from khive.errors import DaemonError

if TYPE_CHECKING:
    from anyio.streams.buffered import BufferedByteReceiveStream

HEADER = struct.Struct(">I")
MAX_REQUEST_FRAME = 4 * 1024 * 1024  # what a daemon accepts: DSL text is at most 1 MiB
MAX_RESPONSE_FRAME = 1024 * 1024 * 1024  # what a client accepts: envelopes can be large


class FrameTooLarge(DaemonError):
    code = "frame_too_large"

    def __init__(self, size: int, limit: int):
        super().__init__(f"frame of {size} bytes is over the {limit}-byte limit; send a smaller request",
                         details={"size": size, "limit": limit})


class ConnectionClosed(DaemonError):
    """The peer closed the connection; ``clean`` when it did so between frames."""

    code = "daemon_connection_lost"

    def __init__(self, message: str, *, clean: bool):
        super().__init__(message)
        self.clean = clean


def encode(message: dict[str, Any]) -> bytes:
    body = orjson.dumps(message)
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DaemonError(f"frame body is not JSON: {exc}", code="bad_frame") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise DaemonError("frame body must be a JSON object with a string 'type'", code="bad_frame")
    return message


def check_size(header: bytes, limit: int) -> int:
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise FrameTooLarge(size, limit)
    return int(size)


# --- blocking sockets (the client) --------------------------------------------------------------

def send_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode(message))


def recv_frame(sock: socket.socket, limit: int = MAX_RESPONSE_FRAME) -> dict[str, Any]:
    header = _recv_exactly(sock, HEADER.size, at_boundary=True)
    return decode(_recv_exactly(sock, check_size(header, limit), at_boundary=False))


def _recv_exactly(sock: socket.socket, size: int, *, at_boundary: bool) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            clean = at_boundary and not chunks
            raise ConnectionClosed("the daemon closed the connection" + ("" if clean else " in the middle of a frame"),
                                   clean=clean)
        chunks += chunk
    return bytes(chunks)


# --- anyio streams (the daemon) -----------------------------------------------------------------

async def receive_frame(stream: BufferedByteReceiveStream, limit: int = MAX_REQUEST_FRAME) -> dict[str, Any] | None:
    """The next frame, or None when the peer closed the connection between frames."""
    body = await receive_body(stream, limit)
    return None if body is None else decode(body)


async def receive_body(stream: BufferedByteReceiveStream, limit: int = MAX_REQUEST_FRAME) -> bytes | None:
    """The next frame's body, undecoded (its JSON text), or None when the peer closed the connection between
    frames."""
    import anyio

    try:
        header = await stream.receive_exactly(HEADER.size)
    except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        return None
    size = check_size(header, limit)
    try:
        body = await stream.receive_exactly(size)
    except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        raise ConnectionClosed("the client closed the connection in the middle of a frame", clean=False) from None
    return bytes(body)
