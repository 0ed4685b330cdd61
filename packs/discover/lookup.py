"""``discover.lookup``: one entity with its neighbourhood, the documents about it, usage and evidence.

Neighbours are visited breadth first, nodes and edges in sorted order, each relation kind bounded,
so the same index always gives the same answer. ``pattern_of`` is synthesised: a historic-sql
pattern page is a pattern of every scanned table whose qualified name it mentions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ruamel.yaml.error import YAMLError

from khive import budget
from khive.project.yamldoc import safe_yaml
from packs.discover import confidence
from packs.discover.refs import discover_kind, public_id, raw_fields, summary_of
from packs.discover.resolve import resolve
from packs.discover.text import cap, snippet_around, split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex
    from khive.project.store import FileStore

RELATIONS = ("fk", "join", "refs", "sl_refs", "sl_table", "contains", "supersedes", "contradicts", "supports",
             "related_to", "pattern_of")
PER_KIND = 20
DOCUMENTS_MAX = 10
COVERING = frozenset({"refs", "sl_refs", "sl_table", "pattern_of", "related_to", "supports"})
USAGE_KEYS = ("narrative", "frequencyTier", "commonFilters", "commonGroupBys", "commonJoins", "staleSince")
_QUALIFIED = re.compile(r"\b([A-Za-z_][\w$]*)\.([A-Za-z_][\w$]*)\b")


Edge = tuple[str, str, str, dict[str, Any]]  # (relation, other id, direction, edge metadata)


def _pattern_edges(index: RetrievalIndex, row: dict[str, Any]) -> list[Edge]:
    """Synthesised ``pattern_of`` edges of a table (incoming) or a pattern page (outgoing)."""
    kind = discover_kind(row["kind"], row["metadata"])
    if kind == "pattern":
        text = " ".join(index.fields([row["id"]]).get(row["id"], {}).values())
        names = sorted({f"{a}.{b}" for a, b in _QUALIFIED.findall(text)})
        found = index.rows_matching([f"table:*:{name}" for name in names]) if names else []
        return [("pattern_of", str(t["id"]), "out", {}) for t in found]
    if kind == "table":
        qualified = row["id"].split(":", 2)[-1]
        hits = index.search(qualified.replace(".", " "), kinds=["wiki"], limit=50, refresh=False, snippets=False)
        pages = [h.id for h in hits if discover_kind(h.kind, h.metadata) == "pattern"]
        texts = index.fields(pages)
        return [("pattern_of", page, "in", {}) for page in pages
                if qualified in " ".join(texts.get(page, {}).values())]
    return []


def neighbours(index: RetrievalIndex, root: dict[str, Any], depth: int) -> dict[str, list[dict[str, Any]]]:
    visited: dict[str, int] = {root["id"]: 0}
    sure: dict[str, float] = {root["id"]: confidence.CERTAIN}  # how sure the path to each node is
    rows: dict[str, dict[str, Any]] = {root["id"]: root}
    groups: dict[str, list[dict[str, Any]]] = {}
    frontier = [root["id"]]
    for distance in range(1, depth + 1):
        out_edges = index.edge_rows(frontier, direction="out")
        in_edges = index.edge_rows(frontier, direction="in")
        reached: list[tuple[str, Edge]] = []
        for node in sorted(frontier):
            edges = [(rel, other, "out", meta) for rel, other, meta in out_edges.get(node, [])]
            edges += [(rel, other, "in", meta) for rel, other, meta in in_edges.get(node, [])]
            if node in rows:
                edges += _pattern_edges(index, rows[node])
            unique = {edge[:3]: edge for edge in edges}
            reached += [(node, unique[key]) for key in sorted(unique)]
        found = {row["id"]: row for row in index.rows(sorted({edge[1] for _, edge in reached}))}
        rows.update(found)
        frontier = []
        for node, (relation, other, direction, meta) in reached:
            if other in visited or relation not in RELATIONS:
                continue
            group = groups.setdefault(relation, [])
            if len(group) >= PER_KIND:
                continue
            visited[other] = distance
            sure[other] = round(sure[node] * confidence.edge(relation, meta, other in found), 4)
            frontier.append(other)
            group.append(_entry(other, found.get(other), relation, direction, distance, rows.get(node), sure[other]))
        if not frontier:
            break
    return {relation: groups[relation] for relation in sorted(groups)}


def _entry(doc_id: str, row: dict[str, Any] | None, relation: str, direction: str, distance: int,
           through: dict[str, Any] | None, sure: float) -> dict[str, Any]:
    entry: dict[str, Any] = {"relation": relation, "direction": direction, "distance": distance,
                             "via": _public(through) if distance > 1 and through else None, "confidence": sure}
    if row is None:
        return {"id": doc_id.split(":", 1)[-1], "docId": doc_id, "kind": None, "exists": False, **entry}
    kind = discover_kind(row["kind"], row["metadata"])
    return {"id": public_id(row["id"], kind, row["metadata"]), "docId": row["id"], "kind": kind,
            "title": row["title"], "summary": summary_of(kind, row["metadata"], {}), **entry}


def _public(row: dict[str, Any]) -> str:
    return public_id(row["id"], discover_kind(row["kind"], row["metadata"]), row["metadata"])


def documents(index: RetrievalIndex, root: dict[str, Any], groups: dict[str, list[dict[str, Any]]]
              ) -> list[dict[str, Any]]:
    """Wiki, pattern and SL documents that cover the entity (an edge) or mention it (its name in their text)."""
    out: dict[str, dict[str, Any]] = {}
    for relation, entries in groups.items():
        for entry in entries:
            if entry.get("exists", True) and entry["kind"] in ("wiki", "pattern", "sl_source") and \
                    entry["distance"] == 1 and (relation in COVERING or entry["direction"] == "in"):
                out.setdefault(entry["docId"], {"kind": entry["kind"], "id": entry["id"], "docId": entry["docId"],
                                                "why": "covers", "summary": entry.get("summary")})
    name = _public(root)
    if root["kind"] != "wiki":
        hits = index.search(" ".join(split_words(name)), kinds=["wiki"], limit=20, refresh=False, snippets=False)
        texts = index.fields([h.id for h in hits])
        for hit in hits:
            text = " ".join(texts.get(hit.id, {}).values()).lower()
            if hit.id not in out and name.lower() in text:
                kind = discover_kind(hit.kind, hit.metadata)
                out[hit.id] = {"kind": kind, "id": public_id(hit.id, kind, hit.metadata), "docId": hit.id,
                               "why": "mentions", "summary": summary_of(kind, hit.metadata, {})}
    return sorted(out.values(), key=lambda d: (d["why"], d["docId"]))[:DOCUMENTS_MAX]


def usage(project_files: FileStore, root: dict[str, Any]) -> dict[str, Any] | None:
    """historic_sql's ``usage`` of a table (its ``_schema`` shard entry) or an SL source (its YAML)."""
    kind, meta = root["kind"], root["metadata"]
    if kind not in ("table", "column", "sl_source"):
        return None
    text = project_files.read_text(root["path"])
    if not text:
        return None
    try:
        data = safe_yaml().load(text) or {}
    except YAMLError:
        return None
    if kind == "sl_source":
        found = data.get("usage") if isinstance(data, dict) else None
    else:
        name = (meta.get("tableRef") or {}).get("name")
        entry = ((data.get("tables") or {}).get(name) or {}) if isinstance(data, dict) else {}
        found = entry.get("usage") if isinstance(entry, dict) else None
    if not isinstance(found, dict):
        return None
    return {key: found.get(key) for key in USAGE_KEYS}


