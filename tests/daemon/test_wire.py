"""The socket itself: peer credentials, oversize frames, malformed frames, the hello rule."""

from __future__ import annotations

import os
import pwd
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from daemon_helpers import Daemon, audit

from khive.daemon import frames, protocol
from khive.dsl import parse

pytestmark = pytest.mark.slow


def connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(path))
    return sock


def started(daemon: Daemon, project: Path) -> dict[str, object]:
    assert daemon.khive("daemon", "start", cwd=project).returncode == 0
    return daemon.status(project)


def test_oversize_frame_is_refused_without_reading_its_body(daemon: Daemon, project: Path) -> None:
    started(daemon, project)
    with connect(daemon.socket) as sock:
        # Only the header: a daemon that tried to read 64 MiB of body would never answer.
        sock.sendall(struct.pack(">I", 64 * 1024 * 1024))
        answer = frames.recv_frame(sock)
        assert answer["type"] == "error" and answer["code"] == "frame_too_large"
        assert answer["details"] == {"size": 64 * 1024 * 1024, "limit": frames.MAX_REQUEST_FRAME}
        assert sock.recv(1) == b""  # and it hung up
    assert daemon.khive("request", 'd.read(tag="still-serving")', cwd=project).returncode == 0


def test_malformed_frames_get_a_clear_error(daemon: Daemon, project: Path) -> None:
    status = started(daemon, project)
    with connect(daemon.socket) as sock:
        body = b"not json"
        sock.sendall(struct.pack(">I", len(body)) + body)
        answer = frames.recv_frame(sock)
        assert answer["code"] == "bad_frame" and "not JSON" in answer["message"]
    with connect(daemon.socket) as sock:  # a request before hello is refused
        frames.send_frame(sock, protocol.request(request_id="x", ops="d.read(tag=\"x\")", presentation="agent",
                                                 principal="operator:t", transport="cli", user="t"))
        answer = frames.recv_frame(sock)
        assert answer["code"] == "daemon_refused" and "hello" in answer["message"]
    with connect(daemon.socket) as sock:
        frames.send_frame(sock, protocol.hello(str(status["config_id"])))
        assert frames.recv_frame(sock)["type"] == "hello"
        frames.send_frame(sock, {**protocol.request(request_id="y", ops="d.read(tag=\"y\")", presentation="loud",
                                                    principal="operator:t", transport="cli", user="t")})
        answer = frames.recv_frame(sock)
        assert answer["code"] == "bad_frame" and "'presentation' must be one of agent" in answer["message"]
    with connect(daemon.socket) as sock:
        frames.send_frame(sock, protocol.hello(str(status["config_id"])))
        frames.recv_frame(sock)
        frames.send_frame(sock, protocol.request(request_id="z", ops="d.read(tag=", presentation="agent",
                                                 principal="operator:t", transport="cli", user="t"))
        answer = frames.recv_frame(sock)
        assert answer["code"] == "parse_error" and answer["details"]["line"] == 1


def test_a_request_that_does_not_parse_is_audited_without_its_text(daemon: Daemon, project: Path) -> None:
    status = started(daemon, project)
    with connect(daemon.socket) as sock:
        frames.send_frame(sock, protocol.hello(str(status["config_id"])))
        frames.recv_frame(sock)
        frames.send_frame(sock, protocol.request(request_id="unparsed-1", ops='d.read(tag=hunter2-secret)',
                                                 presentation="agent", principal="agent:raw", transport="mcp-http",
                                                 user="t"))
        assert frames.recv_frame(sock)["code"] == "parse_error"
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "unparsed-1"]
    assert (event["verb"], event["outcome"], event["principal"], event["transport"]) == (
        "(parse)", "parse_error", "agent:raw", "mcp-http")
    assert event["process"]["pid"] == status["pid"]
    assert "hunter2" not in orjson.dumps(event).decode()


CLIENT_AS_OTHER_USER = """
import socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
try:
    sock.connect(sys.argv[1])
except PermissionError:
    print("EACCES"); raise SystemExit(0)
body = b'{"type":"hello","protocol":1,"version":"x","config_id":"x"}'
try:
    sock.sendall(struct.pack(">I", len(body)) + body)
except (BrokenPipeError, ConnectionResetError):
    pass  # the daemon answers and hangs up at once; its answer is still there to read
size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
print(sock.recv(size, socket.MSG_WAITALL).decode())
"""


