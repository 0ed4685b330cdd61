"""Implied edges (ADR 0050): a table's ``contains`` edges kept on its columns' rows answer as edge rows did.

Every test builds the same files twice, once with the rule marked ``implied`` and once without (every edge a
row, as before), and compares what the engine's public reads answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, Edge, FileSource
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex
from khive.index.store import SCHEMA_VERSION


def catalog_docs(path: str, text: str) -> Sequence[Document]:
    """One document per line: ``table t1 contains:c1,c2 fk:t2`` or ``column c1`` (``contains+`` adds metadata).
    Every document's metadata starts alike (a child row keeps that start in its parent's row)."""
    docs = []
    for n, line in enumerate(text.splitlines()):
        kind, doc_id, *links = line.split()
        edges: list[Edge] = []
        for link in links:
            relation, _, targets = link.partition(":")
            meta = {"note": "kept"} if relation.endswith("+") else {}
            edges.extend(Edge(relation.rstrip("+"), target, meta) for target in targets.split(","))
        metadata = {"connectionId": "warehouse", "file": path, "aliases": [f"{doc_id}-alias"] if n % 3 else [],
                    kind: n, "comment": None, "note": "a, b" if n % 2 else None}
        docs.append(Document(id=doc_id, kind=kind, title=doc_id, fields={"name": doc_id}, edges=edges,
                             metadata=metadata, connection="warehouse" if n % 4 else None))
    return docs


def rules(implied: bool) -> tuple[EdgeRule, ...]:
    return (EdgeRule("contains", frozenset({"table"}), frozenset({"column"}), implied=implied),
            EdgeRule("fk", frozenset({"table"}), frozenset({"table"})))


FILES = {
    # columns after their table; a column listed before its table; an edge with metadata; the same edge twice
    "a.txt": ["table ta contains:ca1,ca2,ca3 fk:tb", "column ca1", "column ca2", "column ca3",
              "column cz", "table tz contains:cz,cz2", "column cz2",
              "table tm contains+:cm1 contains:cm2", "column cm1", "column cm2",
              "table td contains:cd1,cd1", "column cd1"],
    # a target in another file (never comes in this one), two tables claiming one column, a self-edge
    "b.txt": ["table tb contains:cb1,ca1 fk:ta", "column cb1", "table tc contains:cb1,tc", "column tc2"],
}


def write(project: Path, files: dict[str, list[str]]) -> None:
    (project / "cat").mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (project / "cat" / name).write_text("\n".join(lines))


def open_index(project: Path, implied: bool) -> RetrievalIndex:
    return RetrievalIndex(project, [FileSource("cat", ("cat",), (".txt",), catalog_docs)],
                          embedder=HashingEmbedder(32), edge_rules=rules(implied), watch=False)


def answers(index: RetrievalIndex) -> dict[str, Any]:
    ids = [*sorted(str(row["id"]) for row in index.documents()), "cx-missing"]
    return {
        "out": {i: index.edges(i, refresh=False) for i in ids},
        "in": {i: index.edges(i, direction="in", refresh=False) for i in ids},
        "in_contains": {i: index.edges(i, direction="in", relation="contains", refresh=False) for i in ids},
        "incoming": index.incoming(ids, "contains"),
        "edge_map": index.edge_map(ids), "edge_map_in": index.edge_map(ids, direction="in"),
        "edge_map_contains": index.edge_map(ids, relations=["contains"]),
        "edge_rows": index.edge_rows(ids), "edge_rows_in": index.edge_rows(ids, direction="in"),
        "degrees": index.degrees(ids, relations=["contains", "fk"]),
        "pairs": sorted(index.relation_pairs("contains")), "fk_pairs": index.relation_pairs("fk"),
        "rows": [{k: v for k, v in row.items() if k != "rowid"} for row in index.rows(ids)],
        "rows_at": [{k: v for k, v in row.items() if k != "rowid"} for name in ("a", "b", "c")
                    for row in index.rows_at(f"cat/{name}.txt")],
        "outline": sorted(index.outline(["table", "column"], ["connectionId", "file", "column", "note", "comment"])),
        "aliased": [row["id"] for row in index.rows_with_alias("CA2-ALIAS")],
        "where": [hit.id for hit in index.search("ca1 ca2 cb1 cz", where={"file": "cat/a.txt", "note": "a, b"},
                                                 limit=20, refresh=False)],
        "hits": [(hit.id, hit.metadata, hit.path) for hit in index.search("ca1 cm2 cz2", limit=20, refresh=False)],
    }


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    rows, implied = tmp_path / "rows", tmp_path / "implied"
    for project in (rows, implied):
        write(project, FILES)
    yield rows, implied


def compare(pair: tuple[Path, Path]) -> dict[str, Any]:
    found = []
    for project, implied in zip(pair, (False, True), strict=True):
        index = open_index(project, implied)
        try:
            index.refresh()
            found.append(answers(index))
        finally:
            index.close()
    assert found[0] == found[1]
    return found[1]


def lean_rows(project: Path) -> int:
    """How many rows keep the start of their metadata text in their parent's row."""
    db = sqlite3.connect(project / ".khive" / "index.sqlite")
    try:
        return int(db.execute("SELECT count(*) FROM docs WHERE lead IS NOT NULL").fetchone()[0])
    finally:
        db.close()


