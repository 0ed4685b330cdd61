"""Digests (the evidence providers produce) and the work units still waiting for one.

    raw-sources/<connection>/historic-sql-digests/tables/<schema>.<name>.json   one usage digest per table
    raw-sources/<connection>/historic-sql-digests/patterns.json                 the patterns digest

Each digest records the content hash of the staged input it was made from. A work unit is a staged
input whose hash has no digest yet: a table whose staged file changed, or the patterns input. So an
unchanged rerun has no work units, a unit the agent never submitted stays pending across runs, and a
digest made from an older input never counts for a newer one. Digest files are written through the
project file store (atomic, locked) as stable JSON, so re-storing an identical digest changes nothing.

Unit ids name everything ``submit`` needs: ``<connection>/table/<schema.name>@<hash16>`` and
``<connection>/patterns@<hash16>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from khive.errors import InvalidArgs, quoted
from khive.project.runs import json_bytes
from khive.project.store import FileStore
from khive.redact import Redactor
from packs.historic_sql.schemas import PatternsOutput, UsageOutput

DIGESTS = "historic-sql-digests"
HASH_CHARS = 16
_UNIT_RE = re.compile(
    r"(?P<connection>[^/@]+)/(?:table/(?P<table>[^@]+)|(?P<patterns>patterns))@(?P<hash>[0-9a-f]{16})\Z")
Kind = Literal["usage", "patterns"]


@dataclass(frozen=True)
class WorkUnit:
    id: str
    connection: str
    kind: Kind
    target: str  # the table key, or "patterns"
    content_hash: str

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.id, "kind": self.kind, "target": self.target, "connection": self.connection}


def unit_id(connection: str, kind: Kind, target: str, content_hash: str) -> str:
    where = "patterns" if kind == "patterns" else f"table/{target}"
    return f"{connection}/{where}@{content_hash[:HASH_CHARS]}"


def parse_unit(unit: str) -> tuple[str, Kind, str, str]:
    """(connection, kind, target, hash prefix) of a unit id, or InvalidArgs naming the expected form."""
    match = _UNIT_RE.match(unit)
    if match is None:
        raise InvalidArgs(f"unit {quoted(unit)} is not a work unit id; ids look like shop/table/public.orders@<16 hex> "
                          "or shop/patterns@<16 hex>: take them from historic_sql.units()",
                          details={"unit": unit})
    if match["patterns"]:
        return match["connection"], "patterns", "patterns", match["hash"]
    return match["connection"], "usage", match["table"], match["hash"]


def table_digest_path(connection: str, table: str) -> str:
    return f"raw-sources/{connection}/{DIGESTS}/tables/{table.replace('/', '_')}.json"


def patterns_digest_path(connection: str) -> str:
    return f"raw-sources/{connection}/{DIGESTS}/patterns.json"


def _read(files: FileStore, path: str) -> dict[str, Any] | None:
    data = files.read_bytes(path)
    if data is None:
        return None
    try:
        loaded = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None  # a damaged digest is no digest: the unit comes back
    return loaded if isinstance(loaded, dict) else None


def read_usage(files: FileStore, connection: str, table: str) -> dict[str, Any] | None:
    return _read(files, table_digest_path(connection, table))


def read_patterns(files: FileStore, connection: str) -> dict[str, Any] | None:
    return _read(files, patterns_digest_path(connection))


def redacted(output: Any, redactor: Redactor, key: str = "") -> Any:
    """A digest's output with its text redacted (khive/redact.py): narratives, titles and SQL, whoever wrote
    them (the deterministic digest, an agent, the client's LLM); SQL keeps markers that parse."""
    if isinstance(output, str):
        return redactor.sql(output) if key.endswith("Sql") else redactor.text(output)
    if isinstance(output, dict):
        return {name: redacted(value, redactor, name) for name, value in output.items()}
    if isinstance(output, list):
        return [redacted(value, redactor, key) for value in output]
    return output


def store(files: FileStore, unit: WorkUnit, output: UsageOutput | PatternsOutput, provider: str,
          *, author: str, redactor: Redactor) -> bool:
    """Write the digest of ``unit``, its text redacted; True when the file changed."""
    body: dict[str, Any] = {"unit": unit.id, "contentHash": unit.content_hash, "provider": provider,
                            "output": redacted(output.model_dump(mode="json", exclude_none=True), redactor)}
    path = patterns_digest_path(unit.connection) if unit.kind == "patterns" else (
        table_digest_path(unit.connection, unit.target))
    if unit.kind == "usage":
        body["table"] = unit.target
    text = json_bytes(body).decode()
    result = files.write_text(path, text, author=author, message=f"historic_sql: digest {unit.id}")
    return result.changed


def pending(files: FileStore, connection: str, manifest: dict[str, Any]) -> list[WorkUnit]:
    """Units of the staged run ``manifest`` without a digest of the same content, tables first."""
    out: list[WorkUnit] = []
    for table, digest in sorted(manifest.get("tables", {}).items()):
        stored = read_usage(files, connection, table)
        if stored is None or stored.get("contentHash") != digest:
            out.append(WorkUnit(unit_id(connection, "usage", table, digest), connection, "usage", table, digest))
    patterns_hash = manifest.get("patternsHash")
    if patterns_hash and manifest.get("counts", {}).get("tableSets"):
        stored = read_patterns(files, connection)
        if stored is None or stored.get("contentHash") != patterns_hash:
            out.append(WorkUnit(unit_id(connection, "patterns", "patterns", patterns_hash), connection,
                                "patterns", "patterns", patterns_hash))
    return out


def current_usage(files: FileStore, connection: str, manifest: dict[str, Any], redactor: Redactor
                  ) -> dict[str, dict[str, Any]]:
    """table -> usage output, for the tables whose digest matches the staged content (redacted again: a digest
    stored before redaction existed must not reach the shards either)."""
    out: dict[str, dict[str, Any]] = {}
    for table, digest in manifest.get("tables", {}).items():
        stored = read_usage(files, connection, table)
        if stored is not None and stored.get("contentHash") == digest:
            usage = UsageOutput.model_validate(stored["output"]).model_dump(mode="json", exclude_none=True)
            out[table] = redacted(usage, redactor)
    return out


def current_patterns(files: FileStore, connection: str, manifest: dict[str, Any], redactor: Redactor
                     ) -> list[dict[str, Any]] | None:
    """The patterns digest of the staged patterns input (redacted again), or None while it is pending."""
    if not manifest.get("counts", {}).get("tableSets"):
        return []  # nothing co-occurs: no patterns, and no unit was ever due
    stored = read_patterns(files, connection)
    if stored is None or stored.get("contentHash") != manifest.get("patternsHash"):
        return None
    patterns: list[dict[str, Any]] = redacted(stored["output"]["patterns"], redactor, "patterns")
    return patterns