def system_python() -> str | None:
    """An interpreter the other user can run (the venv's may live under root's home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if os.path.exists(candidate) and all(os.stat(part).st_mode & 0o001 for part in _ancestors(candidate)):
            return candidate
    return None


def _ancestors(path: str) -> list[str]:
    real = Path(os.path.realpath(path))
    return [str(parent) for parent in reversed(real.parents)] + [str(real)]


def as_nobody(socket_path: Path) -> str:
    nobody = pwd.getpwnam("nobody")
    python = system_python()
    if python is None:
        pytest.skip("no Python interpreter that the user nobody may execute")
    done = subprocess.run([python, "-I", "-S", "-c", CLIENT_AS_OTHER_USER, str(socket_path)],
                          user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[], capture_output=True, text=True,
                          timeout=60, check=False, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user (nobody); "
                                              "the check is SO_PEERCRED uid == the daemon's uid")
def test_connections_from_another_uid_are_refused(daemon: Daemon, project: Path) -> None:
    started(daemon, project)
    assert as_nobody(daemon.socket) == "EACCES"  # first line of defence: 0700 directory, 0600 socket
    os.chmod(daemon.home, 0o755)  # open the file permissions to reach the second line: the peer check
    os.chmod(daemon.socket, 0o666)
    answer = orjson.loads(as_nobody(daemon.socket))
    assert answer["type"] == "error" and answer["code"] == "daemon_refused"
    assert f"uid {os.getuid()} only" in answer["message"] and answer["details"]["uid"] == pwd.getpwnam("nobody").pw_uid
    assert "refused a connection" in daemon.log()
    assert daemon.status(project)["requests_served"] == 0


def _hello(sock: socket.socket, status: dict[str, object]) -> None:
    frames.send_frame(sock, protocol.hello(str(status["config_id"])))
    assert frames.recv_frame(sock)["type"] == "hello"


def _request_frame(**carried: object) -> dict[str, object]:
    return {"type": "request", "id": "wire-1", "presentation": "agent", "principal": "operator:t",
            "transport": "cli", "user": "t", **carried}


def test_a_request_parsed_by_its_client_runs_as_parsed(daemon: Daemon, project: Path) -> None:
    """ADR 0044: the frame carries the parsed request; references and look-alike strings keep their meaning."""
    status = started(daemon, project)
    text = r'd.read(tag="first", note="\$prev.tag") | d.read(tag="second", note=[$prev.tag, "$previous"])'
    with connect(daemon.socket) as sock:
        _hello(sock, status)
        frames.send_frame(sock, protocol.request(request_id="parsed-1", parsed=parse(text), presentation="verbose",
                                                 principal="operator:t", transport="cli", user="t"))
        envelope = frames.recv_frame(sock)["envelope"]
    first, second = (result["result"] for result in envelope["results"])
    assert envelope["status"] == "success", envelope
    assert (first["tag"], second["tag"]) == ("first", "second")
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "parsed-1" and e["args"]["tag"] == "second"]
    assert event["args"]["note"] == ["first", "$previous"]
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "parsed-1" and e["args"]["tag"] == "first"]
    assert event["args"]["note"] == "$prev.tag"


@pytest.mark.parametrize(("carried", "expected"), [
    ({"ops": 'd.read(tag="x")', "request": {"verb": "d.read", "args": {"tag": "x"}}}, "exactly one of"),
    ({}, "exactly one of"),
    ({"ops": ["d.read"]}, "'ops' must be the request text"),
])
def test_a_frame_must_carry_the_request_once(daemon: Daemon, project: Path, carried: dict[str, object],
                                             expected: str) -> None:
    status = started(daemon, project)
    with connect(daemon.socket) as sock:
        _hello(sock, status)
        frames.send_frame(sock, _request_frame(**carried))
        answer = frames.recv_frame(sock)
    assert answer["code"] == "bad_frame" and expected in answer["message"], answer


def test_a_parsed_request_of_the_wrong_shape_is_refused_and_audited(daemon: Daemon, project: Path) -> None:
    status = started(daemon, project)
    with connect(daemon.socket) as sock:
        _hello(sock, status)
        frames.send_frame(sock, _request_frame(id="badshape-1", request={"chain": [
            {"verb": "d.read", "args": {"tag": "$prev.tag"}}]}))
        answer = frames.recv_frame(sock)
    assert answer["code"] == "parse_error" and answer["details"]["reason"] == "prev-in-first-op", answer
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "badshape-1"]
    assert (event["verb"], event["outcome"]) == ("(parse)", "parse_error")


def _answer(daemon: Daemon, status: dict[str, object], body: bytes) -> dict[str, object]:
    """The daemon's answer to one raw request frame ``body`` (JSON text, sent as is: duplicate keys, big
    integers and all)."""
    with connect(daemon.socket) as sock:
        _hello(sock, status)
        sock.sendall(struct.pack(">I", len(body)) + body)
        return frames.recv_frame(sock)


def _raw_request(request_id: str, **carried: bytes) -> bytes:
    """A request frame whose carried fields are raw JSON text."""
    head = orjson.dumps(_request_frame(id=request_id))[:-1]
    return head + b"".join(b',"' + name.encode() + b'":' + value for name, value in carried.items()) + b"}"


@pytest.mark.parametrize("number", ["18446744073709551616", "-9223372036854775809", "123456789012345678901234567890"])
def test_an_integer_beyond_64_bits_is_refused_whether_parsed_or_text(daemon: Daemon, project: Path,
                                                                     number: str) -> None:
    """orjson reads such an integer as a float, silently: the parsed request would run with another value."""
    status = started(daemon, project)
    as_text = _answer(daemon, status, _raw_request("big-text", ops=orjson.dumps(f'd.read(tag="x", note={number})')))
    parsed = _answer(daemon, status, _raw_request(
        "big-parsed", request=b'{"verb":"d.read","args":{"tag":"x","note":[' + number.encode() + b']}}'))
    for answer in (as_text, parsed):
        assert answer["code"] == "parse_error", answer
        assert answer["details"]["reason"] == "number-out-of-range", answer  # type: ignore[index]
    events = {e["requestId"]: e for e in audit(project, daemon.env) if e["requestId"] in ("big-text", "big-parsed")}
    assert {e["verb"] for e in events.values()} == {"(parse)"} and len(events) == 2


def test_an_integer_at_the_64_bit_edges_runs_whether_parsed_or_text(daemon: Daemon, project: Path) -> None:
    status = started(daemon, project)
    edges = b"[18446744073709551615,-9223372036854775808,-0.0,1e308,1.5e-320]"
    as_text = _answer(daemon, status, _raw_request("edge-text", ops=b'"d.read(tag=\\"x\\", note=' + edges + b')"'))
    parsed = _answer(daemon, status, _raw_request(
        "edge-parsed", request=b'{"verb":"d.read","args":{"tag":"x","note":' + edges + b"}}"))
    assert as_text["envelope"]["status"] == parsed["envelope"]["status"] == "success"  # type: ignore[index]
    notes = [e["args"]["note"] for e in audit(project, daemon.env) if e["requestId"] in ("edge-text", "edge-parsed")]
    assert notes == [orjson.loads(edges)] * 2


@pytest.mark.parametrize(("levels", "runs"), [(62, True), (63, False)])
def test_a_parsed_batch_nests_as_deep_as_the_same_batch_as_text(daemon: Daemon, project: Path, levels: int,
                                                                runs: bool) -> None:
    """The batch's own brackets are a level of the DSL text: a parsed batch gets no extra level."""
    status = started(daemon, project)
    note = "[" * levels + "1" + "]" * levels
    as_text = _answer(daemon, status, _raw_request("deep-text", ops=orjson.dumps(f'[d.read(tag="x", note={note})]')))
    parsed = _answer(daemon, status, _raw_request(
        "deep-parsed", request=f'[{{"verb":"d.read","args":{{"tag":"x","note":{note}}}}}]'.encode()))
    for answer in (as_text, parsed):
        if runs:
            assert answer["envelope"]["status"] == "success", answer  # type: ignore[index]
        else:
            assert (answer["code"], answer["details"]["reason"]) == ("parse_error", "too-deep"), answer  # type: ignore[index]


