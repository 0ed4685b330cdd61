"""Daemon benchmark: what the warm daemon saves, measured against in-process and cold-process baselines.

    .venv/bin/python bench/daemon.py            # prints ONE JSON line
    .venv/bin/python bench/daemon.py --quick    # 1,000 tables and fewer rounds, for a smoke test

1. Round trip of ``verbs()`` through a warm daemon (``khive daemon run`` in a subprocess) against
   in-process ``dispatch(parse("verbs()"), ctx)`` in this process, interleaved in rounds (the machine
   is noisy). ``socket_fresh``: a new connection + hello + request per call, as every ``khive request``
   does; ``socket_reused``: one connection, hello once. p50/p95 in ms (goal: socket p50 <= 1 ms).
2. ``khive request`` end to end, process start included, on a project whose index holds N tables
   (10,000: a SQLite catalog scanned with ``scan.run``, one table = one index document): the warm
   daemon against ``KHIVE_NO_DAEMON=1``, interleaved, median of the rounds (goal: warm >= 5x faster).
   The verb is the heaviest read available: ``discover.search`` when that pack is registered, else
   ``scan.tables``. The daemon is started and warmed (one request) before timing.
3. A request near the 1 MiB cap (``ping(echo=[1, 1, ...])``, 500,000 elements; ``--large-only`` runs just
   this, on an empty project): what parsing once at the edge saves (ADR 0044). The edge parses the text
   (``parse``), then the same request goes to the same daemon as text (``ops``: the daemon parses it
   again, as every client did before) and as the parsed request (``request``), interleaved; medians.

Packs: KHIVE_PACKS (default core,wiki,scan,sl,discover: every pack that loads without a warehouse).
Temp directories, the daemon and its socket are removed at the end, also on failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import orjson

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.daemon import protocol
from khive.daemon.connection import DaemonConnection
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

KHIVE = str(Path(sys.executable).parent / "khive")
PACKS = os.environ.get("KHIVE_PACKS", "core,wiki,scan,sl,discover")
WORDS = ("customer", "order", "invoice", "payment", "refund", "shipment", "product", "supplier", "account",
         "ledger", "campaign", "session", "event", "subscription", "plan", "region", "store", "employee")
WARM_ID = "bench-warm-"
GOALS = {"socket_p50_ms": 1.0, "end_to_end_speedup": 5.0}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build_catalog(path: Path, first: int, count: int) -> None:
    db = sqlite3.connect(path)
    statements = []
    for index in range(first, first + count):
        a, b = WORDS[index % len(WORDS)], WORDS[(index // len(WORDS)) % len(WORDS)]
        statements.append(f'CREATE TABLE "{a}_{b}_{index}" (id INTEGER PRIMARY KEY, {b}_id INTEGER, '
                          f'{a}_name TEXT, amount NUMERIC, created_at TEXT);')
    db.executescript("PRAGMA journal_mode=OFF; BEGIN;" + "".join(statements) + "COMMIT;")
    db.close()


def make_project(root: Path, tables: int, env: dict[str, str]) -> str:
    """A project whose scans hold ``tables`` tables (SQLite files of 1,000 tables each: creating many
    tables in one file grows quadratically); returns the heaviest read verb call to time."""
    init_project(root, "bench")
    per_file = 1000
    names = [f"shop{number}" for number in range((tables + per_file - 1) // per_file)]
    lines = ["connections:"]
    for number, name in enumerate(names):
        build_catalog(root / f"{name}.sqlite", number * per_file, min(per_file, tables - number * per_file))
        lines += [f"  {name}:", "    driver: sqlite", f"    path: {name}.sqlite", "    sample_values: {enabled: false}"]
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}", "\n".join(lines) + "\n"))
    runtime = open_runtime(root, env)

    async def scan() -> set[str]:
        try:
            ctx = Context(runtime, "operator:bench", CLI)
            for name in names:
                envelope = await dispatch(parse(f'scan.run(connection="{name}")'), ctx)
                assert envelope["status"] == "success", envelope
            return set(runtime.registry.verbs)
        finally:
            await runtime.aclose()

    verbs = anyio.run(scan)
    if "discover.search" in verbs:
        return 'discover.search(query="customer refund payments")'
    return 'scan.tables(connection="shop0", limit=50)'


def start_daemon(project: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        daemon = subprocess.Popen([KHIVE, "--project", str(project), "daemon", "run"], env=env, cwd=project,
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = time.monotonic() + 120
    socket = Path(env["KHIVE_SOCKET"])
    while not socket.exists():
        if daemon.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"daemon did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    return daemon


def wait_warm(socket: Path) -> dict[str, Any]:
    """The daemon's status once warm_all has finished: the figures are for a warm daemon."""
    deadline = time.monotonic() + 600
    while True:
        with DaemonConnection.open(socket) as connection:
            status = connection.call({"type": "status"})
        if status["warm"]["state"] == "done" or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def verb_ms(project: Path, env: dict[str, str], verb: str) -> float:
    """Median handler time of ``verb`` in the timed warm requests, from the audit trail."""
    from khive.audit.store import AuditQuery

    runtime = open_runtime(project, env)

    async def read() -> list[int]:
        try:
            events = await runtime.audit.query(AuditQuery(verb=verb, limit=200))
            return [event.duration_us for event in events if event.request_id.startswith(WARM_ID)]
        finally:
            await runtime.aclose()

    return round(statistics.median(anyio.run(read)) / 1000, 1)


