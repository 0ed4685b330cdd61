"""The doctor's dimensions, each measured on the index and the project, each with its findings.

* reachability: the share of the packs' artifacts (files under their index roots) indexed without error;
* connectivity: the mean of the share of tables with a covering document (an SL source reading it, or a
  pattern page naming it) and the share of documents (wiki pages, SL sources) that point at schema;
* benchmark: hit@3 over ``bench/retrieval-suite.json`` (cases of query + expected ids, optionally kinds and a
  connection, for the suite or per case); without a suite it is ``not-analyzed``, and says so;
* scanned: the share of configured connections whose catalog is in the index;
* links: the share of declared references (wiki refs and relations, sl_refs, SL joins and tables, foreign
  keys) whose target exists;
* described: the share of tables a person can read about (a table comment or description, or a description
  on the SL source that reads it);
* history: the share of connections with ``historicSql.enabled`` whose query history has been ingested.

A dimension with nothing to measure (no connections, no references) is ``not-applicable``: its value is None.
Each finding carries its dimension (``category``), its code (``ref``), what it is about (``metadata``) and how
sure it is (``confidence``: measured 1.0, read from names in text less).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from khive.index.documents import owns_relative
from khive.index.scanstat import stat_walk_paths
from khive.project.store import PathOutsideProject, inside
from packs.discover.refs import discover_kind

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

SUITE = "bench/retrieval-suite.json"
CONNECTIVITY_GOAL = HIT_GOAL = 0.8
KINDS = frozenset({"wiki", "pattern", "sl_source", "sl_measure", "sl_dimension", "table", "column"})
LINK_RELATIONS = ("refs", "sl_refs", "supersedes", "contradicts", "supports", "related_to", "join", "sl_table", "fk")
LISTED = 20  # entity ids a finding's metadata lists
_QUALIFIED = re.compile(r"\b([A-Za-z_][\w$]*)\.([A-Za-z_][\w$]*)\b")
Search = Callable[..., dict[str, Any]]
Measured = tuple[dict[str, Any], list[dict[str, Any]]]


def finding(severity: str, code: str, title: str, detail: str, location: str | None = None, *,
            category: str, confidence: float = 1.0, **metadata: Any) -> dict[str, Any]:
    return {"severity": severity, "code": code, "title": title, "detail": detail, "location": location,
            "category": category, "ref": code, "metadata": {"dimension": category, **metadata},
            "confidence": confidence}


def reachability(index: RetrievalIndex) -> Measured:
    project: Path = index.project
    prefix = str(project) + os.sep
    sources = list(index.sources.values())
    roots = sorted({project / root for source in sources for root in source.roots})
    suffixes = tuple(sorted({s for source in sources for s in source.suffixes}))
    on_disk = sorted(path[len(prefix):].replace(os.sep, "/") for path in stat_walk_paths(roots, suffixes)
                     if path.startswith(prefix))
    artifacts = [p for p in on_disk if any(owns_relative(source, p) for source in sources)]
    indexed, errors = index.item_hashes(), index.item_errors()
    ok = [p for p in artifacts if p in indexed and p not in errors]
    findings = [finding("high", "index_error", "an artifact could not be indexed", errors[p], p,
                        category="reachability", path=p) for p in sorted(errors)]
    missing = [p for p in artifacts if p not in indexed]
    if missing:
        findings.append(finding("high", "not_indexed", f"{len(missing)} artifacts are not in the index",
                                "the index has not seen them yet; a search refreshes it", missing[0],
                                category="reachability", paths=missing[:LISTED]))
    value = round(len(ok) / len(artifacts), 4) if artifacts else None
    return {"value": value, "indexed": len(ok), "artifacts": len(artifacts)}, findings


def connectivity(index: RetrievalIndex) -> Measured:
    tables = sorted(row["id"] for row in index.documents(kind="table"))
    pages = index.documents(kind="wiki")
    sources = index.documents(kind="sl_source")
    table_ids = set(tables)
    by_name = {t.split(":", 2)[-1]: t for t in tables}
    covered: set[str] = set()
    source_tables = index.edge_map([s["id"] for s in sources], relations=["sl_table"])
    linked_sources = {s for s, edges in source_tables.items() if any(t in table_ids for _, t in edges)}
    for edges in source_tables.values():
        covered.update(t for _, t in edges if t in table_ids)
    texts = index.fields([p["id"] for p in pages])
    page_refs = index.edge_map([p["id"] for p in pages], relations=["sl_refs"])
    linked_pages = set()
    for page in pages:
        text = " ".join(texts.get(page["id"], {}).values())
        named = {by_name[f"{a}.{b}"] for a, b in _QUALIFIED.findall(text) if f"{a}.{b}" in by_name}
        if discover_kind("wiki", page["metadata"]) == "pattern":
            covered.update(named)
        if named or any(target in linked_sources for _, target in page_refs.get(page["id"], [])):
            linked_pages.add(page["id"])
    documents = len(pages) + len(sources)
    shares = []
    if tables:
        shares.append(len(covered) / len(tables))
    if documents:
        shares.append((len(linked_pages) + len(linked_sources)) / documents)
    value = round(sum(shares) / len(shares), 4) if shares else None
    findings = []
    uncovered = [t for t in tables if t not in covered]
    if uncovered:  # a page may speak of a table without writing schema.table: not quite certain
        findings.append(finding("medium" if len(uncovered) > len(tables) * (1 - CONNECTIVITY_GOAL) else "low",
                                "table_uncovered",
                                f"{len(uncovered)} of {len(tables)} tables have no covering document",
                                "write an SL source for them (sl.bootstrap) or a wiki page naming them",
                                uncovered[0].split(":", 2)[-1], category="connectivity", confidence=0.9,
                                tables=[t.split(":", 2)[-1] for t in uncovered[:LISTED]]))
    unlinked = [d["id"] for d in [*pages, *sources] if d["id"] not in linked_pages and d["id"] not in linked_sources]
    if unlinked:
        findings.append(finding("low", "document_unlinked", f"{len(unlinked)} of {documents} documents point at no "
                                "schema", "name the tables (schema.table) or add sl_refs to a source that reads one",
                                category="connectivity", confidence=0.8, documents=unlinked[:LISTED]))
    return {"value": value, "tablesCovered": len(covered), "tables": len(tables),
            "documentsLinked": len(linked_pages) + len(linked_sources), "documents": documents}, findings


def _suite_cases(data: Any, connections: Mapping[str, Any]) -> list[tuple[str, list[str], Any, Any]]:
    """(query, expected, kinds, connection) per case; ValueError naming the case and the fix."""
    default = data.get("connection")
    checked = []
    for number, case in enumerate(data["cases"], start=1):
        connection = case.get("connection", default)
        if connection is not None and connection not in connections:
            raise ValueError(f"case {number} names connection {connection!r}, which khive.yaml does not declare "
                             f"(declared: {', '.join(sorted(connections)) or 'none'})")
        kinds = case.get("kinds")
        if kinds is not None and (not isinstance(kinds, list) or not set(kinds) <= KINDS):
            raise ValueError(f"case {number}: kinds must be a list of {', '.join(sorted(KINDS))}")
        checked.append((str(case["query"]), [str(e) for e in case["expected"]], kinds, connection))
    return checked


def benchmark(project: Path, search: Search, connections: Mapping[str, Any]) -> Measured:
    try:
        path = inside(project, SUITE)  # a symlink out of the project is refused (ADR 0032)
    except PathOutsideProject as exc:
        return ({"status": "invalid", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("high", "benchmark_invalid", "the retrieval suite cannot be read", exc.message, SUITE,
                         category="benchmark")])
    if not path.is_file():
        return ({"status": "not-analyzed", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("medium", "benchmark_not_analyzed", "retrieval is not benchmarked",
                         f"add {SUITE}: {{\"cases\": [{{\"query\": \"...\", \"expected\": [\"schema.table\"]}}]}}",
                         SUITE, category="benchmark")])
    try:
        checked = _suite_cases(orjson.loads(path.read_bytes()), connections)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) and not isinstance(exc, orjson.JSONDecodeError) else repr(exc)
        return ({"status": "invalid", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("high", "benchmark_invalid", "the retrieval suite cannot be read",
                         f"{reason}; expected {{\"connection\"?: ..., \"cases\": [{{\"query\": ..., \"expected\": "
                         "[ids], \"kinds\"?: [...], \"connection\"?: ...}]}", SUITE, category="benchmark")])
    hits, findings = 0, []
    for number, (query, expected, kinds, connection) in enumerate(checked, start=1):
        refs = search(query=query, kinds=kinds, connection=connection)["refs"][:3]
        top = {ref["id"] for ref in refs} | {ref["docId"] for ref in refs}
        if top & set(expected):
            hits += 1
        else:
            findings.append(finding("low", "benchmark_miss", f"case {number} misses at 3: {query!r}",
                                    f"expected one of {', '.join(expected)}; top 3: "
                                    f"{', '.join(ref['id'] for ref in refs) or 'nothing'}", f"{SUITE}#{number}",
                                    category="benchmark", query=query, expected=expected, connection=connection,
                                    top=[ref["id"] for ref in refs]))
    value = round(hits / len(checked), 4) if checked else None
    if value is not None and value < HIT_GOAL:
        findings.append(finding("medium", "benchmark_low", f"hit@3 is {value:.0%} (goal {HIT_GOAL:.0%})",
                                "add documents or descriptions for the missed cases", SUITE, category="benchmark",
                                value=value))
    return {"status": "measured", "suite": SUITE, "hitAt3": value, "cases": len(checked)}, findings


def scanned(index: RetrievalIndex, connections: Mapping[str, Any]) -> Measured:
    held = {str(row[1]) for row in index.outline(["table"], []) if row[1]}
    missing = sorted(name for name in connections if name not in held)
    value = round((len(connections) - len(missing)) / len(connections), 4) if connections else None
    findings = [finding("medium", "not_scanned", f"connection {name} has no scan in the index",
                        f"run khive scan {name} (or scan.run(connection=\"{name}\"))", "khive.yaml",
                        category="scanned", connection=name) for name in missing]
    return {"value": value, "connections": len(connections), "scanned": len(connections) - len(missing)}, findings


def links(index: RetrievalIndex) -> Measured:
    pairs = [(relation, source, target) for relation in LINK_RELATIONS
             for source, target, _ in index.relation_pairs(relation)]
    targets = sorted({target for _, _, target in pairs})
    known = set().union(*(index.existing(targets[i:i + 500]) for i in range(0, len(targets), 500))) \
        if targets else set()
    broken = sorted((source, relation, target) for relation, source, target in pairs if target not in known)
    value = round(1 - len(broken) / len(pairs), 4) if pairs else None
    findings = []
    if broken:
        source, relation, target = broken[0]
        findings.append(finding("medium" if value is not None and value < 0.9 else "low", "link_broken",
                                f"{len(broken)} of {len(pairs)} references point at nothing",
                                f"e.g. {source} {relation} {target}: create it, or fix the name",
                                category="links", broken=[f"{s} {r} {t}" for s, r, t in broken[:LISTED]]))
    return {"value": value, "references": len(pairs), "broken": len(broken)}, findings


def described(index: RetrievalIndex) -> Measured:
    tables = index.documents(kind="table")
    sources = index.documents(kind="sl_source")
    reads = index.edge_map([s["id"] for s in sources], relations=["sl_table"])
    # bootstrap's guesses explain its measures, not the table: they do not count as a description
    explained = {target for s in sources
                 if s["metadata"].get("description") and s["metadata"].get("describedBy") != "bootstrap"
                 for _, target in reads.get(s["id"], [])}
    bare = sorted(t["id"] for t in tables if not (t["metadata"].get("description") or t["metadata"].get("comment"))
                  and t["id"] not in explained)
    value = round(1 - len(bare) / len(tables), 4) if tables else None
    findings = []
    if bare:
        findings.append(finding("low", "table_undescribed", f"{len(bare)} of {len(tables)} tables have no "
                                "description", "add description: to the table's _schema entry or its SL source "
                                "(or a COMMENT ON TABLE in the database, then rescan)",
                                bare[0].split(":", 2)[-1], category="described",
                                tables=[t.split(":", 2)[-1] for t in bare[:LISTED]]))
    return {"value": value, "tables": len(tables), "described": len(tables) - len(bare)}, findings


def history(index: RetrievalIndex, connections: Mapping[str, Any]) -> Measured:
    enabled = sorted(name for name, config in connections.items()
                     if ((getattr(config, "historicSql", None) or {}).get("enabled")) is True)
    used = {str(row[1]) for row in index.outline(["table", "sl_source"], ["frequencyTier"]) if row[1] and row[3]}
    missing = [name for name in enabled if name not in used]
    value = round((len(enabled) - len(missing)) / len(enabled), 4) if enabled else None
    findings = [finding("low", "history_not_ingested", f"connection {name} has historicSql enabled and no usage "
                        "in the index", f"run khive ingest {name}", "khive.yaml", category="history",
                        connection=name) for name in missing]
    return {"value": value, "enabled": len(enabled), "ingested": len(enabled) - len(missing)}, findings