def test_an_empty_request_text_is_refused_and_audited(daemon: Daemon, project: Path) -> None:
    status = started(daemon, project)
    answer = _answer(daemon, status, _raw_request("empty-1", ops=b'""'))
    assert (answer["code"], answer["details"]["reason"]) == ("parse_error", "empty"), answer  # type: ignore[index]
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "empty-1"]
    assert (event["verb"], event["outcome"]) == ("(parse)", "parse_error")


LONG_CHECKS = {
    # each frame just under the 2 MiB a parsed request may take (jsonform.MAX_SOURCE_CHARS)
    "a reference look-alike up to its last character": {"tag": "$prev" + ".a" * 1_000_000 + "!"},
    "a long string beside a long digit run": {"tag": "x" * 2_000_000, "note": "1234567890123456789"},
    "a reference of 650,000 steps": {"tag": "$prev" + "[7]" * 650_000},
}


@pytest.mark.parametrize("args", list(LONG_CHECKS.values()), ids=list(LONG_CHECKS))
def test_ping_answers_within_100_ms_while_a_long_parsed_request_is_checked(daemon: Daemon, project: Path,
                                                                          args: dict[str, str]) -> None:
    """ADR 0027's bound, for the check of a parsed request: each hostile frame is ~3.8 MB that takes the
    check long (~0.4 s of one regular expression before this was fixed), then a bad verb, so it is refused
    after the whole check. A timing assertion is what the issue asks for; the bound is on the median, as
    in test_no_stall.py (a shared two-core machine), and on the pings that a blocked loop would hold."""
    status = started(daemon, project)
    body = orjson.dumps(_request_frame(id="long-check", request=[{"verb": "d.read", "args": args},
                                                                  {"verb": "not a verb"}]))
    frame = struct.pack(">I", len(body)) + body
    answers: list[dict[str, object]] = []

    def hostile() -> None:
        with connect(daemon.socket) as sock:
            _hello(sock, status)
            for _ in range(3):
                sock.sendall(frame)
                answers.append(frames.recv_frame(sock))

    worker = threading.Thread(target=hostile)
    pings: list[float] = []
    with connect(daemon.socket) as sock:
        _hello(sock, status)
        worker.start()
        while worker.is_alive():
            began = time.perf_counter()
            frames.send_frame(sock, _request_frame(id="ping", ops="ping()"))
            assert frames.recv_frame(sock)["envelope"]["status"] == "success"
            pings.append(time.perf_counter() - began)
    worker.join()
    assert [answer["details"]["reason"] for answer in answers] == ["verb-name"] * 3  # type: ignore[index]
    assert len(pings) >= 3, "too few pings while the hostile frames were checked to prove anything"
    assert statistics.median(pings) < 0.1, sorted(pings)
    # A check on the loop (or one long regular expression, which holds the GIL) stalls one ping per frame
    # for 0.3-0.5 s; one slow ping is allowed for the noise of a shared machine.
    assert sum(ping > 0.2 for ping in pings) <= 1, sorted(pings)


@pytest.mark.parametrize("carried", ["ops", "request"])
def test_a_reference_index_of_5000_digits_is_refused_and_audited(daemon: Daemon, project: Path, carried: str) -> None:
    """Python refuses to convert more than 4,300 digits to an int (ValueError): the daemon used to drop the
    connection without an answer or an audit event."""
    status = started(daemon, project)
    ref = "$prev[" + "9" * 5000 + "]"
    text = f'd.read(tag="a") | d.read(tag="b", note={ref})'
    data = {"chain": [{"verb": "d.read", "args": {"tag": "a"}}, {"verb": "d.read", "args": {"tag": "b", "note": ref}}]}
    answer = _answer(daemon, status, _raw_request("ref-5000", **{carried: orjson.dumps(
        text if carried == "ops" else data)}))
    assert (answer["code"], answer["details"]["reason"]) == ("parse_error", "number-out-of-range"), answer  # type: ignore[index]
    [event] = [e for e in audit(project, daemon.env) if e["requestId"] == "ref-5000"]
    assert (event["verb"], event["outcome"]) == ("(parse)", "parse_error")