def round_trips(project: Path, env: dict[str, str], rounds: int, per_round: int) -> dict[str, Any]:
    runtime = open_runtime(project, env)
    socket = Path(env["KHIVE_SOCKET"])
    config_id = protocol.identity_key(project, env)
    frame = protocol.request(request_id="", parsed=parse("verbs()"), presentation="agent", principal="operator:bench",
                             transport=CLI, user="bench")
    local: list[float] = []
    fresh: list[float] = []
    reused: list[float] = []

    async def in_process() -> None:
        ctx = Context(runtime, "operator:bench", CLI)
        for _ in range(per_round):
            started = time.perf_counter()
            await dispatch(parse("verbs()"), ctx)
            local.append(time.perf_counter() - started)

    with DaemonConnection.open(socket) as probe:
        answer = probe.call(protocol.hello(config_id))
        if answer["config_id"] != config_id:
            raise RuntimeError(f"the daemon serves another configuration: {answer}")

    def fresh_connections() -> None:
        for _ in range(per_round):
            started = time.perf_counter()
            with DaemonConnection.open(socket) as connection:
                connection.call(protocol.hello(config_id))
                connection.request(frame)
            fresh.append(time.perf_counter() - started)

    def one_connection() -> None:
        with DaemonConnection.open(socket) as connection:
            connection.call(protocol.hello(config_id))
            for _ in range(per_round):
                started = time.perf_counter()
                connection.request(frame)
                reused.append(time.perf_counter() - started)

    try:
        for _ in range(rounds):
            anyio.run(in_process)
            fresh_connections()
            one_connection()
    finally:
        anyio.run(runtime.aclose)

    def summary(values: list[float]) -> dict[str, float]:
        return {"p50_ms": round(percentile(values, 0.5) * 1000, 3), "p95_ms": round(percentile(values, 0.95) * 1000, 3)}

    return {"in_process": summary(local), "socket_fresh": summary(fresh), "socket_reused": summary(reused),
            "requests_each": len(local)}


