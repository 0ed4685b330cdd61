"""A value nothing can encode fails only its own op, with ``unencodable_value`` naming where it was and its
type; its siblings in the batch succeed and the daemon stays up (every transport)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from value_transports import TRANSPORTS, Site, ask

from khive.scaffold import init_project

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    home = Path(tempfile.mkdtemp(prefix="kv-", dir="/tmp"))
    paths = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")]))
    made = Site(tmp_path_factory.mktemp("safety") / "project", home,
                {"KHIVE_EXTRA_PACKS": "valuepack:PACK", "PYTHONPATH": paths})
    init_project(made.project, "tester")
    try:
        yield made
    finally:
        made.stop_daemon()
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_unencodable_value_fails_only_its_op(site: Site, transport: str, tmp_path: Path) -> None:
    envelope = await ask(site, transport, '[v.shape_rows(), ping(echo="still here"), v.shape_result()]', tmp_path)
    rows, ping, result = envelope["results"]
    assert envelope["status"] == "partial"
    assert ping == {"ok": True, "verb": "ping", "result": {"pong": True, "echo": "still here"}}

    assert rows["ok"] is False and rows["error"]["code"] == "unencodable_value"
    details = rows["error"]["details"]
    assert (details["column"], details["type"], details["pythonType"]) == ("outline", "geometry", "Shape")
    assert "outline" in rows["error"]["message"] and "geometry" in rows["error"]["message"]

    assert result["ok"] is False and result["error"]["code"] == "unencodable_value"
    assert result["error"]["details"]["column"] == "$.found[0].outline"
    assert result["error"]["details"]["pythonType"] == "Shape"

    if transport != "cli":
        pid = site.daemon_pid()
        assert pid is not None
        again = await ask(site, "cli-daemon", "ping()", tmp_path)
        assert again["status"] == "success" and site.daemon_pid() == pid  # the same daemon answered
