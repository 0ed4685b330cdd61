"""What the guide's examples are made of: this project's connections, tables, columns, measures and
pages, learnt through the same public verbs an agent calls (so an example names only what exists).

For each scanned connection (at most ``CONNECTIONS``, those with query history first) one table is
featured: of the most queried tables (else the largest), the first with a column to group by (one
people group by, else the categorical column with the fewest values). Its semantic-layer source,
when there is one, gives a measure (a count first: an integer on every engine) and a dimension.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

# (request text, presentation) -> envelope, dispatched as an agent's MCP call would be.
Call = Callable[[str, str], Awaitable[dict[str, Any]]]

CONNECTIONS = 3
CANDIDATES = 3  # tables tried per connection for one worth grouping by
MEASURES_LISTED = 6
PER_TABLE = 2
_PAGE_KINDS = ("warning", "rule", "note")


@dataclass(frozen=True, slots=True)
class Featured:
    """One table per connection that the examples use."""

    connection: str
    driver: str
    table: str  # schema.table, as scan.entity and discover.lookup accept it
    word: str  # a search phrase from its name ("order items")
    group_column: str | None = None
    usage: bool = False  # historic_sql.usage answers for it
    source: str | None = None  # its semantic-layer source
    measure: str | None = None  # source.measure
    dimension: str | None = None  # source.column


@dataclass(frozen=True, slots=True)
class Facts:
    overview: Mapping[str, Any]
    verbs: frozenset[str]  # public verbs: what an agent may call
    operators: frozenset[str] = frozenset()  # operator verbs: refused over MCP, for the person's CLI
    featured: tuple[Featured, ...] = ()
    measures: Mapping[str, Sequence[str]] = field(default_factory=dict)  # connection -> a few source.measure
    page: str | None = None  # a wiki page to read (not a generated pattern page)
    patterns: Mapping[str, int] = field(default_factory=dict)  # connection -> live pattern pages


def quoted(value: Any) -> str:
    """A DSL value: JSON text (strings in double quotes, lists in brackets)."""
    return orjson.dumps(value).decode()


async def result_of(call: Call, text: str) -> dict[str, Any] | None:
    """The first op's result (verbose), or None when it failed."""
    envelope = await call(text, "verbose")
    first = envelope["results"][0]
    return first.get("result") if first.get("ok") else None


async def gather(call: Call) -> Facts:
    listed = await result_of(call, "verbs()") or {}
    verbs = frozenset(entry["verb"] for entry in listed.get("verbs", []) if entry.get("visibility") == "public")
    operators = frozenset(entry["verb"] for entry in listed.get("verbs", []) if entry.get("visibility") == "operator")
    overview = await result_of(call, "overview()") if "overview" in verbs else None
    if overview is None:
        return Facts({}, verbs, operators)
    # Connections with query history first (their examples use the tables people query), then the largest.
    scanned = sorted((entry for entry in overview["connections"] if entry.get("lastScan")),
                     key=lambda entry: (not entry.get("topTables"), -int(entry.get("tables") or 0)))[:CONNECTIONS]
    featured: list[Featured] = []
    measures: dict[str, list[str]] = {}
    for entry in scanned:
        chosen = await _feature(call, verbs, entry)
        if chosen is not None:
            featured.append(chosen)
            measures[entry["id"]] = await _measures(call, verbs, entry)
    patterns = {entry["id"]: int(entry["patterns"]) for entry in overview["connections"] if entry.get("patterns")}
    return Facts(overview, verbs, operators, tuple(featured), measures, await _page(call, verbs), patterns)


async def _feature(call: Call, verbs: frozenset[str], entry: Mapping[str, Any]) -> Featured | None:
    """The most queried table (else the largest) that has a column to group by; else the first candidate."""
    connection = entry["id"]
    candidates = [t["table"] for t in entry.get("topTables") or entry.get("largestTables") or []]
    first: Featured | None = None
    for table in candidates[:CANDIDATES]:
        word = re.sub(r"[^0-9A-Za-z]+", " ", table.rsplit(".", 1)[-1]).strip() or table
        found = Featured(connection, entry["driver"], table, word)
        detail = await result_of(call, f"scan.entity(connection={quoted(connection)}, table={quoted(table)})") \
            if "scan.entity" in verbs else None
        if detail is not None:
            group = _group_column(detail)
            source, measure, dimension = await _semantic(call, verbs, connection, table, group)
            found = Featured(connection, entry["driver"], table, word, group_column=group,
                             usage=bool(detail.get("usage")) and "historic_sql.usage" in verbs,
                             source=source, measure=measure, dimension=dimension)
        if found.group_column:
            return found
        first = first or found
    return first