def timed_ping(project: Path, env: dict[str, str]) -> float:
    """``khive request 'ping()'`` through the warm daemon: the fixed cost of a forwarded request."""
    started = time.perf_counter()
    done = subprocess.run([KHIVE, "request", "ping()"], cwd=project, env={**env, "KHIVE_DAEMON_STRICT": "1"},
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"khive request ping() failed: {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def in_process_verb_ms(project: Path, env: dict[str, str], ops: str, rounds: int) -> float:
    """The same verb dispatched in this process once its index is open and fresh: what the daemon's should be."""
    runtime = open_runtime(project, env)

    async def run() -> list[float]:
        ctx = Context(runtime, "operator:bench", CLI)
        times = []
        try:
            for _ in range(rounds + 1):
                started = time.perf_counter()
                await dispatch(parse(ops), ctx)
                times.append(time.perf_counter() - started)
        finally:
            await runtime.aclose()
        return times[1:]

    return round(statistics.median(anyio.run(run)) * 1000, 1)


def end_to_end(project: Path, env: dict[str, str], ops: str, rounds: int) -> dict[str, Any]:
    warm: list[float] = []
    cold: list[float] = []

    def timed(extra: dict[str, str], request_id: str = "") -> float:
        started = time.perf_counter()
        done = subprocess.run([KHIVE, "request", ops, "--request-id", request_id], cwd=project, env={**env, **extra},
                              capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"khive request failed: {done.stderr.decode()[-2000:]}")
        return elapsed

    first = timed({"KHIVE_DAEMON_STRICT": "1"})  # the daemon's first search; strict: fail, never fall back
    floor: list[float] = []
    for number in range(rounds):
        warm.append(timed({"KHIVE_DAEMON_STRICT": "1"}, f"{WARM_ID}{number}"))
        cold.append(timed({"KHIVE_NO_DAEMON": "1"}))
        floor.append(timed_ping(project, env))
    warm_s, cold_s = statistics.median(warm), statistics.median(cold)
    return {"ops": ops, "warm_daemon_s": round(warm_s, 3), "no_daemon_s": round(cold_s, 3),
            "speedup": round(cold_s / warm_s, 2), "rounds": rounds, "first_cold_s": round(first, 3),
            "warm_ping_s": round(statistics.median(floor), 3),
            "warm_runs_s": [round(v, 3) for v in warm], "no_daemon_runs_s": [round(v, 3) for v in cold]}


def large_request(project: Path, env: dict[str, str], elements: int, rounds: int) -> dict[str, Any]:
    text = "ping(echo=[" + ",".join("1" * elements) + "])"
    config_id = protocol.identity_key(project, env)
    edge: list[float] = []
    as_text: list[float] = []
    as_parsed: list[float] = []

    def send(frame: dict[str, Any]) -> float:
        started = time.perf_counter()
        with DaemonConnection.open(Path(env["KHIVE_SOCKET"])) as connection:
            connection.call(protocol.hello(config_id))
            envelope = connection.request(frame)
        if envelope["status"] != "success":
            raise RuntimeError(f"the large request failed: {str(envelope)[:2000]}")
        return time.perf_counter() - started

    common = {"request_id": "", "presentation": "agent", "principal": "operator:bench", "transport": CLI,
              "user": "bench"}
    for _ in range(rounds):
        started = time.perf_counter()
        request = parse(text)
        edge.append(time.perf_counter() - started)
        as_text.append(send(protocol.request(ops=text, **common)))
        as_parsed.append(send(protocol.request(parsed=request, **common)))
    edge_s, text_s, parsed_s = (statistics.median(values) for values in (edge, as_text, as_parsed))
    return {"elements": elements, "chars": len(text), "rounds": rounds, "edge_parse_s": round(edge_s, 3),
            "daemon_given_text_s": round(text_s, 3), "daemon_given_parsed_s": round(parsed_s, 3),
            "total_parsed_twice_s": round(edge_s + text_s, 3), "total_parsed_once_s": round(edge_s + parsed_s, 3),
            "once_vs_twice": round((edge_s + parsed_s) / (edge_s + text_s), 3)}


def workspace(stack: ExitStack) -> tuple[Path, dict[str, str]]:
    """A temp directory (removed at the end) and the environment of a private daemon in it."""
    base = Path(tempfile.mkdtemp(prefix="kdb-", dir="/tmp"))
    stack.callback(shutil.rmtree, base, True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("KHIVE_")}
    env.update(KHIVE_HOME=str(base / "home"), KHIVE_SOCKET=str(base / "home" / "khived.sock"),
               KHIVE_PACKS=PACKS, KHIVE_DAEMON_IDLE="600")
    return base, env


def warm_daemon(stack: ExitStack, base: Path, project: Path, env: dict[str, str]) -> dict[str, Any]:
    """Start ``khive daemon run`` (stopped at the end) and wait until it is warm; its status."""
    daemon = start_daemon(project, env, base / "daemon.log")

    def stop() -> None:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()

    stack.callback(stop)
    return wait_warm(Path(env["KHIVE_SOCKET"]))


def large_only(rounds: int) -> None:
    with ExitStack() as stack:
        base, env = workspace(stack)
        project = base / "project"
        init_project(project, "bench")
        warm_daemon(stack, base, project, env)
        result = {"bench": "daemon", "large_request": large_request(project, env, 500_000, rounds)}
    print(orjson.dumps(result).decode())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--large-only", action="store_true", help="only section 3, the large request")
    args = parser.parse_args()
    if args.large_only:
        large_only(3 if args.quick else 5)
        return
    tables, rounds, per_round, e2e_rounds = (1000, 3, 50, 3) if args.quick else (10_000, 10, 100, 7)
    with ExitStack() as stack:
        base, env = workspace(stack)
        project = base / "project"
        started = time.perf_counter()
        ops = make_project(project, tables, env)
        setup_s = time.perf_counter() - started
        status = warm_daemon(stack, base, project, env)
        trips = round_trips(project, env, rounds, per_round)
        e2e = end_to_end(project, env, ops, e2e_rounds)
        e2e["verb_in_daemon_ms"] = verb_ms(project, env, ops.split("(", 1)[0])
        e2e["verb_in_process_warm_ms"] = in_process_verb_ms(project, env, ops, e2e_rounds)
        e2e["warm_tasks"] = {f"{t['pack']}.{t['name']}": t.get("seconds") for t in status["warm"]["tasks"]}
        large = large_request(project, env, 500_000, 3 if args.quick else 5)
    result = {
        "bench": "daemon", "tables": tables, "packs": PACKS, "setup_s": round(setup_s, 1),
        "verbs_round_trip": trips, "socket_p50_ms": trips["socket_fresh"]["p50_ms"],
        "socket_vs_in_process_p50": round(trips["socket_fresh"]["p50_ms"] / trips["in_process"]["p50_ms"], 2),
        "end_to_end": e2e, "end_to_end_speedup": e2e["speedup"], "large_request": large, "goals": GOALS,
        "meets_goals": trips["socket_fresh"]["p50_ms"] <= GOALS["socket_p50_ms"]
        and e2e["speedup"] >= GOALS["end_to_end_speedup"],
    }
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
