"""The stores one connection's ingest keeps from run to run, behind one interface (ADR 0042).

Every one is derived state under the project's ``.khive/``: delete any of them and the next ingest
rebuilds it, producing the same staged bytes. Each is kept because it saves at least a tenth of a run.
Measured on bench/historic_sql.py at 10,000 templates, CPU seconds with the store / without it:

    store           file (.khive/)                          saves                     with / without
    log aggregate   historic-sql-logs/<path digest>.json    an unchanged log's read   0.58 / 1.30 s rerun
    normalized      historic-sql-cache.sqlite: normalized   normalizing a changed log 1.3 / 15.6 s rerun
    parse document  historic-sql-cache.sqlite: parsed_docs  parsing every template    0.58 / 10.9 s rerun
    projection memo historic-sql-cache.sqlite: projected    re-merging unchanged files 0.05 / 0.75 s wall

What each is keyed on and how it is checked: readers/logcache.py, prime.py (``NormalCache``), parse.py
(``ParseCache``) and projmemo.py. Two speed-ups are not stores and live where they act: the canonical
text printed from tokens (fingerprint.py, ADR 0025) and pool workers that run without the cyclic
collector and retire after a few chunks (prime.py: 14.5 s of CPU against 20.7 s without).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from packs.historic_sql.parse import ParseCache
from packs.historic_sql.prime import NormalCache
from packs.historic_sql.projmemo import ProjectionMemo
from packs.historic_sql.readers.logcache import AggregateCache


class Caches:
    """The cross-run stores of one project's connection: opened by the step that uses them."""

    def __init__(self, project: Path, connection: str) -> None:
        self.project, self.connection = project, connection

    def log_aggregates(self) -> AggregateCache:
        """Read: a query log's aggregate, used while the log's bytes and the settings are the same."""
        return AggregateCache.for_project(self.project)

    @contextmanager
    def normalized(self, dialect: str, redaction_patterns: Sequence[str]) -> Iterator[NormalCache]:
        """Normalize: each distinct raw text's template id, canonical text and tables."""
        cache = NormalCache.for_project(self.project, dialect, redaction_patterns)
        try:
            yield cache
        finally:
            cache.close()

    @contextmanager
    def parsed(self) -> Iterator[ParseCache]:
        """Parse: each template's tables, column uses and joins, by template id and SQL hash."""
        cache = ParseCache.for_project(self.project, self.connection)
        try:
            yield cache
        finally:
            cache.close()

    def projection(self) -> ProjectionMemo:
        """Project: what each merged file was left as, and from which inputs (``save`` it after the pass)."""
        return ProjectionMemo.for_project(self.project, self.connection)
