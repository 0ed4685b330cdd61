"""What a scan takes from the warehouse passes the core redaction service (khive/redact.py, ADR 0035).

Written: sample values, table and column comments and column defaults are redacted before they reach
``raw-sources/`` and ``_schema/``, and the scan report counts what was removed, per kind (never the value).
Columns whose name says secret were never sampled (the driver skipped them: ``secret-name``).

Read: runs and shards written before this existed are cleaned again when they are read (``clean_columns``,
``Redactor.column_values``): their samples are redacted and a secret-named column shows no values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from khive.connections.catalog import Column, ColumnSample, Table
from khive.redact import Redactor
from khive.secretnames import secret_name

SECRET_NAME = "secret-name"


def redact_scan(tables: Iterable[Table], samples: Iterable[ColumnSample], redactor: Redactor,
                counts: Counter[str]) -> tuple[list[Table], list[ColumnSample]]:
    """Tables with comments and defaults redacted, samples with their text values redacted. A table or
    column with nothing to redact is kept as it is (no copy)."""
    texts = _Texts(redactor, counts)
    clean_tables = []
    for table in tables:
        columns = tuple(_clean_column(column, texts) for column in table.columns)
        comment = texts.clean(table.comment)
        changed = comment != table.comment or any(a is not b for a, b in zip(columns, table.columns, strict=True))
        clean_tables.append(table.model_copy(update={"comment": comment, "columns": columns}) if changed else table)
    clean_samples = [sample.model_copy(update={"values": tuple(redactor.value(v, counts) for v in sample.values)})
                     if any(isinstance(v, str) for v in sample.values) else sample for sample in samples]
    return clean_tables, clean_samples


def _clean_column(column: Column, texts: _Texts) -> Column:
    if not (column.comment or column.default):
        return column
    comment, default = texts.clean(column.comment), texts.clean(column.default)
    if comment == column.comment and default == column.default:
        return column
    return column.model_copy(update={"comment": comment, "default": default})


class _Texts:
    """Comments and defaults redacted once per distinct text (a catalog repeats them across thousands of
    tables); ``counts`` still gets what was removed from every occurrence."""

    def __init__(self, redactor: Redactor, counts: Counter[str]) -> None:
        self._redactor = redactor
        self._counts = counts
        self._done: dict[str, tuple[str, Counter[str]]] = {}

    def clean(self, value: str | None) -> str | None:
        if not value:
            return value
        done = self._done.get(value)
        if done is None:
            removed: Counter[str] = Counter()
            done = self._done[value] = (self._redactor.text(value, removed), removed)
        if done[1]:
            self._counts.update(done[1])
        return done[0]


def clean_columns(columns: list[dict[str, Any]], redactor: Redactor) -> list[dict[str, Any]]:
    """Artifact columns (``samples: {values, frequencies, ...}``) as ``scan.entity`` may show them."""
    out = []
    for column in columns:
        samples = column.get("samples")
        if isinstance(samples, dict) and samples.get("values"):
            name = str(column.get("name"))
            if secret_name(name):
                samples = {"skipped": SECRET_NAME}
            else:
                samples = {**samples, "values": redactor.column_values(name, samples["values"])}
            column = {**column, "samples": samples}
        out.append(column)
    return out
