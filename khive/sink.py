"""``save_to``: a verb's result written to a project file instead of only into the agent's context.

Verbs that produce tables (``sql.execute``, ``sl.query``) or ranked lists (``discover.search``) take an
optional ``save_to``: a path under the project's ``exports/`` directory (``q3/revenue.csv`` and
``exports/q3/revenue.csv`` name the same file). The extension picks the format:

    .csv     a header row, then one line per row; null is an empty field, lists and objects their JSON text
    .jsonl   one JSON object per row (column -> value)
    .json    the whole answer as one JSON document

The file is written through the project file store (atomic, locked, committed when the project
commits); at most ``MAX_SAVE_BYTES``. The answer keeps a short preview of the rows and says what was
written under ``savedTo`` (path, format, rows, bytes, sha256). Only ``exports/`` can be written: an agent
cannot replace a wiki page, a semantic-layer source or ``khive.yaml`` through a query.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any, Literal

import orjson

from khive.errors import InvalidArgs, LimitExceeded, quoted
from khive.project.store import FileStore, clean_path

EXPORTS = "exports"
MAX_SAVE_BYTES = 64 * 1024 * 1024
PREVIEW_ROWS = 5
FORMATS: dict[str, Literal["csv", "jsonl", "json"]] = {".csv": "csv", ".jsonl": "jsonl", ".json": "json"}
SAVE_TO_DOC = ("write the result to this file under the project's exports/ directory (.csv, .jsonl or .json); "
               "the answer then holds a preview and savedTo")
_FIX = "save_to='q3/revenue.csv' (under exports/; .csv, .jsonl or .json)"


def target(save_to: str) -> str:
    """The project-relative path ``save_to`` names (always under exports/), or InvalidArgs naming the fix."""
    relative = save_to.strip()
    if PurePosixPath(relative).is_absolute():
        raise InvalidArgs(f"save_to {quoted(save_to)} is absolute; it names a file under the project's exports/",
                          details={"field": "save_to", "fix": _FIX})
    parts = PurePosixPath(relative).parts
    if parts and parts[0] == EXPORTS:
        relative = PurePosixPath(*parts[1:]).as_posix() if len(parts) > 1 else ""
    try:
        path = clean_path(f"{EXPORTS}/{relative}") if relative else ""
    except Exception as exc:  # invalid_path: absolute, '..', too long, ...
        raise InvalidArgs(f"save_to {quoted(save_to)}: {getattr(exc, 'message', exc)}",
                          details={"field": "save_to", "fix": _FIX}) from None
    if not path or PurePosixPath(path).suffix.lower() not in FORMATS:
        raise InvalidArgs(f"save_to {quoted(save_to)} names no file with a known format; the extension picks it: "
                          f"{', '.join(FORMATS)}", details={"field": "save_to", "fix": _FIX})
    return path


def write_key(save_to: str | None) -> list[str]:
    """The write key of an op that saves (two ops of one batch may not write one file)."""
    return [f"export:{target(save_to)}"] if save_to else []


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()  # numbers as JSON writes them; lists and objects as their JSON text


def render(fmt: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], document: Any) -> str:
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "jsonl":
        return "".join(orjson.dumps(dict(zip(columns, row, strict=True))).decode() + "\n" for row in rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return out.getvalue()


def save(files: FileStore, save_to: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], document: Any, *,
         author: str | None = None) -> dict[str, Any]:
    """Write ``rows`` (or ``document``, for .json) to the file ``save_to`` names; what was written."""
    path = target(save_to)
    fmt = FORMATS[PurePosixPath(path).suffix.lower()]
    text = render(fmt, columns, rows, document)
    size = len(text.encode("utf-8"))
    if size > MAX_SAVE_BYTES:
        raise LimitExceeded(f"save_to {quoted(save_to)}: the {fmt} file would be {size} bytes, over the "
                            f"{MAX_SAVE_BYTES}-byte limit of a saved result; ask for fewer rows (limit) or columns",
                            details={"field": "save_to", "bytes": size, "limit": MAX_SAVE_BYTES})
    written = files.write_text(path, text, author=author, message=f"khive: save {path}")
    return {"path": path, "format": fmt, "rows": len(rows), "bytes": written.bytes, "sha256": written.sha256}


def save_table(files: FileStore, save_to: str, answer: dict[str, Any], *, author: str | None = None
               ) -> dict[str, Any]:
    """A result with ``columns`` (``[{"name", "type"}]``) and ``rows``: saved, and the answer with a preview."""
    names = [str(column["name"]) for column in answer["columns"]]
    saved = save(files, save_to, names, answer["rows"], answer, author=author)
    return {**answer, "rows": answer["rows"][:PREVIEW_ROWS], "rowsShown": min(len(answer["rows"]), PREVIEW_ROWS),
            "savedTo": saved}


def save_records(files: FileStore, save_to: str, answer: dict[str, Any], key: str, *, author: str | None = None
                 ) -> dict[str, Any]:
    """A result whose ``key`` lists objects (discover's refs): one row per object, columns in first-seen order."""
    records = [record for record in answer.get(key, []) if isinstance(record, dict)]
    columns = list(dict.fromkeys(name for record in records for name in record))
    rows = [[record.get(name) for name in columns] for record in records]
    saved = save(files, save_to, columns, rows, answer, author=author)
    return {**answer, "savedTo": saved}
