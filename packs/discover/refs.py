"""Index documents as discover refs: public ids, kinds, summaries, snippets and what they matched on.

Ref ids are the names people use (``public.orders``, ``public.orders.status``, ``orders.order_count``,
a wiki key); the index id (``table:warehouse:public.orders``) travels as ``docId`` for exact lookups.
"""

from __future__ import annotations

from typing import Any

from packs.discover.text import cap, matched_terms, name_stems, snippet_around, stem

RAW_KINDS = frozenset({"table", "column"})
SL_KINDS = frozenset({"sl_source", "sl_measure", "sl_dimension"})
PATTERN_PREFIX = "historic-sql/"

# Which FTS field means what, per kind (``summary`` is resolved to description or comment below).
_FIELD_MEANING: dict[str, dict[str, str]] = {
    "table": {"name": "name", "title": "display", "summary": "description", "body": "column", "extra": "usage"},
    "column": {"name": "name", "title": "display", "summary": "description", "body": "sample_value",
               "extra": "display", "tags": "display"},
    "sl_source": {"name": "name", "title": "display", "summary": "description", "body": "body", "extra": "usage",
                  "tags": "usage"},
    "sl_measure": {"name": "name", "title": "display", "summary": "description", "body": "expr", "extra": "display",
                   "tags": "expr"},
    "sl_dimension": {"name": "name", "title": "display", "summary": "description", "body": "expr",
                     "extra": "display", "tags": "display"},
    "wiki": {"name": "name", "title": "display", "summary": "description", "tags": "name", "body": "body",
             "extra": "name"},
}
_FIELD_ORDER = ("name", "title", "summary", "tags", "extra", "body")


def discover_kind(kind: str, metadata: dict[str, Any]) -> str:
    """The discover kind of an index document: pattern pages are wiki pages under historic-sql/."""
    if kind == "wiki":
        key = str(metadata.get("key", ""))
        if key.startswith(PATTERN_PREFIX) and ("pattern" in (metadata.get("tags") or [])
                                               or metadata.get("page_kind") == "pattern"):
            return "pattern"
    return kind


def public_id(doc_id: str, kind: str, metadata: dict[str, Any]) -> str:
    if kind in ("wiki", "pattern"):
        return str(metadata.get("key", doc_id))
    if kind in RAW_KINDS:
        return doc_id.split(":", 2)[-1]
    if kind in SL_KINDS:
        return doc_id.removeprefix("sl:")
    return doc_id


def summary_of(kind: str, metadata: dict[str, Any], fields: dict[str, str]) -> str | None:
    if kind in ("wiki", "pattern"):
        text = metadata.get("summary") or ""
    elif kind == "table":
        text = metadata.get("description") or metadata.get("comment") or ""
    elif kind == "column":
        text = fields.get("summary") or metadata.get("comment") or ""
    else:
        text = metadata.get("description") or ""
    return cap(str(text)) if text else None


def matched_on(kind: str, metadata: dict[str, Any], fields: dict[str, str], terms: list[str]) -> tuple[str, str]:
    """(matchedOn, the field it came from): the first field, by weight, that holds a query term."""
    meanings = _FIELD_MEANING.get("wiki" if kind == "pattern" else kind, {})
    for name in _FIELD_ORDER:
        if name in meanings and matched_terms(terms, fields.get(name, "")):
            meaning = meanings[name]
            if meaning == "description" and kind in RAW_KINDS and not metadata.get("description") \
                    and metadata.get("comment"):
                meaning = "comment"
            if kind == "sl_dimension" and name == "body" and metadata.get("values"):
                meaning = "sample_value"
            return meaning, name
    return ("body" if kind in ("wiki", "pattern") else "name"), ""


def snippet_of(kind: str, metadata: dict[str, Any], fields: dict[str, str], terms: list[str], field: str,
               columns: list[str]) -> str | None:
    text = fields.get(field, "") if field else ""
    if kind == "table":
        if field in ("summary", "extra"):
            return snippet_around(text, terms)
        if field == "body":  # found through its columns: those that matched first
            wanted = {stem(term) for term in terms}
            columns = sorted(columns, key=lambda name: not (name_stems(name) & wanted))
        return cap(", ".join(columns)) if columns else cap(fields.get("summary", "")) or None
    if kind == "column":
        native = str(metadata.get("nativeType") or metadata.get("type") or "")
        if field == "body":
            samples = ", ".join(str(v) for v in metadata.get("samples") or [])
            return cap(f"{native} - samples: {samples}")
        if field == "summary":
            return snippet_around(text, terms)
        return cap(native) or None
    if kind == "sl_measure":  # what it computes, count(*) included
        return cap(str(metadata.get("formula") or metadata.get("expr") or "")) or None
    if kind == "sl_dimension":
        if field == "summary":
            return snippet_around(text, terms)
        return cap(f"{metadata.get('name')} ({metadata.get('type')})")
    if kind == "sl_source":
        if field in ("summary", "extra"):
            return snippet_around(text, terms)
        members = [*(metadata.get("measures") or []), *(metadata.get("columns") or [])]
        return cap(f"{metadata.get('name')}: {', '.join(members)}")
    if field in ("body", "summary"):
        return snippet_around(text, terms) or None
    return snippet_around(fields.get("body", "") or fields.get("summary", ""), terms) or None


def raw_fields(kind: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """connectionId, tableRef and columnName for raw refs; connectionId for semantic-layer refs."""
    out: dict[str, Any] = {}
    if kind in RAW_KINDS or kind in SL_KINDS:
        out["connectionId"] = metadata.get("connectionId")
    if kind in RAW_KINDS:
        ref = metadata.get("tableRef") or {}
        out["tableRef"] = {"catalog": ref.get("catalog"), "db": ref.get("db"), "name": ref.get("name")}
    if kind == "column":
        out["columnName"] = metadata.get("columnName")
    return out