def edge_row_count(project: Path, relation: str) -> int:
    db = sqlite3.connect(project / ".khive" / "index.sqlite")
    try:
        return int(db.execute("SELECT count(*) FROM edges WHERE relation = ?", (relation,)).fetchone()[0])
    finally:
        db.close()


def test_implied_edges_answer_every_read_as_edge_rows(pair: tuple[Path, Path]) -> None:
    found = compare(pair)
    assert found["incoming"]["cb1"] == ["tb", "tc"]  # claimed by the first table, a row for the second
    assert found["edge_rows"]["tm"] == [("contains", "cm1", {"note": "kept"}), ("contains", "cm2", {})]
    assert found["edge_map"]["ta"] == [("contains", "ca1"), ("contains", "ca2"), ("contains", "ca3"), ("fk", "tb")]
    assert found["degrees"]["ca1"] == 2  # ta's (implied) and tb's (a row: ca1 is in the other file)
    # only the edges that could not be implied are rows: before the table, with metadata, twice, another file's
    # target, a second claim, a self-edge
    assert edge_row_count(pair[0], "contains") == 12
    assert edge_row_count(pair[1], "contains") == 6  # of ta's 3, tz's 1 and tb's 1: none
    assert lean_rows(pair[0]) == 0 and lean_rows(pair[1]) == 6  # every child (one per implied edge)
    assert found["aliased"] == ["ca2"] and found["where"] and found["rows_at"]


def test_edits_and_a_document_moved_to_another_file_keep_the_answers(pair: tuple[Path, Path]) -> None:
    compare(pair)
    edits = [
        {"a.txt": [*FILES["a.txt"][:4], "table tn contains:cn1", "column cn1"]},  # an edit of one file
        {"b.txt": FILES["b.txt"] + ["column ca2"]},  # a column taken over by another file (the newest wins)
        {"c.txt": ["table ta contains:cq"]},  # its table taken over too: its implied edges end with it
    ]
    for files in edits:
        for project in pair:
            write(project, files)
        compare(pair)
    for project in pair:
        (project / "cat" / "a.txt").unlink()
    found = compare(pair)
    assert found["out"]["ta"] == [{"id": "cq", "relation": "contains"}]


def test_an_index_of_the_previous_layout_is_rebuilt(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    database = tmp_path / ".khive" / "index.sqlite"
    database.parent.mkdir()
    old = sqlite3.connect(database)
    old.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '2');
        CREATE TABLE docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
            connection TEXT, title TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, metadata TEXT NOT NULL);
        INSERT INTO docs VALUES (1, 'stale', 'table', NULL, 'stale', 'cat', 'cat/a.txt', '{}');
        CREATE TABLE edges (source_id TEXT NOT NULL, relation TEXT NOT NULL, target_id TEXT NOT NULL,
            metadata TEXT NOT NULL, PRIMARY KEY (source_id, relation, target_id));
        INSERT INTO edges VALUES ('stale', 'contains', 'ca1', '{}');
    """)
    old.close()
    index = open_index(tmp_path, True)
    try:
        assert index.refresh().reindexed == 2
        assert index.get("stale", refresh=False) is None
        assert index.edges("ca1", direction="in", refresh=False) == [
            {"id": "ta", "relation": "contains"}, {"id": "tb", "relation": "contains"}]
        assert index.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == SCHEMA_VERSION
    finally:
        index.close()
