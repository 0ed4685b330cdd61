"""Query-log files: JSONL or CSV with ``sql, user, started_at, duration_ms, rows, error``, for any dialect.

One execution per line (JSONL: one object per line; CSV: a header row, then records, quoted SQL
may span lines). Only ``sql`` is required. ``started_at`` is ISO 8601 (naive means UTC) or epoch
seconds (milliseconds above 1e11); ``error`` marks a failed execution when it is true or any text
other than ``""``, ``0``, ``false``, ``no``, ``null``, ``none``. Files ending in ``.gz`` are read
through gzip; the format comes from the suffix (``.csv``; ``.jsonl``, ``.ndjson``, ``.json``) or,
failing that, from the first character.

One pass: each line is folded into its raw text's accumulator (counts, per-user counts, first/last
seen, rows, failures) and dropped, and each new distinct text goes to the primer, whose pool
normalizes while the pass reads on; then the raw texts' accumulators merge by template. Durations go
into a bounded reservoir per raw text (Algorithm R, ``reservoir_size`` samples, a random generator
seeded from ``seed`` and the text's digest); a template's sample is all of its texts' durations up to
``reservoir_size``, beyond that a weighted sample of their reservoirs seeded from ``seed`` and the
template id. So p50 and p95 are exact up to ``reservoir_size`` executions, estimates beyond, and the
same for a rerun on the same file.

A malformed line (bad JSON, not an object, no ``sql``, an unreadable timestamp or number, a CSV
record with the wrong number of fields) is skipped and reported: one ``malformed_line`` finding
per line for the first ``max_line_findings``, and a ``malformed_lines`` summary with the total.
Executions older than ``windowDays`` and executions by excluded service accounts are skipped
and counted. Nothing here raises for a bad file; an unreadable one is an error finding.

Across runs, given an ``AggregateCache`` (``logcache.py``): a log whose bytes, settings and window
edges match a stored aggregate is not read at all; the stored aggregate (before the in-memory filters)
goes through ``finish`` again. So reading the same log twice in a day costs a hash of the file.
"""

from __future__ import annotations

import csv
import gzip
import heapq
import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TextIO

import orjson

from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.filters import ORCHESTRATORS, SERVICE_ACCOUNT, AccountRules, iso, parse_time
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding, TemplateStats
from packs.historic_sql.normalize import NORMALIZER_VERSION, Normalizer, text_digest
from packs.historic_sql.parse import SQLGLOT_VERSION
from packs.historic_sql.readers._common import (
    ReaderResult,
    error,
    finish,
    info,
    quantile,
    text_markers,
    top_users,
    warning,
)
from packs.historic_sql.readers.logcache import Aggregate, AggregateCache, cache_key

LogFormat = Literal["jsonl", "csv"]
COLUMNS = ("sql", "user", "started_at", "duration_ms", "rows", "error")
_OK_WORDS = frozenset({"", "0", "false", "no", "null", "none", "f", "n"})


class Malformed(ValueError):
    """One line that cannot be an execution; the message says why."""


@dataclass(frozen=True, slots=True)
class Execution:
    sql: str
    user: str | None
    started_at: datetime | None
    duration_ms: float | None
    rows: int | None
    failed: bool


