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

from khive.connections.catalog import ColumnSample, Table
from khive.redact import Redactor
from khive.secretnames import secret_name

SECRET_NAME = "secret-name"


def redact_scan(tables: Iterable[Table], samples: Iterable[ColumnSample], redactor: Redactor,
                counts: Counter[str]) -> tuple[list[Table], list[ColumnSample]]:
    """Tables with comments and defaults redacted, samples with their text values redacted."""
    clean_tables = []
    for table in tables:
        columns = tuple(column.model_copy(update={"comment": _text(column.comment, redactor, counts),
                                                  "default": _text(column.default, redactor, counts)})
                        if column.comment or column.default else column for column in table.columns)
        clean_tables.append(table.model_copy(update={"comment": _text(table.comment, redactor, counts),
                                                     "columns": columns}))
    clean_samples = [sample.model_copy(update={"values": tuple(redactor.value(v, counts) for v in sample.values)})
                     if any(isinstance(v, str) for v in sample.values) else sample for sample in samples]
    return clean_tables, clean_samples


def _text(value: str | None, redactor: Redactor, counts: Counter[str]) -> str | None:
    return redactor.text(value, counts) if value else value


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
