"""The query log's aggregate across runs (``readers/logcache.py``): when a stored aggregate may stand in for a read.

Every test compares the cached read with a cold read of the same file (no cache): a hit must give exactly
what reading would, and anything that could change the aggregate must be a miss.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.readers import ReaderResult
from packs.historic_sql.readers.logcache import AggregateCache
from packs.historic_sql.readers.logfile import read_logfile

NOW = datetime(2026, 5, 11, 12, 0, tzinfo=UTC)


def log_lines(days_ago: list[int], *, user: str = "ana") -> list[str]:
    lines = []
    for n, days in enumerate(days_ago):
        lines.append(json.dumps({"sql": f"SELECT * FROM orders WHERE id = {n}", "user": user,
                                 "started_at": (NOW - timedelta(days=days)).isoformat(), "duration_ms": 10 + n}))
        lines.append(json.dumps({"sql": f"SELECT status FROM orders o JOIN customers c ON c.id = o.cid "
                                        f"WHERE c.segment = 's{n}'", "user": "etl-bot",
                                 "started_at": (NOW - timedelta(days=days, hours=1)).isoformat()}))
    lines.append(json.dumps({"sql": "SELECT name FROM customers WHERE id = 7", "started_at": NOW.isoformat()}))
    lines.append("{not json")
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write(tmp_path / "queries.jsonl", log_lines([1, 2, 3, 5, 8]))


@pytest.fixture
def cache(tmp_path: Path) -> AggregateCache:
    return AggregateCache.for_project(tmp_path)


def read(path: Path, config: HistoricSqlConfig, cache: AggregateCache | None, now: datetime = NOW) -> ReaderResult:
    return read_logfile(path, config, dialect="postgres", now=now, cache=cache)


def same_as_cold(result: ReaderResult, path: Path, config: HistoricSqlConfig, now: datetime = NOW) -> None:
    cold = read(path, config, None, now)
    assert result.templates == cold.templates
    assert result.findings == cold.findings


def stats(result: ReaderResult) -> dict[str, Any]:
    return dict(result.stats or {})


CONFIG = HistoricSqlConfig(minExecutions=1)


def test_an_unchanged_log_is_served_from_the_stored_aggregate(log: Path, cache: AggregateCache) -> None:
    first = read(log, CONFIG, cache)
    assert stats(first) == {"aggregateCache": "miss", "reason": "no stored aggregate", "stored": True}
    again = read(log, CONFIG, cache)
    assert stats(again) == {"aggregateCache": "hit", "reason": "log unchanged"}
    same_as_cold(again, log, CONFIG)
    assert {f.code for f in again.findings} >= {"malformed_line", "malformed_lines"}


def test_appended_edited_and_touched_logs(log: Path, cache: AggregateCache) -> None:
    read(log, CONFIG, cache)
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"sql": "SELECT 2 FROM customers", "started_at": NOW.isoformat()}) + "\n")
    appended = read(log, CONFIG, cache)
    assert stats(appended)["reason"] == "log size changed"
    same_as_cold(appended, log, CONFIG)

    text = log.read_text(encoding="utf-8")
    log.write_text(text.replace("'s1'", "'x1'").replace("id = 0", "ix = 0"), encoding="utf-8")  # same size
    edited = read(log, CONFIG, cache)
    assert stats(edited)["reason"] == "log content changed"
    same_as_cold(edited, log, CONFIG)

    stat = log.stat()
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touched: same bytes, newer mtime
    touched = read(log, CONFIG, cache)
    assert stats(touched) == {"aggregateCache": "hit", "reason": "log unchanged (touched, same bytes)"}
    same_as_cold(touched, log, CONFIG)


def test_the_window_keeps_the_aggregate_only_while_it_skips_the_same_executions(tmp_path: Path,
                                                                                cache: AggregateCache) -> None:
    log = write(tmp_path / "q.jsonl", log_lines([1, 3, 20, 40]))
    config = HistoricSqlConfig(minExecutions=1, windowDays=30)  # the 40-day-old executions are skipped
    first = read(log, config, cache)
    assert any(f.code == "outside_window" for f in first.findings)
    later = NOW + timedelta(days=5)  # the window start moves from 30 to 25 days ago: still between 40 and 20
    moved = read(log, config, cache, later)
    assert stats(moved)["aggregateCache"] == "hit"
    same_as_cold(moved, log, config, later)
    past = NOW + timedelta(days=12)  # now the 20-day-old executions fall out too
    gone = read(log, config, cache, past)
    assert stats(gone)["reason"] == "the window moved past an execution"
    same_as_cold(gone, log, config, past)
    back = read(log, config, cache, NOW - timedelta(days=15))  # an earlier clock takes the 40-day-old ones in
    assert stats(back)["reason"] == "the window moved past an execution"
    same_as_cold(back, log, config, NOW - timedelta(days=15))


@pytest.mark.parametrize("change", [
    {"redactionPatterns": ["segment"]},
    {"filters": {"serviceAccounts": [{"pattern": "-bot$", "mode": "exclude"}]}},
    {"filters": {"serviceAccounts": [{"pattern": "-bot$", "mode": "mark-only"}]}},
    {"windowDays": 60},
], ids=["redaction", "service-account-exclude", "service-account-mark", "window-days"])
def test_settings_the_aggregate_depends_on_invalidate_it(log: Path, cache: AggregateCache,
                                                         change: dict[str, Any]) -> None:
    read(log, CONFIG, cache)
    config = HistoricSqlConfig.model_validate({"minExecutions": 1, **change})
    changed = read(log, config, cache)
    assert stats(changed)["reason"] == "settings, versions or format changed"
    same_as_cold(changed, log, config)


def test_filter_settings_apply_to_a_stored_aggregate(log: Path, cache: AggregateCache) -> None:
    read(log, CONFIG, cache)
    config = HistoricSqlConfig.model_validate({"minExecutions": 3, "filters": {"dropTrivialProbes": False}})
    filtered = read(log, config, cache)
    assert stats(filtered)["aggregateCache"] == "hit"
    same_as_cold(filtered, log, config)
    assert len(filtered.templates) < len(read(log, CONFIG, None).templates)


def test_a_damaged_or_unusable_cache_is_a_miss_never_an_error(log: Path, cache: AggregateCache,
                                                              tmp_path: Path) -> None:
    read(log, CONFIG, cache)
    stored = cache.file_for(log)
    head = stored.read_bytes().split(b"\n", 1)[0]
    stored.write_bytes(head + b'\n{"templates": [["x"]]')  # a torn file
    damaged = read(log, CONFIG, cache)
    assert stats(damaged)["reason"] == "stored aggregate unreadable"
    same_as_cold(damaged, log, CONFIG)
    assert stats(read(log, CONFIG, cache))["aggregateCache"] == "hit"  # the miss stored a good one again

    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".khive").write_text("not a directory")  # the cache cannot even be created
    unusable = read(log, CONFIG, AggregateCache.for_project(blocked))
    assert stats(unusable) == {"aggregateCache": "miss", "reason": "cache unavailable", "stored": False}
    same_as_cold(unusable, log, CONFIG)
    missing = read(tmp_path / "nope.jsonl", CONFIG, cache)
    assert stats(missing)["reason"] == "log unreadable" and missing.findings[0].code == "file_unreadable"