@dataclass
class _Accumulator:
    """One raw text's executions while the log is read; then, merged, one template's."""

    canonical: str
    executions: int = 0
    failures: int = 0
    first: datetime | None = None
    last: datetime | None = None
    rows: int | None = None
    durations_seen: int = 0
    durations: list[float] = field(default_factory=list)
    rng: random.Random | None = None
    users: Counter[str] = field(default_factory=Counter)
    markers: set[str] = field(default_factory=set)
    samples: list[tuple[int, list[float]]] = field(default_factory=list)  # merged raw texts' (seen, sample)

    def add(self, run: Execution, sample_size: int, seed: str) -> None:
        self.executions += 1
        self.failures += run.failed
        if run.user:
            self.users[run.user] += 1
        if run.started_at is not None:
            self.first = run.started_at if self.first is None else min(self.first, run.started_at)
            self.last = run.started_at if self.last is None else max(self.last, run.started_at)
        if run.rows is not None:
            self.rows = (self.rows or 0) + run.rows
        if run.duration_ms is not None:
            self.durations_seen += 1
            if len(self.durations) < sample_size:
                self.durations.append(run.duration_ms)
            else:  # Algorithm R: keep each of the n seen with probability sample_size / n
                self.rng = self.rng or random.Random(f"{seed}:{text_digest(self.canonical)}")
                slot = self.rng.randrange(self.durations_seen)
                if slot < sample_size:
                    self.durations[slot] = run.duration_ms

    def merge(self, raw: _Accumulator) -> None:
        """Fold one raw text's executions into this template's."""
        self.executions += raw.executions
        self.failures += raw.failures
        self.users.update(raw.users)
        if raw.first is not None:
            self.first = raw.first if self.first is None else min(self.first, raw.first)
        if raw.last is not None:
            self.last = raw.last if self.last is None else max(self.last, raw.last)
        if raw.rows is not None:
            self.rows = (self.rows or 0) + raw.rows
        if raw.durations_seen:
            self.samples.append((raw.durations_seen, raw.durations))
        self.markers |= raw.markers

    def sample(self, sample_size: int, seed: str) -> list[float]:
        """The template's durations: all of them up to ``sample_size``, else a weighted sample
        without replacement of its raw texts' samples (Efraimidis-Spirakis; a value of a text seen n
        times with k kept stands for n / k executions)."""
        if sum(seen for seen, _ in self.samples) <= sample_size:
            return [value for _, values in self.samples for value in values]
        rng = random.Random(seed)
        keyed = [(rng.random() ** (len(values) / seen), value) for seen, values in self.samples for value in values]
        return [value for _, value in heapq.nlargest(sample_size, keyed)]

    def template(self, template_id: str, dialect: str, sample_size: int, seed: int) -> AggregatedTemplate:
        ordered = sorted(self.sample(sample_size, f"{seed}:{template_id}"))
        p50 = round(quantile(ordered, 0.5), 3) if ordered else None
        p95 = round(quantile(ordered, 0.95), 3) if ordered else None
        stats = TemplateStats(executions=self.executions, distinctUsers=len(self.users), firstSeen=iso(self.first),
                              lastSeen=iso(self.last), p50RuntimeMs=p50, p95RuntimeMs=p95,
                              errorRate=round(self.failures / self.executions, 6), rowsProduced=self.rows)
        return AggregatedTemplate(templateId=template_id, canonicalSql=self.canonical, dialect=dialect, stats=stats,
                                  topUsers=top_users(self.users), markers=sorted(self.markers))


Primer = Callable[[Normalizer, Iterable[str]], object]
AGGREGATE_VERSION = "2"  # bump whenever a change here changes what a read folds (stored aggregates go stale)


def read_logfile(path: Path | str, config: HistoricSqlConfig, *, dialect: str, log_format: LogFormat | None = None,
                 now: datetime | None = None, reservoir_size: int = 512, seed: int = 0,
                 max_line_findings: int = 20, primer: Primer | None = None,
                 cache: AggregateCache | None = None) -> ReaderResult:
    """Aggregate a query log by normalized template, then apply the in-memory filters.

    With a ``primer`` (``prime.primer``), a first pass hands it every distinct text so they are
    normalized together (cached across runs, in a pool) before the pass that folds the lines. With a
    ``cache`` (``logcache.py``), an unchanged log is not read at all: its stored aggregate is filtered
    again (``stats["aggregateCache"]`` says hit or miss, ``stats["reason"]`` why)."""
    path = Path(path)
    now = now or datetime.now(UTC)
    window_start = now - timedelta(days=config.windowDays)
    normalizer = Normalizer(dialect, config.redactionPatterns)
    stamp = key = None
    reason = ""
    if cache is not None:
        key = cache_key([AGGREGATE_VERSION, NORMALIZER_VERSION, SQLGLOT_VERSION, dialect, log_format,
                         list(config.redactionPatterns), [[r.pattern, r.mode] for r in config.filters.serviceAccounts],
                         config.windowDays, reservoir_size, seed, max_line_findings,
                         sorted((name, pattern.pattern) for name, pattern in ORCHESTRATORS.items())])
        looked = cache.lookup(path, key, window_start)
        stamp = looked.stamp
        if looked.aggregate is not None:
            looked.aggregate.teach(normalizer)
            return finish(looked.aggregate.templates, looked.aggregate.findings, config, normalizer, now,
                          {"aggregateCache": "hit", "reason": looked.reason})
        reason = looked.reason
    aggregate = _fold(path, config, normalizer, dialect=dialect, log_format=log_format, window_start=window_start,
                      reservoir_size=reservoir_size, seed=seed, max_line_findings=max_line_findings, primer=primer)
    stats: dict[str, object] = {}
    if cache is not None and key is not None:
        stored = stamp is not None and stamp.unchanged(path) and cache.store(path, key, stamp, aggregate)
        stats = {"aggregateCache": "miss", "reason": reason, "stored": stored}
    return finish(aggregate.templates, list(aggregate.findings), config, normalizer, now, stats)


