"""``sl.dictionary_search``: which column holds a value, from what the latest scan profiled.

Evidence, strongest first: the per-column samples of the latest scan's artifacts
(``raw-sources/<connection>/live-database/<syncId>/tables.json``: values with frequencies), else
the ``samples`` of the ``_schema`` shards (values only; raw-sources may not be checked in), plus the
``values`` hints of semantic-layer columns. Matching is case-insensitive: exact, then prefix, then
substring. Samples are bounded (top-N values per column), so a miss says why it may be one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from khive.connections.selection import internal_object
from khive.project.store import inside
from khive.project.yamldoc import safe_yaml
from khive.redact import Redactor
from khive.secretnames import secret_name
from packs.sl.index import DIMENSION_KIND, indexed_sources

if TYPE_CHECKING:
    from khive.services import Services

LIVE = "live-database"
MATCH_ORDER = {"exact": 0, "prefix": 1, "substring": 2}
SECRET_NAME = "secret-name"  # a column whose name says credential: never sampled, never shown
MAX_LISTED = 20
TEXT_TYPES = frozenset({"string", "uuid", "json", "other"})
NUMERIC_TYPES = frozenset({"number", "integer"})


@dataclass
class Profile:
    """What the scan knows about one column's values."""

    connection: str
    table: str  # db.name
    column: str
    type: str | None = None
    values: list[Any] = field(default_factory=list)
    frequencies: list[int] | None = None
    distinct: int | None = None
    sampled_rows: int | None = None
    skipped: str | None = None
    profiled: bool = False
    origin: str = "scan_samples"


def latest_sync(runtime: Services, connection: str) -> str | None:
    root = inside(runtime.project, Path("raw-sources", connection, LIVE))  # refused if a symlink leads elsewhere
    if not root.is_dir():
        return None
    runs = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    return runs[-1] if runs else None


def scan_profiles(runtime: Services, connection: str) -> tuple[list[Profile], str | None, str]:
    """(profiles, syncId, where from: artifacts | shards | none) of one connection's latest scan."""
    files = runtime.files
    redactor: Redactor | None = runtime.redactor  # runs and shards from before redaction: redacted as read
    sync = latest_sync(runtime, connection)
    profiles: list[Profile] = []
    if sync is not None:
        run = f"raw-sources/{connection}/{LIVE}/{sync}"
        listed = files.read_bytes(f"{run}/tables.json")  # one file per run (scan ADR 0021)
        tables = orjson.loads(listed)["tables"] if listed is not None else [  # older runs: a file per table
            orjson.loads(files.read_bytes(path) or b"{}") for path in files.list(f"{run}/tables/", suffix=".json")]
        report = files.read_bytes(f"{run}/scan-report.json")
        if report is not None and "redactions" in orjson.loads(report):
            redactor = None  # the scan redacted its samples when it wrote them (ADR 0035)
        for table in tables:
            if internal_object(str(table.get("db")), str(table.get("name"))) is not None:
                continue  # recorded before server internals were left out (khive.connections.selection)
            key = f"{table.get('db')}.{table.get('name')}"
            for column in table.get("columns") or []:
                samples = column.get("samples")
                name = str(column.get("name"))
                profile = Profile(connection, key, name, column.get("normalizedType"))
                if isinstance(samples, dict):
                    profile.skipped = samples.get("skipped") or (SECRET_NAME if secret_name(name) else None)
                    values = list(samples.get("values") or [])
                    profile.values = redactor.column_values(name, values) if redactor is not None else values
                    profile.frequencies = list(samples.get("frequencies") or []) or None
                    profile.distinct = samples.get("distinct")
                    profile.sampled_rows = samples.get("sampledRows")
                    profile.profiled = profile.skipped is None
                profiles.append(profile)
        return profiles, sync, "artifacts"
    shards = files.list(f"_schema/{connection}/", suffix=".yaml")
    for path in shards:
        data = safe_yaml().load(files.read_text(path) or "") or {}
        for name, entry in (data.get("tables") or {}).items():
            if (not isinstance(entry, dict) or entry.get("droppedInSync")
                    or internal_object(str(data.get("schema")), str(name)) is not None):
                continue
            for column in entry.get("columns") or []:
                values = runtime.redactor.column_values(str(column.get("name")), column.get("samples") or [])
                profiles.append(Profile(connection, f"{data.get('schema')}.{name}", str(column.get("name")),
                                        column.get("type"), values=values, profiled=bool(values),
                                        origin="shard_samples"))
    return profiles, None, "shards" if shards else "none"


def _hint_profiles(runtime: Services, connections: set[str]) -> list[Profile]:
    """Sources' ``values`` hints, as profiles of the tables the sources read."""
    index = runtime.index
    tables = {meta["name"]: meta for meta in indexed_sources(index)}
    out = []
    for row in index.documents(kind=DIMENSION_KIND):
        meta = row["metadata"]
        source = tables.get(meta["source"])
        if not meta.get("values") or source is None or source["connectionId"] not in connections:
            continue
        out.append(Profile(source["connectionId"], source.get("table") or f"(sql) {source['name']}",
                           meta["name"], values=list(meta["values"]), profiled=True, origin="sl_values"))
    return out


