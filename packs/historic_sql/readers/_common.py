"""What every reader shares: the result pair, top users, markers, percentiles and the final filter pass."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.filters import PARSE_FALLBACK, apply_filters, orchestrator_markers
from packs.historic_sql.models import AggregatedTemplate, ProbeFinding
from packs.historic_sql.normalize import NormalizedSql, Normalizer
from packs.historic_sql.parsed import paused_gc

TOP_USERS = 5


class ReaderResult(NamedTuple):
    templates: list[AggregatedTemplate]
    findings: list[ProbeFinding]
    stats: Mapping[str, Any] | None = None  # how the reader got there (the log reader: its aggregate cache)


def top_users(counts: Mapping[str, float], limit: int = TOP_USERS) -> list[str]:
    """The heaviest users first; ties by name, so the list is stable across runs."""
    return [user for user, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]]


def text_markers(raw_sql: str, normalized: NormalizedSql) -> set[str]:
    """Markers one raw query text earns: the orchestrators it names, and a failed parse."""
    markers = orchestrator_markers(raw_sql)
    if normalized.parse_failed:
        markers.add(PARSE_FALLBACK)
    return markers


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) over an already sorted sample."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def error(code: str, message: str, fix: str = "") -> ProbeFinding:
    return ProbeFinding(severity="error", code=code, message=message, fix=fix)


def warning(code: str, message: str, fix: str = "") -> ProbeFinding:
    return ProbeFinding(severity="warning", code=code, message=message, fix=fix)


def info(code: str, message: str, fix: str = "") -> ProbeFinding:
    return ProbeFinding(severity="info", code=code, message=message, fix=fix)


def finish(templates: Sequence[AggregatedTemplate], findings: list[ProbeFinding], config: HistoricSqlConfig,
           normalizer: Normalizer, now: datetime | None, stats: Mapping[str, Any] | None = None) -> ReaderResult:
    """The in-memory filters, plus one finding for regex-masked templates and one for what was dropped."""
    fallback = sum(PARSE_FALLBACK in template.markers for template in templates)
    if fallback:
        findings.append(info("parse_fallback", f"{fallback} templates could not be parsed as {normalizer.dialect} "
                                               "SQL and were masked with regular expressions (marked parse-fallback); "
                                               "their table lists may be incomplete"))
    with paused_gc():  # tens of thousands of records in, as many (or model copies) out, none cyclic
        outcome = apply_filters(templates, config, normalizer=normalizer, now=now)
    summary = outcome.finding()
    if summary is not None:
        findings.append(summary)
    return ReaderResult(outcome.kept, findings, stats)
