"""The daemon's pure parts: frames, the identity key, settings from the environment, the request parser."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from khive.cli.app import _command_of
from khive.daemon import frames, protocol
from khive.daemon.client import Call, Local, failed_envelope, forward_or_spawn
from khive.daemon.paths import settings_from_env
from khive.dsl import parse
from khive.errors import ConfigError, DaemonError, PackLoadError
from khive.plugins import plugins_from_env
from khive.scaffold import init_project


def test_frames_round_trip_over_a_socket_pair() -> None:
    left, right = socket.socketpair()
    with left, right:
        frames.send_frame(left, {"type": "hello", "text": "é" * 3})
        assert frames.recv_frame(right) == {"type": "hello", "text": "ééé"}
        left.sendall(frames.HEADER.pack(10) + b"{}")
        left.close()
        with pytest.raises(frames.ConnectionClosed) as info:
            frames.recv_frame(right)
        assert not info.value.clean and "middle of a frame" in info.value.message


def test_frame_limits_and_shapes_are_checked() -> None:
    with pytest.raises(frames.FrameTooLarge) as info:
        frames.check_size(frames.HEADER.pack(101), limit=100)
    assert info.value.code == "frame_too_large" and info.value.details == {"size": 101, "limit": 100}
    assert frames.check_size(frames.HEADER.pack(100), limit=100) == 100
    for body, reason in [(b"[1]", "JSON object"), (b'{"kind": 1}', "string 'type'"), (b"{", "not JSON")]:
        with pytest.raises(DaemonError, match=reason) as bad:
            frames.decode(body)
        assert bad.value.code == "bad_frame"


def test_identity_key_follows_config_env_refs_and_pack_selection(tmp_path: Path) -> None:
    init_project(tmp_path, "t")
    config = tmp_path / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "connections:\n  w: {driver: postgres, "
                                                                    "url: env:WAREHOUSE_URL}\n"))
    base = protocol.identity_key(tmp_path, {"WAREHOUSE_URL": "a"})
    assert base == protocol.identity_key(tmp_path, {"WAREHOUSE_URL": "a", "UNRELATED": "x"})
    assert base != protocol.identity_key(tmp_path, {"WAREHOUSE_URL": "b"})  # a referenced secret changed
    assert base != protocol.identity_key(tmp_path, {})
    assert base != protocol.identity_key(tmp_path, {"WAREHOUSE_URL": "a", "KHIVE_PACKS": "core"})
    config.write_text(config.read_text() + "# a comment\n")
    assert base != protocol.identity_key(tmp_path, {"WAREHOUSE_URL": "a"})  # the config itself changed
    assert len(base) == 16 and int(base, 16) >= 0


def test_a_variable_named_only_in_a_comment_is_not_part_of_the_identity(tmp_path: Path) -> None:
    """Found with realworld-pg: the starter's commented token line kept ``khive mcp`` off the daemon that
    ``KHIVE_HTTP_TOKEN=t khive serve --http`` had spawned."""
    init_project(tmp_path, "t")
    config = tmp_path / "khive.yaml"
    assert "# - {token: env:KHIVE_HTTP_TOKEN" in config.read_text()
    config.write_text(config.read_text() + "x: 'a #env:QUOTED'  # env:TRAILING\n")
    base = protocol.identity_key(tmp_path, {})
    for name in ("KHIVE_HTTP_TOKEN", "TRAILING"):
        assert protocol.identity_key(tmp_path, {name: "t"}) == base
    assert protocol.identity_key(tmp_path, {"QUOTED": "t"}) != base  # inside quotes a # starts no comment


def test_settings_from_the_environment(tmp_path: Path) -> None:
    default = settings_from_env({}, home_dir=tmp_path)
    assert default.socket == tmp_path / ".khive" / "khived.sock" and default.home == tmp_path / ".khive"
    assert not default.disabled and not default.strict and default.spawn_wait == 3.0
    beside = settings_from_env({"KHIVE_SOCKET": str(tmp_path / "s" / "k.sock")}, home_dir=tmp_path)
    assert beside.home == tmp_path / "s" and beside.log_file == tmp_path / "s" / "khived.log"
    both = settings_from_env({"KHIVE_SOCKET": str(tmp_path / "k.sock"), "KHIVE_HOME": str(tmp_path / "h"),
                              "KHIVE_NO_DAEMON": "1", "KHIVE_DAEMON_STRICT": "yes", "KHIVE_DAEMON_IDLE": "90"})
    assert both.home == tmp_path / "h" and both.disabled and both.strict and both.idle_seconds == 90
    with pytest.raises(ConfigError, match="KHIVE_DAEMON_IDLE='soon' is not a number") as info:
        settings_from_env({"KHIVE_DAEMON_IDLE": "soon"})
    assert info.value.details["fix"] == "export KHIVE_DAEMON_IDLE=1800"
    with pytest.raises(ConfigError, match="must be positive"):
        settings_from_env({"KHIVE_DAEMON_SPAWN_WAIT": "0"})
    long = settings_from_env({"KHIVE_SOCKET": "/tmp/" + "x" * 120})
    with pytest.raises(DaemonError, match="longer than 107 bytes"):
        long.check_socket_path()


def test_extra_packs_by_import_path() -> None:
    assert plugins_from_env({}) == []
    [pack] = plugins_from_env({"KHIVE_EXTRA_PACKS": " daemonpack:PACK , "})
    assert pack.khive_pack_info().name == "d"
    with pytest.raises(PackLoadError, match="'daemonpack:MISSING' cannot be loaded") as info:
        plugins_from_env({"KHIVE_EXTRA_PACKS": "daemonpack:MISSING"})
    assert info.value.details == {"entry": "daemonpack:MISSING"}


def test_the_request_command_is_recognised_without_the_full_parser() -> None:
    assert _command_of(["request", "ping()"]) == "request"
    assert _command_of(["--project", "request", "verbs"]) == "verbs"  # "request" was --project's value
    assert _command_of(["--verbose", "--project", "/p", "request", "-"]) == "request"
    assert _command_of(["--version"]) is None


def test_deliberate_local_paths_and_the_strict_error_shape(tmp_path: Path) -> None:
    settings = settings_from_env({"KHIVE_HOME": str(tmp_path), "KHIVE_NO_DAEMON": "1", "KHIVE_DAEMON_STRICT": "1"})
    call = Call(parse("[ping(), d.write(tag=\"x\")]"), "operator:t", "cli")
    assert forward_or_spawn(call, project=tmp_path, env={}, settings=settings) == Local("KHIVE_NO_DAEMON=1",
                                                                                        chosen=True)
    envelope = failed_envelope(call, "daemon_unavailable", "why", socket="/s")
    assert envelope["summary"] == {"total": 2, "succeeded": 0, "failed": 2, "aborted": 0}
    assert [r["verb"] for r in envelope["results"]] == ["ping", "d.write"] and envelope["status"] == "failed"
    assert envelope["results"][1]["error"] == {"code": "daemon_unavailable", "message": "why",
                                               "details": {"socket": "/s"}}


def test_the_client_sends_the_daemon_the_request_it_parsed_not_its_text(tmp_path: Path) -> None:
    """ADR 0044: parse once at the edge. A stand-in daemon on the socket records the frame it is sent."""
    project = tmp_path / "project"
    init_project(project, "parse-once")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    settings = settings_from_env({"KHIVE_HOME": str(home)})
    config_id = protocol.identity_key(project, {})
    received: list[dict[str, object]] = []
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(settings.socket))
    listener.listen(1)

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            frames.recv_frame(connection)
            frames.send_frame(connection, {"type": "hello", "protocol": protocol.PROTOCOL, "config_id": config_id,
                                           "pid": 1, "writes": []})
            received.append(frames.recv_frame(connection))
            frames.send_frame(connection, {"type": "envelope", "envelope": {"status": "success", "results": []}})

    server = threading.Thread(target=serve)
    server.start()
    try:
        text = 'd.read(tag="a") | d.read(tag="\\$prev.tag", note=$prev.tag)'
        outcome = forward_or_spawn(Call(parse(text), "operator:t", "cli", request_id="r-1"), project=project,
                                   env={}, settings=settings)
    finally:
        server.join(timeout=30)
        listener.close()
    assert not isinstance(outcome, Local), outcome
    [frame] = received
    assert "ops" not in frame
    assert frame["request"] == {"chain": [{"verb": "d.read", "args": {"tag": "a"}},
                                          {"verb": "d.read", "args": {"tag": "\\$prev.tag", "note": "$prev.tag"}}]}
