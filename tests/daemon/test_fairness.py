"""Fairness through the real daemon on a real PostgreSQL: one agent's big batch holds at most
server.max_parallel_ops connections, another agent's query gets through meanwhile, drivers are
reused across requests, and a full pool makes a caller wait at most its timeout.

Connections are counted on the server (pg_stat_activity, application_name khive), not guessed
from timings.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from daemon_helpers import Daemon, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CAP, POOL = 2, 3


@pytest.fixture
def warehouse(project: Path, pg_database: str) -> dict[str, str]:
    """The project gets a postgres connection with a per-request cap of 2 and a pool of 3."""
    config = project / "khive.yaml"
    connection = f"{{driver: postgres, url: env:PG_URL, pool_size: {POOL}, allow_functions: [pg_backend_pid]}}"
    text = config.read_text().replace("connections: {}", f"connections:\n  pg: {connection}\n")
    config.write_text(text.replace("server:\n", f"server:\n  max_parallel_ops: {CAP}\n"))
    assert f"max_parallel_ops: {CAP}" in config.read_text()
    return {"PG_URL": pg_database, "KHIVE_PACKS": "core,scan"}


class Activity:
    """Polls pg_stat_activity in a thread: the most khive backends seen at once, and the most running a sleep."""

    def __init__(self, url: str):
        self.url = url
        self.most_connections = 0
        self.most_sleeping = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> Activity:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _poll(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as admin:
            while not self._stop.is_set():
                connections, sleeping = admin.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state = 'active' AND query ILIKE '%pg_sleep%') "
                    "FROM pg_stat_activity WHERE application_name = 'khive' AND pid <> pg_backend_pid()").fetchone()
                self.most_connections = max(self.most_connections, connections)
                self.most_sleeping = max(self.most_sleeping, sleeping)
                time.sleep(0.02)


def envelope_of(done: subprocess.CompletedProcess[str] | tuple[str, str]) -> dict[str, Any]:
    stdout = done.stdout if isinstance(done, subprocess.CompletedProcess) else done[0]
    envelope: dict[str, Any] = json.loads(stdout)
    return envelope


def sql(text: str, **extra: Any) -> str:
    args = "".join(f", {name}={value}" for name, value in extra.items())
    return f'sql.execute(connection="pg", sql="{text}"{args})'


def test_a_big_batch_holds_at_most_the_cap_and_another_client_gets_through(
        daemon: Daemon, project: Path, warehouse: dict[str, str]) -> None:
    assert daemon.khive("request", sql("SELECT 1 AS up"), cwd=project, env=warehouse).returncode == 0
    batch = "[" + ", ".join(sql(f"SELECT pg_sleep(0.6) AS s{index}") for index in range(10)) + "]"
    with Activity(warehouse["PG_URL"]) as activity:
        big = daemon.popen("request", batch, cwd=project, env=warehouse)
        wait_for(lambda: activity.most_sleeping >= 1, "the batch's statements to run")
        other = daemon.khive("--verbose", "request", sql("SELECT 1 AS one"), cwd=project, env=warehouse)
        still_running = big.poll() is None
        stdout, stderr = big.communicate(timeout=120)
    assert other.returncode == 0, other.stderr
    assert "answered by the daemon" in other.stderr
    assert envelope_of(other)["results"][0]["result"]["rows"] == [[1]]
    assert still_running  # the other client's answer came while the batch still ran
    results = envelope_of((stdout, stderr))["results"]
    assert [result["ok"] for result in results] == [True] * 10
    assert [result["result"]["columns"][0]["name"] for result in results] == [f"s{index}" for index in range(10)]
    assert 1 <= activity.most_sleeping <= CAP
    assert activity.most_connections <= POOL


def test_drivers_are_reused_across_requests_and_replaced_after_a_lost_connection(
        daemon: Daemon, project: Path, warehouse: dict[str, str]) -> None:
    def backend() -> int:
        done = daemon.khive("request", sql("SELECT pg_backend_pid() AS pid"), cwd=project, env=warehouse)
        assert done.returncode == 0, done.stdout
        pid: int = envelope_of(done)["results"][0]["result"]["rows"][0][0]
        return pid

    first = backend()
    assert backend() == first  # the same warm connection served the second request
    with psycopg.connect(warehouse["PG_URL"], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [first])
    replaced = backend()  # the stale driver is dropped and the statement runs once more on a new one
    assert replaced != first
    assert backend() == replaced


def test_a_full_pool_makes_a_caller_wait_at_most_its_timeout(
        daemon: Daemon, project: Path, warehouse: dict[str, str]) -> None:
    assert daemon.khive("request", sql("SELECT 1 AS up"), cwd=project, env=warehouse).returncode == 0
    with Activity(warehouse["PG_URL"]) as activity:
        holders = [daemon.popen("request", sql(f"SELECT pg_sleep(4) AS h{index}"), cwd=project, env=warehouse)
                   for index in range(POOL)]
        wait_for(lambda: activity.most_sleeping >= POOL, "every pooled driver to be busy")
        waiter = daemon.khive("request", sql("SELECT 1 AS one", timeout_s=0.3), cwd=project, env=warehouse)
        for holder in holders:
            holder.communicate(timeout=120)
    error = envelope_of(waiter)["results"][0]["error"]
    assert error["code"] == "pool_timeout"
    assert error["details"] == {"connection": "pg", "poolSize": POOL, "waitedS": 0.3}
    assert "pool_size" in error["message"]
    assert activity.most_connections <= POOL