def _fold(path: Path, config: HistoricSqlConfig, normalizer: Normalizer, *, dialect: str,
          log_format: LogFormat | None, window_start: datetime, reservoir_size: int, seed: int,
          max_line_findings: int, primer: Primer | None) -> Aggregate:
    """Read the log once, folding every line into its raw text's accumulator; then merge those by template.

    The pass is a generator that yields each new distinct text: given to the primer, the texts are
    normalized in its pool while the pass reads on, so reading costs no time of its own."""
    rules = AccountRules(config.filters.serviceAccounts)
    raws: dict[str, _Accumulator] = {}
    findings: list[ProbeFinding] = []
    malformed: list[int] = []
    counts = {"lines": 0, "old": 0, "excluded": 0}
    edges: dict[str, datetime | None] = {"oldest_kept": None, "newest_skipped": None}

    def new_texts() -> Iterator[str]:
        for line, record in _records(path, log_format):
            counts["lines"] += 1
            try:
                run = _execution(record)
            except Malformed as problem:
                malformed.append(line)
                if len(malformed) <= max_line_findings:
                    findings.append(warning("malformed_line", f"{path.name} line {line}: {problem}"))
                continue
            started = run.started_at
            if started is not None:
                if started < window_start:
                    counts["old"] += 1
                    newest = edges["newest_skipped"]
                    if newest is None or started > newest:
                        edges["newest_skipped"] = started
                    continue
                oldest = edges["oldest_kept"]
                if oldest is None or started < oldest:
                    edges["oldest_kept"] = started
            decision = rules.decide(run.user)
            if decision == "exclude":
                counts["excluded"] += 1
                continue
            entry = raws.get(run.sql)
            if entry is None:
                entry = raws[run.sql] = _Accumulator(run.sql)
                yield run.sql
            entry.add(run, reservoir_size, str(seed))
            if decision == "mark-only":
                entry.markers.add(SERVICE_ACCOUNT)

    try:
        if primer is not None:
            primer(normalizer, new_texts())
        else:
            for _ in new_texts():
                pass
    except (OSError, UnicodeError, EOFError, csv.Error) as exc:
        findings.append(error("file_unreadable", f"cannot read query log {path}: {exc}",
                              "check the path in the connection's historicSql settings and the file's format"))
    templates: dict[str, _Accumulator] = {}
    for sql, raw in raws.items():
        normalized = normalizer.normalize(sql)
        entry = templates.get(normalized.template_id)
        if entry is None:
            entry = templates[normalized.template_id] = _Accumulator(normalized.canonical_sql)
        raw.markers |= text_markers(sql, normalized)
        entry.merge(raw)
    lines, old, excluded = counts["lines"], counts["old"], counts["excluded"]
    if malformed:
        more = f" and {len(malformed) - max_line_findings} more" if len(malformed) > max_line_findings else ""
        findings.append(warning("malformed_lines", f"{len(malformed)} of {lines} records in {path.name} were malformed "
                                                   f"and skipped (lines {', '.join(map(str, malformed[:5]))}{more})",
                                f"each line needs at least a non-empty sql; columns: {', '.join(COLUMNS)}"))
    if old:
        findings.append(info("outside_window", f"{old} executions older than {config.windowDays} days skipped"))
    if excluded:
        findings.append(info("service_accounts_excluded", f"{excluded} executions by excluded service accounts"))
    built = [entry.template(template, dialect, reservoir_size, seed) for template, entry in templates.items()]
    facts = {t.templateId: known for t in built if (known := normalizer.known(t.templateId)) is not None}
    return Aggregate(built, findings, facts, edges["oldest_kept"], edges["newest_skipped"])


