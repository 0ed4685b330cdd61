"""The semantic layer's contribution to the retrieval index.

One ``sl_source`` document per file (id ``sl:<name>``, the target of the wiki's ``sl_refs``), one
``sl_measure`` per measure (``sl:<name>.<measure>``) and one ``sl_dimension`` per column
(``sl:<name>.<column>``). Edges: ``join`` between sources, ``contains`` from a source to its
measures and dimensions, ``sl_table`` from a source to the scanned table it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from khive.connections.selection import internal_object
from khive.hookspecs import EdgeRule
from khive.index.documents import Document, Edge, FileSource, dedupe_edges, words
from packs.sl.models import Source
from packs.sl.store import SL_ROOT, split_path
from packs.sl.tableref import table_key
from packs.sl.validate import Known, parse_source

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

SOURCE_KIND, MEASURE_KIND, DIMENSION_KIND = "sl_source", "sl_measure", "sl_dimension"
TABLE_KIND = "table"  # the scan pack's documents (ids table:<connection>:<db>.<name>)

EDGE_RULES = (
    EdgeRule("join", frozenset({SOURCE_KIND}), frozenset({SOURCE_KIND})),
    EdgeRule("contains", frozenset({SOURCE_KIND}), frozenset({MEASURE_KIND, DIMENSION_KIND})),
    EdgeRule("sl_table", frozenset({SOURCE_KIND}), frozenset({TABLE_KIND})),
)
def name_words(name: str) -> str:
    """The name and, when they differ, its words: ``order_count order count``, but ``status`` once."""
    spaced = words(name)
    return name if spaced == name else f"{name} {spaced}"


def source_id(name: str) -> str:
    return f"sl:{name}"


def member_id(source: str, member: str) -> str:
    return f"sl:{source}.{member}"


def table_doc_id(connection: str, table: str) -> str | None:
    """``table:<connection>:<db>.<name>`` for ``[catalog.]db.name``; None without a schema."""
    parts = table_key(table).split(".")
    return f"table:{connection}:{parts[-2]}.{parts[-1]}" if len(parts) >= 2 else None


def usage_text(source: Source) -> str:
    usage = source.usage
    if usage is None:
        return ""
    parts = [usage.narrative or ""]
    if usage.commonFilters:
        parts.append("commonly filtered by " + ", ".join(usage.commonFilters))
    if usage.commonGroupBys:
        parts.append("commonly grouped by " + ", ".join(usage.commonGroupBys))
    if usage.commonJoins:
        parts.append("commonly joined to " + "; ".join(join.text() for join in usage.commonJoins))
    return ". ".join(part for part in parts if part)


def source_documents(connection: str, source: Source, path: str = "") -> list[Document]:
    name = source.name
    description = source.descriptions.resolved() or ""
    usage = source.usage
    tier = usage.frequencyTier if usage else None
    column_text = " ".join(f"{name_words(c.name)} {c.descriptions.resolved() or ''}".strip() for c in source.columns)
    measure_text = " ".join(f"{name_words(m.name)} {m.description or ''}".strip() for m in source.measures)
    segment_text = " ".join(f"{name_words(s.name)} {s.description or ''}".strip() for s in source.segments)
    edges = [Edge("join", source_id(j.to), {"relationship": j.relationship,
                                             "on": [{"from": k.from_, "to": k.to} for k in j.on]})
             for j in source.joins]
    edges += [Edge("contains", member_id(name, m.name)) for m in source.measures]
    edges += [Edge("contains", member_id(name, c.name)) for c in source.columns]
    table_id = table_doc_id(connection, source.table) if source.table else None
    if table_id:
        edges.append(Edge("sl_table", table_id))
    documents = [Document(
        id=source_id(name), kind=SOURCE_KIND, title=name, connection=connection,
        fields={"name": " ".join([name_words(name), *source.aliases]), "title": source.table or "",
                "summary": description,
                "tags": tier or "", "body": f"{column_text} {measure_text} {segment_text}".strip(),
                "extra": usage_text(source)},
        metadata={"connectionId": connection, "name": name, "aliases": source.aliases, "table": source.table,
                  "isSql": source.sql is not None,
                  "description": description or None, "describedBy": source.descriptions.origin(),
                  "columnCount": len(source.columns),
                  "measureCount": len(source.measures), "joinCount": len(source.joins),
                  "segmentCount": len(source.segments), "frequencyTier": tier,
                  "columns": [c.name for c in source.columns], "measures": [m.name for m in source.measures],
                  "joins": [j.to for j in source.joins], "path": path},
        edges=dedupe_edges(edges),
        embed_text=" ".join(part for part in (words(name), description, " ".join(words(c.name) for c in source.columns),
                                              " ".join(words(m.name) for m in source.measures),
                                              usage.narrative if usage and usage.narrative else "") if part),
    )]
    for measure in source.measures:
        documents.append(Document(
            id=member_id(name, measure.name), kind=MEASURE_KIND, title=f"{name}.{measure.name}",
            connection=connection,
            fields={"name": name_words(measure.name), "title": f"{name}.{measure.name}",
                    "summary": measure.description or "", "tags": measure.agg,
                    "body": " ".join(part for part in (measure.expr, measure.filter) if part),
                    "extra": name_words(name)},
            metadata={"connectionId": connection, "source": name, "name": measure.name, "agg": measure.agg,
                      "expr": measure.expr, "filter": measure.filter, "formula": measure.formula,
                      "description": measure.description},
            embed_text=f"{words(measure.name)} {words(name)} {measure.description or ''}".strip(),
        ))
    for column in source.columns:
        note = column.descriptions.resolved() or ""
        documents.append(Document(
            id=member_id(name, column.name), kind=DIMENSION_KIND, title=f"{name}.{column.name}",
            connection=connection,
            fields={"name": name_words(column.name), "title": f"{name}.{column.name}",
                    "summary": note, "tags": column.type, "body": " ".join([column.expr or "", *column.values]).strip(),
                    "extra": name_words(name)},
            metadata={"connectionId": connection, "source": name, "name": column.name, "type": column.type,
                      "expr": column.expr, "description": note or None, "values": column.values},
            embed_text=f"{words(column.name)} {words(name)} {note}".strip(),
        ))
    return documents


def documents(path: str, text: str) -> Sequence[Document]:
    parts = split_path(path)
    if parts is None:
        return []  # not a source file (e.g. notes kept beside the sources)
    source = parse_source(text, path)
    if source.table and _reads_server_internals(source.table):
        return []  # an older sl.bootstrap made it from a server internal (ADR 0035): never searched; delete the file
    return source_documents(parts[0], source, path)


def _reads_server_internals(table: str) -> bool:
    parts = table_key(table).split(".")
    return internal_object(parts[-2] if len(parts) > 1 else "", parts[-1]) is not None


def indexed_sources(index: RetrievalIndex) -> list[dict[str, Any]]:
    """Metadata of every indexed source (the index refreshed first)."""
    index.refresh()
    return [row["metadata"] for row in index.documents(kind=SOURCE_KIND)]


def known_sources(index: RetrievalIndex) -> dict[str, Known]:
    """What every indexed source declares, by name: the context for reference checks."""
    return {meta["name"]: Known(meta["connectionId"], meta["name"], frozenset(meta.get("columns") or ()),
                                frozenset(meta.get("measures") or ())) for meta in indexed_sources(index)}


SOURCE = FileSource(name="sl", roots=(SL_ROOT,), suffixes=(".yaml",), parse=documents, version="4")