def _group_column(detail: Mapping[str, Any]) -> str | None:
    """A column people group by, else the categorical column with the fewest distinct values (at least 2)."""
    columns = {column["name"]: column for column in detail.get("columns") or []}
    categorical = {name: column for name, column in columns.items() if column.get("dimensionType") == "categorical"}
    for name in (detail.get("usage") or {}).get("commonGroupBys") or []:
        if name in categorical:
            return str(name)

    def distinct(column: Mapping[str, Any]) -> int:
        samples = column.get("samples") or {}
        return int(samples.get("distinct") or 0) if isinstance(samples, Mapping) else 0

    ranked = sorted((distinct(column), name) for name, column in categorical.items() if distinct(column) >= 2)
    return ranked[0][1] if ranked else None


async def _semantic(call: Call, verbs: frozenset[str], connection: str, table: str, group: str | None
                    ) -> tuple[str | None, str | None, str | None]:
    if not {"sl.list", "sl.read"} <= verbs:
        return None, None, None
    source = await _source_of(call, connection, table)
    if source is None:
        return None, None, None
    read = await result_of(call, f"sl.read(name={quoted(source)}, format=\"json\")")
    body = (read or {}).get("source") or {}
    names = [m["name"] for m in body.get("measures") or [] if isinstance(m, Mapping) and m.get("name")]
    # A count first: its value is an integer on every engine (a sum's type follows the column's).
    counted = [m["name"] for m in body.get("measures") or [] if isinstance(m, Mapping) and m.get("agg") == "count"]
    columns = {c["name"]: c for c in body.get("columns") or [] if isinstance(c, Mapping) and c.get("name")}
    strings = [name for name, column in columns.items() if column.get("type") == "string"]
    dimension = group if group in columns else (strings[0] if strings else None)
    measure = (counted or names or [None])[0]
    return (source, f"{source}.{measure}" if measure else None,
            f"{source}.{dimension}" if dimension else None)


async def _source_of(call: Call, connection: str, table: str) -> str | None:
    listed = await result_of(call, f"sl.list(connection={quoted(connection)}, query={quoted(table)}, limit=50)") or {}
    for row in listed.get("sources", []):
        if row.get("table") == table:
            return str(row["name"])
    return None


async def _measures(call: Call, verbs: frozenset[str], entry: Mapping[str, Any]) -> list[str]:
    """A few measures of the connection's most queried (or largest) tables' sources."""
    if not {"sl.list", "sl.read"} <= verbs:
        return []
    tables = [item["table"] for item in (entry.get("topTables") or entry.get("largestTables") or [])]
    listed = await result_of(call, f"sl.list(connection={quoted(entry['id'])}, limit=5000)") or {}
    by_table = {row.get("table"): row["name"] for row in listed.get("sources", []) if row.get("measureCount")}
    found: list[str] = []
    for table in tables:
        if table not in by_table or len(found) >= MEASURES_LISTED:
            continue
        read = await result_of(call, f"sl.read(name={quoted(by_table[table])}, format=\"json\")")
        named = [m["name"] for m in ((read or {}).get("source") or {}).get("measures") or []
                 if isinstance(m, Mapping) and m.get("name")]
        found += [f"{by_table[table]}.{name}" for name in named[:PER_TABLE]]
    return found[:MEASURES_LISTED]


async def _page(call: Call, verbs: frozenset[str]) -> str | None:
    """A page people wrote (a warning first, then a rule, then a note), not one generated from query history."""
    if not {"wiki.list", "wiki.read"} <= verbs:
        return None
    listed = await result_of(call, "wiki.list(scope=\"global\", limit=5000)") or {}
    pages = [page for page in listed.get("pages", []) if not str(page["key"]).startswith("historic-sql/")
             and not page.get("archived")]
    for kind in _PAGE_KINDS:
        for page in pages:
            if page.get("kind") == kind:
                return str(page["key"])
    return str(pages[0]["key"]) if pages else None