def _match(value: Any, needle: str) -> str | None:
    text = str(value).casefold()
    if text == needle:
        return "exact"
    if text.startswith(needle):
        return "prefix"
    return "substring" if needle in text else None


def _short(table: str) -> str:
    return ".".join(table.casefold().split(".")[-2:])


def dictionary_search(runtime: Services, query: str, connection: str | None, limit: int) -> dict[str, Any]:
    if connection is not None:
        runtime.connection(connection)  # unknown -> connection_not_found
    connections = [connection] if connection else sorted(runtime.config.connections)
    needle = query.strip().casefold()
    profiles: list[Profile] = []
    coverage: dict[str, Any] = {}
    for name in connections:
        found, sync, origin = scan_profiles(runtime, name)
        profiles.extend(found)
        reasons = Counter(p.skipped for p in found if p.skipped)
        coverage[name] = {"syncId": sync, "from": origin, "columns": len(found),
                          "profiled": sum(1 for p in found if p.profiled),
                          "skipped": sum(reasons.values()), "skippedReasons": dict(reasons),
                          "notProfiled": sum(1 for p in found if not p.profiled and not p.skipped)}
    profiles.extend(_hint_profiles(runtime, set(connections)))
    covering: dict[tuple[str, str], list[str]] = {}
    for meta in indexed_sources(runtime.index):
        if meta.get("table"):
            covering.setdefault((meta["connectionId"], _short(meta["table"])), []).append(meta["name"])

    hits = []
    for profile in profiles:
        for position, value in enumerate(profile.values):
            how = _match(value, needle) if value is not None and needle else None
            if how is None:
                continue
            frequency = profile.frequencies[position] if profile.frequencies and position < len(
                profile.frequencies) else None
            complete = profile.distinct is not None and profile.distinct <= len(profile.values)
            hits.append({"connectionId": profile.connection, "table": profile.table, "column": profile.column,
                         "value": value, "matchedOn": how, "frequency": frequency,
                         "sampledRows": profile.sampled_rows, "complete": complete, "origin": profile.origin,
                         "sources": covering.get((profile.connection, _short(profile.table)), [])})
    hits.sort(key=lambda h: (MATCH_ORDER[h["matchedOn"]], h["origin"] == "sl_values", -(h["frequency"] or 0),
                             h["connectionId"], h["table"], h["column"]))
    hits = _dedupe(hits)
    out: dict[str, Any] = {"query": query, "hits": hits[:limit], "count": len(hits), "coverage": coverage}
    if not hits:
        out["reasons"] = _miss_reasons(profiles, coverage, numeric=_is_number(needle))
    return out


def _dedupe(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One hit per (column, value): scan samples win over a source's hint for the same value."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for hit in hits:
        key = (hit["connectionId"], _short(hit["table"]), hit["column"], str(hit["value"]).casefold())
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _miss_reasons(profiles: list[Profile], coverage: dict[str, Any], *, numeric: bool) -> list[dict[str, Any]]:
    reasons: list[dict[str, Any]] = []
    unscanned = sorted(name for name, info in coverage.items() if info["from"] == "none")
    if unscanned:
        reasons.append({"reason": "not_scanned", "connections": unscanned,
                        "message": "no scan yet: run `khive scan <connection>` (scan.run) first"})
    blind: dict[tuple[str, str], dict[str, Any]] = {}
    for profile in profiles:
        if profile.origin != "sl_values" and not profile.profiled:
            entry = blind.setdefault((profile.connection, profile.table), {
                "connectionId": profile.connection, "table": profile.table, "columns": []})
            entry["columns"].append({"column": profile.column, "why": profile.skipped or "no samples"})
    if blind:
        listed = sorted(blind.values(), key=lambda e: (e["connectionId"], e["table"]))
        reasons.append({"reason": "column_not_profiled", "tables": listed[:MAX_LISTED], "tableCount": len(listed),
                        "message": "column not profiled: these columns were skipped (sensitive names or types) or "
                                   "have no samples, so a value in them cannot be found here"})
    kinds = NUMERIC_TYPES if numeric else TEXT_TYPES
    profiled = [p for p in profiles if p.profiled and p.origin != "sl_values"]
    partial = [p for p in profiled if (p.type is None or p.type in kinds)
               and (p.distinct is None or p.distinct > len(p.values))]
    if profiled:
        bound = max(len(p.values) for p in profiled)
        reasons.append({"reason": "value_not_in_samples", "profiledColumns": len(profiled),
                        "partialColumns": len(partial), "maxValues": bound,
                        "examples": [f"{p.table}.{p.column}" for p in partial[:MAX_LISTED]],
                        "message": f"value not seen in samples (samples are bounded: top-{bound} values per column)"
                                   + ("; it may still be in a column whose samples are partial (examples): check "
                                      "with sql.execute" if partial else
                                      "; the samples of the likely columns are complete, so it is not in them")})
    return reasons
