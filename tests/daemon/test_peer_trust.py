"""The daemon socket's two ends trust only their own uid (ADR 0032).

* A client never sends a byte to a socket that another user bound (here: ``nobody``, in a shared
  directory): it refuses with ``daemon_untrusted`` and runs locally, or fails under KHIVE_DAEMON_STRICT.
* The daemon decides a request's principal from its peer's uid: a frame may narrow it, never widen it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import HERE, Daemon, audit, wait_for

from khive.daemon import protocol
from khive.daemon.connection import DaemonConnection
from khive.identity import os_user

pytestmark = [pytest.mark.slow]


@pytest.fixture
def foreign_socket() -> Iterator[tuple[Path, Path]]:
    """(socket, record): a fake daemon run as ``nobody`` on a socket in a world-writable directory."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the fake daemon as another user")
    shared = Path(tempfile.mkdtemp(prefix="kshared-", dir="/tmp"))
    shared.chmod(0o1777)  # like /tmp: anyone may create a file here
    socket_path, record, ready = shared / "khived.sock", shared / "record.jsonl", shared / "ready"
    record.touch(mode=0o666)
    record.chmod(0o666)
    log = shared / "fake.log"
    with log.open("wb") as errors:
        fake = subprocess.Popen([sys.executable, str(HERE / "fake_daemon.py"), str(socket_path), str(record),
                                 str(ready)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
    try:
        wait_for(lambda: ready.exists() or fake.poll() is not None, "the fake daemon to listen", timeout=20)
        assert fake.poll() is None, log.read_text()
        yield socket_path, record
    finally:
        fake.kill()
        fake.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(shared)], check=False)


def request(daemon: Daemon, project: Path, socket_path: Path, *, strict: bool) -> subprocess.CompletedProcess[str]:
    env = {"KHIVE_SOCKET": str(socket_path), "KHIVE_DAEMON_STRICT": "1" if strict else "0"}
    return daemon.khive("--verbose", "--project", str(project), "request", 'ping(echo="mine")', cwd=project, env=env)


def test_a_socket_of_another_user_gets_nothing_and_strict_mode_fails(daemon: Daemon, project: Path,
                                                                     foreign_socket: tuple[Path, Path]) -> None:
    socket_path, record = foreign_socket
    done = request(daemon, project, socket_path, strict=True)
    envelope = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    (result,) = envelope["results"]
    assert result["error"]["code"] == "daemon_untrusted"
    assert "nobody" in result["error"]["message"] and "nothing was sent" in result["error"]["message"]
    assert record.read_text() == ""  # not even the hello reached it


def test_a_socket_of_another_user_is_passed_over_for_a_local_run(daemon: Daemon, project: Path,
                                                                 foreign_socket: tuple[Path, Path]) -> None:
    socket_path, record = foreign_socket
    done = request(daemon, project, socket_path, strict=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["result"] == {"pong": True, "echo": "mine"}
    assert "dispatching locally" in done.stderr and "nobody" in done.stderr
    assert record.read_text() == ""


def test_the_daemon_decides_the_principal_from_the_peer(daemon: Daemon, project: Path) -> None:
    started = daemon.khive("--project", str(project), "daemon", "start", cwd=project)
    assert started.returncode == 0, started.stderr
    config_id = protocol.identity_key(project, daemon.env)
    me = os_user()
    claims = [("cli", "operator:ci-bot", f"operator:{me}"),  # the name is the peer's, never the frame's
              ("cli", "agent:ci-bot", f"agent:{me}"),  # narrowed by the frame: kept narrow
              ("mcp-stdio", "operator:root", f"agent:{me}"),  # an MCP caller is an agent, never an operator
              ("mcp-http", "agent:ci-bot", "agent:ci-bot")]  # a token's principal, named by our own HTTP server
    for index, (transport, claimed, _) in enumerate(claims):
        with DaemonConnection.open(daemon.socket) as connection:
            connection.call(protocol.hello(config_id))
            envelope = connection.request(protocol.request(
                request_id=f"claim-{index}", ops='d.read(tag="who")', presentation="verbose", principal=claimed,
                transport=transport, user="ci-bot", client="claims-to-be-ci-bot"))
        assert envelope["status"] == "success", envelope
    events = {event["requestId"]: event for event in audit(project, daemon.env)}
    for index, (transport, _, expected) in enumerate(claims):
        event = events[f"claim-{index}"]
        assert (event["transport"], event["principal"], event["client"]) == (
            transport, expected, "claims-to-be-ci-bot"), event


def test_the_daemon_never_removes_another_users_socket(daemon: Daemon, project: Path,
                                                       foreign_socket: tuple[Path, Path]) -> None:
    socket_path, record = foreign_socket
    done = daemon.khive("--project", str(project), "daemon", "run", cwd=project,
                        env={"KHIVE_SOCKET": str(socket_path)}, timeout=60)
    assert done.returncode != 0
    assert "daemon_untrusted" in done.stderr or "nobody" in done.stderr, done.stderr
    assert socket_path.is_socket() and socket_path.stat().st_uid != os.getuid()
    assert record.read_text() == ""


def test_a_client_refuses_before_sending_anything(foreign_socket: tuple[Path, Path]) -> None:
    socket_path, record = foreign_socket
    from khive.daemon.peer import UntrustedDaemon

    with pytest.raises(UntrustedDaemon) as info:
        DaemonConnection.open(socket_path)
    assert info.value.code == "daemon_untrusted"
    assert record.read_text() == ""