def run(index: RetrievalIndex, files: FileStore, *, ident: str, depth: int, connection: str | None, user: str,
        budget_tokens: int | None) -> dict[str, Any]:
    index.refresh()
    root, resolved_by = resolve(index, ident, connection=connection, user=user)
    kind, meta = discover_kind(root["kind"], root["metadata"]), root["metadata"]
    fields = index.fields([root["id"]]).get(root["id"], {})
    groups = neighbours(index, root, depth)
    docs = documents(index, root, groups)
    doc_rows = {row["id"]: row for row in index.rows([d["docId"] for d in docs])}
    hashes = index.item_hashes(sorted({root["path"], *(row["path"] for row in doc_rows.values())}))
    sure, why = confidence.entity(index, root)
    entity = {"kind": kind, "id": public_id(root["id"], kind, meta), "docId": root["id"], "path": root["path"],
              "title": root["title"], "summary": summary_of(kind, meta, fields), "tags": list(meta.get("tags") or []),
              "aliases": list(meta.get("aliases") or []), "confidence": sure, "confidenceWhy": why,
              "resolvedBy": resolved_by,
              "provenance": {"path": root["path"], "source": root["source"], "connectionId": root["connection"]},
              "contentHash": hashes.get(root["path"]), **raw_fields(kind, meta)}
    terms = split_words(entity["id"])
    evidence = [{"docId": root["id"], "path": root["path"], "contentHash": hashes.get(root["path"]),
                 "excerpt": cap(fields.get("summary") or fields.get("body") or "")}]
    if docs:
        doc_fields = index.fields(list(doc_rows))
    for doc in docs:
        row = doc_rows.get(doc["docId"])
        if row is not None:
            text = doc_fields.get(row["id"], {})
            excerpt = snippet_around(text["body"], terms) if row["kind"] == "wiki" and text.get("body") else \
                cap(text.get("summary") or text.get("body") or "")
            evidence.append({"docId": row["id"], "path": row["path"], "contentHash": hashes.get(row["path"]),
                             "excerpt": excerpt or None})
    core = {"entity": entity, "usage": usage(files, root), "depth": depth}
    present = ["evidenceExcerpts", "summaries"] + (["neighbours"] if groups else []) + \
        (["related"] if docs or any(e["distance"] > 1 for g in groups.values() for e in g) else [])

    def build(kept: frozenset[str]) -> dict[str, Any]:
        def trim(item: dict[str, Any]) -> dict[str, Any]:
            return item if "summaries" in kept else {k: v for k, v in item.items() if k != "summary"}

        near = "neighbours" in kept
        far = "related" in kept
        shown = {rel: [trim(e) for e in entries if (e["distance"] == 1 and near) or (e["distance"] > 1 and far)]
                 for rel, entries in groups.items()}
        return {**core, "neighbours": {rel: entries for rel, entries in shown.items() if entries},
                "documents": [trim(d) for d in docs] if far else [],
                "evidence": [item if "evidenceExcerpts" in kept else {k: v for k, v in item.items() if k != "excerpt"}
                             for item in evidence]}

    return budget.fit(build, present, budget_tokens)
