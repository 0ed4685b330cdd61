"""Input that is not UTF-8 gets exit code 2 and a message naming the byte and its position, never a
traceback: arguments of every command, stdin, khive.yaml, the project's own path, path variables."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

KHIVE = os.fsencode(Path(sys.executable).parent / "khive")
MESSAGE = re.compile(r"byte 0x([0-9a-f]{2}) at position (\d+) is not UTF-8")


def khive(*args: bytes, cwd: Path, env: dict[bytes, bytes] | None = None, stdin: bytes | None = None
          ) -> subprocess.CompletedProcess[bytes]:
    base = {os.fsencode(key): os.fsencode(value) for key, value in os.environ.items() if key != "KHIVE_PROJECT"}
    full_env = {**base, b"KHIVE_NO_DAEMON": b"1", **(env or {})}
    return subprocess.run([KHIVE, *args], cwd=cwd, env=full_env, input=stdin, capture_output=True, timeout=60,
                          check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    assert khive(b"init", os.fsencode(root), cwd=tmp_path).returncode == 0
    return root


def assert_refused(done: subprocess.CompletedProcess[bytes], byte: int, position: int) -> None:
    stderr = done.stderr.decode("utf-8")  # the message itself is UTF-8
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr
    found = MESSAGE.search(stderr)
    assert found is not None, stderr
    assert (int(found.group(1), 16), int(found.group(2))) == (byte, position), stderr


ARGUMENTS = [
    pytest.param([b"request", b"\xff"], 0xFF, 0, id="request-lone-byte"),
    pytest.param([b"request", b'ping(echo="\xff")'], 0xFF, 11, id="request-in-string"),
    pytest.param([b"request", b'ping(echo="caf\xe9")'], 0xE9, 14, id="request-latin-1"),
    pytest.param([b"request", b'ping(echo="\xc3")'], 0xC3, 11, id="request-truncated-sequence"),
    pytest.param([b"request", b'ping(echo="\xed\xa0\x80")'], 0xED, 11, id="request-encoded-surrogate"),
    pytest.param([b"request", b'ping(echo="\xc0\xaf")'], 0xC0, 11, id="request-overlong"),
    pytest.param([b"request", b'ping()\x80'], 0x80, 6, id="request-after-call"),
    pytest.param([b"request", b'p\xfeing()'], 0xFE, 1, id="request-in-verb"),
    pytest.param([b"request", b'{"verb": "ping", "args": {"echo": "\x80"}}'], 0x80, 35, id="request-json-form"),
    pytest.param([b"request", b'[ping(), ping(echo="\x81")]'], 0x81, 20, id="request-batch"),
    pytest.param([b"request", b'ping() | ping(echo="\x82")'], 0x82, 20, id="request-chain"),
    pytest.param([b"request", b"ping()", b"--request-id", b"id-\xff"], 0xFF, 3, id="request-id"),
    pytest.param([b"request", b"ping()", b"--presentation", b"\xff"], 0xFF, 0, id="presentation"),
    pytest.param([b"--project", b"/tmp/\xff", b"request", b"ping()"], 0xFF, 5, id="project-flag"),
    pytest.param([b"scan", b"sh\xffop"], 0xFF, 2, id="scan-connection"),
    pytest.param([b"ingest", b"\xff"], 0xFF, 0, id="ingest-connection"),
    pytest.param([b"audit", b"--verb", b"\xff"], 0xFF, 0, id="audit-verb"),
    pytest.param([b"audit", b"--principal", b"op:\xff"], 0xFF, 3, id="audit-principal"),
    pytest.param([b"audit", b"--outcome", b"\xff"], 0xFF, 0, id="audit-outcome"),
    pytest.param([b"verbs", b"--pack", b"\xff"], 0xFF, 0, id="verbs-pack"),
    pytest.param([b"init", b"new-\xff"], 0xFF, 4, id="init-directory"),
    pytest.param([b"\xff"], 0xFF, 0, id="unknown-command"),
    pytest.param([b"daemon", b"\xff"], 0xFF, 0, id="daemon-subcommand"),
    pytest.param([b"setup-agents", b"--\xff"], 0xFF, 2, id="setup-agents-option"),
]


@pytest.mark.parametrize(("argv", "byte", "position"), ARGUMENTS)
def test_arguments_that_are_not_utf8(project: Path, argv: list[bytes], byte: int, position: int) -> None:
    assert_refused(khive(*argv, cwd=project), byte, position)


@pytest.mark.parametrize(("stdin", "byte", "position"), [
    pytest.param(b"\xff", 0xFF, 0, id="lone-byte"),
    pytest.param(b'ping(echo="\xe9t\xe9")', 0xE9, 11, id="latin-1"),
    pytest.param(b'ping()\n\n[ping(echo="\x80")]', 0x80, 20, id="third-line"),
    pytest.param(b'{"verb": "ping", "args": {"echo": "\xf0\x9f"}}', 0xF0, 35, id="json-form-truncated-emoji"),
    pytest.param(b"\xef\xbb\xbfping()\xff", 0xFF, 9, id="after-a-bom"),
])
def test_stdin_that_is_not_utf8(project: Path, stdin: bytes, byte: int, position: int) -> None:
    done = khive(b"request", b"-", cwd=project, stdin=stdin)
    assert_refused(done, byte, position)
    assert b"stdin" in done.stderr


@pytest.mark.parametrize("variable", [b"KHIVE_PROJECT", b"KHIVE_HOME", b"KHIVE_SOCKET"])
def test_path_variables_that_are_not_utf8(project: Path, variable: bytes) -> None:
    done = khive(b"request", b"ping()", cwd=project, env={variable: b"/tmp/k\xff"})
    assert_refused(done, 0xFF, 6)
    assert variable in done.stderr


def test_a_khive_yaml_that_is_not_utf8(project: Path) -> None:
    config = project / "khive.yaml"
    config.write_bytes(config.read_bytes() + b"\nname: caf\xe9\n")
    size = len(config.read_bytes())
    done = khive(b"request", b"ping()", cwd=project)
    assert_refused(done, 0xE9, size - 2)
    assert b"khive.yaml:" in done.stderr and b"UTF-8" in done.stderr


def test_a_project_directory_whose_name_is_not_utf8(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(root)
    (Path(os.fsdecode(root)) / "khive.yaml").write_text("version: 1\n")
    done = khive(b"request", b"ping()", cwd=Path(os.fsdecode(root)))
    assert_refused(done, 0xE9, len(os.fsencode(tmp_path)) + 4)
    assert b"project directory" in done.stderr


def test_valid_utf8_still_works(project: Path) -> None:
    done = khive(b"request", 'ping(echo="café 🙂")'.encode(), cwd=project)
    assert done.returncode == 0, done.stderr
    assert "café 🙂".encode() in done.stdout
