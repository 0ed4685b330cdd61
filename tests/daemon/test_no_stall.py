"""The issue's acceptance test: while one client runs a slow or hostile op through the daemon, another
client's ``ping()`` over the same daemon answers within 100 ms (ADR 0027's threading rule).

The project raises its limits (``limits:`` in khive.yaml) so the hostile ops are as expensive as an
operator can allow: an alias bomb that is expanded, a search with thousands of distinct words, a
DuckDB cross join, a batch of wiki pages each committed to git. At least three pings must have been
answered while the hostile op was still running, or the test proves nothing and fails.

A timing assertion is what the issue asks for. The pings are taken one after another and the median
must be under 100 ms; every ping must come back within a second (a blocked loop would take as long
as the hostile op). On a shared two-core machine a single ping can lose the GIL to the hostile
worker for a few switch intervals, which is why the bound is on the median.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from daemon_helpers import Daemon, wait_for

from khive.daemon import protocol
from khive.daemon.connection import DaemonConnection
from khive.scaffold import init_project

pytestmark = pytest.mark.slow

PACKS = {"KHIVE_PACKS": "core,wiki,sl,scan,discover"}
LIMITS = """
limits:
  query_chars: 1048576
  query_terms: 1000000
  yaml_aliases: 1000000
  yaml_alias_nodes: 100000000
  sl_source_chars: 1048576
  wiki_body_chars: 1048576
  wiki_frontmatter_chars: 1048576
wiki:
  git_commit: true
connections:
  wh: {driver: duckdb, path: wh.duckdb}
"""


def alias_bomb(levels: int, width: int = 9) -> str:
    """The 400-byte "billion laughs" document: each level refers to the previous one ``width`` times."""
    lines = ["name: bomb", "table: t", "a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def many_words(count: int) -> str:
    return " ".join(f"term{i}x" for i in range(count))


HOSTILE = {
    "sl.validate of an alias bomb": f"sl.validate(connection=\"wh\", yaml={orjson.dumps(alias_bomb(6, 12)).decode()})",
    "discover.search of 15,000 distinct words": f'discover.search(query="{many_words(15_000)}")',
    "sql.execute of a DuckDB cross join": (
        'sql.execute(connection="wh", sql="SELECT count(*) AS n FROM range(20000) a CROSS JOIN range(20000) b '
        'WHERE (a.range * 7 + b.range) % 1000003 = 1", timeout_s=120)'),
    "wiki.write of 60 pages of 15 KB, each committed to git": "[" + ", ".join(
        f'wiki.write(key="big/page-{i}", summary="big page {i}", body="{("lorem ipsum dolor " * 850)}")'
        for i in range(60)) + "]",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    init_project(root, "tester")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", "") + LIMITS)
    duckdb.connect(str(root / "wh.duckdb")).close()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
                    "-q", "--allow-empty", "-m", "start"], check=True)
    return root


@dataclass
class Client:
    """Talks to the test's daemon the way ``khive request`` does: hello with the config id, one request."""

    daemon: Daemon
    project: Path
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.env = {**self.daemon.env, **PACKS}

    def ask(self, ops: str) -> tuple[dict[str, Any], float]:
        """The envelope and the seconds from connecting to the answer."""
        started = time.perf_counter()
        with DaemonConnection.open(self.daemon.socket) as connection:
            connection.call(protocol.hello(protocol.identity_key(self.project, self.env)))
            envelope = connection.request(protocol.request(
                request_id=uuid.uuid4().hex, ops=ops, presentation="agent", principal="agent:test",
                transport="cli", user="tester"))
        return envelope, time.perf_counter() - started

    def status(self) -> dict[str, Any]:
        with DaemonConnection.open(self.daemon.socket) as connection:
            return connection.call({"type": "status"})


@pytest.fixture
def client(daemon: Daemon, project: Path) -> Iterator[Client]:
    client = Client(daemon, project)
    started = daemon.khive("request", "ping()", cwd=project, env=PACKS)  # spawns the daemon
    assert started.returncode == 0, started.stderr
    wait_for(lambda: client.status()["warm"]["state"] == "done", "the daemon to finish warming up")
    yield client


@pytest.mark.parametrize("ops", list(HOSTILE.values()), ids=list(HOSTILE))
def test_ping_answers_within_100_ms_while_a_hostile_op_runs(client: Client, ops: str) -> None:
    outcome: dict[str, Any] = {}

    def hostile() -> None:
        outcome["envelope"], _ = client.ask(ops)
        outcome["ended"] = time.perf_counter()

    worker = threading.Thread(target=hostile)
    worker.start()
    pings: list[tuple[float, float]] = []  # (seconds it took, when it was answered)
    try:
        wait_for(lambda: client.status()["active"] >= 1, "the hostile op to start")
        while len(pings) < 5 and worker.is_alive():
            envelope, seconds = client.ask("ping(echo=1)")
            assert envelope["results"][0]["result"] == {"pong": True, "echo": 1}
            pings.append((seconds, time.perf_counter()))
            time.sleep(0.02)
    finally:
        worker.join(timeout=600)
    during = [seconds for seconds, answered in pings if answered < outcome["ended"]]
    shown = ", ".join(f"{seconds * 1000:.1f}" for seconds in during)
    assert len(during) >= 3, f"only {len(during)} pings were answered while the hostile op ran: it proves nothing"
    assert statistics.median(during) < 0.1, f"pings took {shown} ms while the hostile op ran"
    assert max(during) < 1.0, f"a ping waited for the hostile op: {shown} ms"
    results = outcome["envelope"]["results"]
    assert results and all("result" in r or r["error"]["code"] != "internal_error" for r in results), results
