"""``discover.doctor``: what retrieval can see, measured, with findings ordered most severe first.

* reachability: the share of the packs' artifacts (files under their index roots) indexed without error;
* connectivity: the mean of the share of tables with a covering document (an SL source reading it, or a
  pattern page naming it) and the share of documents (wiki pages, SL sources) that point at schema;
* benchmark: hit@3 over ``bench/retrieval-suite.json`` in the project (cases of query + expected ids);
  without a suite it is ``not-analyzed``, and says so.

Grade A needs reachability 100%, connectivity >= 80% and a measured hit@3 >= 80%; B keeps reachability
>= 90%; C >= 50%; else D.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from khive.index.documents import owns_relative
from khive.index.scanstat import stat_walk_paths
from khive.project.store import PathOutsideProject, inside
from packs.discover.refs import discover_kind

SUITE = "bench/retrieval-suite.json"
SEVERITY = ("high", "medium", "low", "info")
CONNECTIVITY_GOAL = HIT_GOAL = 0.8
_QUALIFIED = re.compile(r"\b([A-Za-z_][\w$]*)\.([A-Za-z_][\w$]*)\b")
Search = Callable[..., dict[str, Any]]


def finding(severity: str, code: str, title: str, detail: str, location: str | None = None) -> dict[str, Any]:
    return {"severity": severity, "code": code, "title": title, "detail": detail, "location": location}


def reachability(index: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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
    findings = [finding("high", "index_error", "an artifact could not be indexed", errors[p], p)
                for p in sorted(errors)]
    missing = [p for p in artifacts if p not in indexed]
    if missing:
        findings.append(finding("high", "not_indexed", f"{len(missing)} artifacts are not in the index",
                                "the index has not seen them yet; a search refreshes it", missing[0]))
    value = round(len(ok) / len(artifacts), 4) if artifacts else None
    return {"value": value, "indexed": len(ok), "artifacts": len(artifacts)}, findings


def connectivity(index: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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
    if uncovered:
        findings.append(finding("medium" if len(uncovered) > len(tables) * (1 - CONNECTIVITY_GOAL) else "low",
                                "table_uncovered",
                                f"{len(uncovered)} of {len(tables)} tables have no covering document",
                                "write an SL source for them (sl.bootstrap) or a wiki page naming them",
                                uncovered[0].split(":", 2)[-1]))
    unlinked = documents - len(linked_pages) - len(linked_sources)
    if unlinked:
        findings.append(finding("low", "document_unlinked", f"{unlinked} of {documents} documents point at no schema",
                                "name the tables (schema.table) or add sl_refs to a source that reads one"))
    return {"value": value, "tablesCovered": len(covered), "tables": len(tables),
            "documentsLinked": len(linked_pages) + len(linked_sources), "documents": documents}, findings


def benchmark(project: Path, search: Search) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        path = inside(project, SUITE)
    except PathOutsideProject as exc:
        return ({"status": "invalid", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("high", "benchmark_invalid", "the retrieval suite cannot be read", exc.message, SUITE)])
    if not path.is_file():
        return ({"status": "not-analyzed", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("medium", "benchmark_not_analyzed", "retrieval is not benchmarked",
                         f"add {SUITE}: {{\"cases\": [{{\"query\": \"...\", \"expected\": [\"schema.table\"]}}]}}",
                         SUITE)])
    try:
        cases = orjson.loads(path.read_bytes())["cases"]
        checked = [(str(c["query"]), [str(e) for e in c["expected"]], c.get("kinds"), c.get("connection"))
                   for c in cases]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        return ({"status": "invalid", "suite": SUITE, "hitAt3": None, "cases": 0},
                [finding("high", "benchmark_invalid", "the retrieval suite cannot be read",
                         f"{exc!r}; expected {{\"cases\": [{{\"query\": ..., \"expected\": [ids]}}]}}", SUITE)])
    hits, findings = 0, []
    for number, (query, expected, kinds, connection) in enumerate(checked, start=1):
        refs = search(query=query, kinds=kinds, connection=connection)["refs"][:3]
        top = {ref["id"] for ref in refs} | {ref["docId"] for ref in refs}
        if top & set(expected):
            hits += 1
        else:
            findings.append(finding("low", "benchmark_miss", f"case {number} misses at 3: {query!r}",
                                    f"expected one of {', '.join(expected)}; top 3: "
                                    f"{', '.join(ref['id'] for ref in refs) or 'nothing'}", f"{SUITE}#{number}"))
    value = round(hits / len(checked), 4) if checked else None
    if value is not None and value < HIT_GOAL:
        findings.append(finding("medium", "benchmark_low", f"hit@3 is {value:.0%} (goal {HIT_GOAL:.0%})",
                                "add documents or descriptions for the missed cases", SUITE))
    return {"status": "measured", "suite": SUITE, "hitAt3": value, "cases": len(checked)}, findings


def grade(reach: float | None, conn: float | None, hit3: float | None) -> str:
    reach_value = 1.0 if reach is None else reach
    if reach_value >= 1.0 and (conn or 0) >= CONNECTIVITY_GOAL and hit3 is not None and hit3 >= HIT_GOAL:
        return "A"
    return "B" if reach_value >= 0.9 else "C" if reach_value >= 0.5 else "D"


def run(index: Any, search: Search) -> dict[str, Any]:
    index.refresh()
    reach, reach_findings = reachability(index)
    conn, conn_findings = connectivity(index)
    bench, bench_findings = benchmark(index.project, search)
    letter = grade(reach["value"], conn["value"], bench["hitAt3"])
    findings = reach_findings + conn_findings + bench_findings
    findings.append(finding("info", "grade", f"grade {letter}",
                            f"reachability {reach['value']}, connectivity {conn['value']}, hit@3 {bench['hitAt3']}"
                            " (A needs 100%, >= 80%, >= 80% measured)"))
    findings.sort(key=lambda f: (SEVERITY.index(f["severity"]), f["code"], f["location"] or ""))
    return {"grade": letter, "reachability": reach, "connectivity": conn, "benchmark": bench,
            "findings": findings, "ok": not any(f["severity"] == "high" for f in findings)}