# ---- records -------------------------------------------------------------------------------------------------


def _records(path: Path, log_format: LogFormat | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, raw record) pairs; a record that cannot be split into fields carries ``__malformed__``."""
    if path.suffix == ".gz":
        stream: TextIO = gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    else:
        stream = path.open(encoding="utf-8-sig", errors="replace", newline="")  # -sig: Excel's BOM
    with stream:
        kind = log_format or _detect(path, stream)
        yield from (_jsonl(stream) if kind == "jsonl" else _csv(stream))


def _detect(path: Path, stream: TextIO) -> LogFormat:
    suffixes = [suffix.lower() for suffix in path.suffixes if suffix.lower() != ".gz"]
    if suffixes and suffixes[-1] == ".csv":
        return "csv"
    if suffixes and suffixes[-1] in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    start = stream.read(4096)
    stream.seek(0)
    return "jsonl" if start.lstrip().startswith("{") else "csv"


def _jsonl(stream: TextIO) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, text in enumerate(stream, start=1):
        if text.strip():
            yield number, _parsed_json(text)


def _parsed_json(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)  # several times faster; json below only for what orjson refuses
    except orjson.JSONDecodeError:
        try:
            value = json.loads(text)  # NaN, huge integers, ... and the error message people know
        except json.JSONDecodeError as exc:
            return {"__malformed__": f"not valid JSON ({exc.msg}, column {exc.colno})"}
    if not isinstance(value, dict):
        return {"__malformed__": f"expected a JSON object, found {type(value).__name__}"}
    return value


def _csv(stream: TextIO) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(stream)
    header = [name.strip().lower() for name in next(reader, [])]
    if "sql" not in header:
        raise csv.Error(f"the CSV header has no sql column (found: {', '.join(header) or 'nothing'})")
    start = reader.line_num + 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # a NUL byte, an oversized field: this record only
            yield start, {"__malformed__": f"unreadable CSV record ({exc})"}
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not fields:
            continue
        if len(fields) != len(header):
            yield line, {"__malformed__": f"expected {len(header)} CSV fields, found {len(fields)}"}
            continue
        yield line, dict(zip(header, fields, strict=True))


def _execution(record: dict[str, Any]) -> Execution:
    if "__malformed__" in record:
        raise Malformed(record["__malformed__"])
    sql = record.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        raise Malformed("no sql" if sql in (None, "") else f"sql must be text, found {type(sql).__name__}")
    user = record.get("user")
    started_raw = record.get("started_at")
    started = parse_time(started_raw)
    if started is None and started_raw not in (None, ""):
        raise Malformed(f"started_at is not a timestamp: {started_raw!r}")
    duration = _number(record.get("duration_ms"), "duration_ms")
    rows = _number(record.get("rows"), "rows")
    return Execution(sql=sql, user=None if user in (None, "") else str(user), started_at=started,
                     duration_ms=duration, rows=None if rows is None else int(rows),
                     failed=_failed(record.get("error")))


def _number(value: Any, name: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise Malformed(f"{name} must be a number, found {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Malformed(f"{name} must be a number, found {value!r}") from None
    if not number >= 0 or number == float("inf"):  # also rejects NaN
        raise Malformed(f"{name} must be a non-negative number, found {value!r}")
    return number


def _failed(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in _OK_WORDS
    if isinstance(value, int | float):
        return value != 0
    return bool(value)
