"""The index after edits answers what an index built from nothing out of the same files answers (ADR 0050's
implied edges and lean child rows under edits, renames, takeovers and odd content).

The source makes the scan's shape: a table ``Document`` followed by its columns as one ``DocumentBatch`` whose
``contains`` edges come from the table (implied), column metadata starting as the table's.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, DocumentBatch, Edge, FileSource, Item
from khive.index.embed import HashingEmbedder
from khive.index.engine import RefreshReport, RetrievalIndex

RULES = (EdgeRule("contains", frozenset({"table"}), frozenset({"column"}), implied=True),
         EdgeRule("fk", frozenset({"table"}), frozenset({"table"})))


def catalog(path: str, text: str) -> Sequence[Item]:
    """One JSON object a line: ``{"table": "s.t", "comment": ..., "columns": [name, ...], "fk": [...],
    "samples": ..., "meta": {...}}`` (``meta`` replaces a column's metadata: odd texts), or ``{"column": id}``."""
    items: list[Item] = []
    for line in text.splitlines():
        spec = orjson.loads(line)
        if "column" in spec:
            items.append(Document(id=spec["column"], kind="column", title=spec["column"],
                                  fields={"name": spec["column"]}, connection="wh",
                                  metadata={"connectionId": "wh", "loose": True}))
            continue
        table = str(spec["table"])
        ref = {"connectionId": "wh", "tableRef": {"schema": table.split(".")[0], "table": table}}
        items.append(Document(id=f"table:wh:{table}", kind="table", title=table, connection="wh",
                              fields={"name": table, "summary": spec.get("comment") or ""},
                              metadata={**ref, "comment": spec.get("comment"), "file": path},
                              edges=[Edge("fk", f"table:wh:{t}") for t in spec.get("fk", [])]))
        columns = [str(c) for c in spec.get("columns", [])]
        if columns:
            metadata = [spec.get("meta") or {**ref, "column": c, "samples": spec.get("samples", ["a", "b"]),
                                             "aliases": [f"{c}-alias"]} for c in columns]
            items.append(DocumentBatch(kind="column", connection="wh", ids=[f"column:wh:{table}.{c}" for c in columns],
                                       titles=[f"{table}.{c}" for c in columns],
                                       fields={"name": columns, "summary": [spec.get("comment") or ""] * len(columns)},
                                       metadata=metadata, from_previous="contains"))
    return items


def write(project: Path, name: str, specs: list[dict[str, Any]]) -> None:
    folder = project / "cat"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(orjson.dumps(spec).decode() for spec in specs))


def open_index(project: Path, *, watch: bool = False) -> RetrievalIndex:
    return RetrievalIndex(project, [FileSource("cat", ("cat",), (".jsonl",), catalog)],
                          embedder=HashingEmbedder(64), edge_rules=RULES, watch=watch)


def plain(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "rowid"} for row in rows]


def answers(index: RetrievalIndex) -> dict[str, Any]:
    """Every public read, rowids left out (a rebuild numbers rows afresh)."""
    ids = [*sorted(str(row["id"]) for row in index.documents()), "column:wh:gone.x"]
    paths = sorted({str(row["path"]) for row in index.documents()})
    columns = [i for i in ids if i.startswith("column:")]
    return {
        "get": {i: plain([index.get(i, refresh=False) or {}]) for i in ids},
        "rows": plain(index.rows(ids)), "documents": sorted(map(str, plain(index.documents()))),
        "rows_at": {p: plain(index.rows_at(p)) for p in paths},
        "rows_matching": plain(index.rows_matching(["column:*"])),
        "aliases": {c: [r["id"] for r in index.rows_with_alias(c.rsplit(".", 1)[-1] + "-alias")] for c in columns},
        "outline": sorted(index.outline(["table", "column"], ["connectionId", "column", "comment", "samples"])),
        "fields": index.fields(ids),
        "out": {i: index.edges(i, refresh=False) for i in ids},
        "in": {i: index.edges(i, direction="in", refresh=False) for i in ids},
        "incoming": index.incoming(ids, "contains"),
        "edge_map": index.edge_map(ids), "edge_map_in": index.edge_map(ids, direction="in"),
        "edge_rows": index.edge_rows(ids), "edge_rows_in": index.edge_rows(ids, direction="in"),
        "degrees": index.degrees(ids, relations=["contains", "fk"]),
        "pairs": sorted(index.relation_pairs("contains")), "fk": sorted(index.relation_pairs("fk")),
        "search": sorted((h.id, orjson.dumps(h.metadata).decode(), h.path)
                         for h in index.search("orders id name customer", limit=50, refresh=False)),
        "where": sorted(h.id for h in index.search("orders id name", where={"connectionId": "wh"}, limit=50,
                                                   refresh=False)),
        "count": index.count(),
    }


def fresh_answers(project: Path, tmp: Path) -> dict[str, Any]:
    """What an index built from nothing out of ``project``'s files answers."""
    copy = tmp / "fresh"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(project / "cat", copy / "cat")
    index = open_index(copy)
    try:
        index.refresh()
        return answers(index)
    finally:
        index.close()


def orders(columns: Sequence[str] = ("id", "customer", "name"), **extra: Any) -> dict[str, Any]:
    return {"table": "public.orders", "comment": "orders placed", "columns": list(columns), **extra}


CUSTOMERS = {"table": "public.customers", "comment": "who orders", "columns": ["id", "name"], "fk": ["public.orders"]}

# Each step: files written (a list of specs), removed (None) or touched ("touch"), in order; the index is refreshed
# after each.
STEPS: list[dict[str, list[dict[str, Any]] | str | None]] = [
    {"a.jsonl": [orders(), CUSTOMERS]},
    {"a.jsonl": [orders(("id", "customer", "name", "total")), CUSTOMERS]},  # a column added
    {"a.jsonl": [orders(("id", "name", "total")), CUSTOMERS]},  # removed
    {"a.jsonl": [orders(("id", "client", "total")), CUSTOMERS]},  # renamed
    {"a.jsonl": [orders(("id", "client", "total"), comment="orders, placed"), CUSTOMERS]},  # a comment changed
    {"a.jsonl": [orders(("id", "client", "total"))]},  # a table removed
    {"b.jsonl": [{"column": "column:wh:public.orders.client"}]},  # a column's id taken over by another file
    {"c.jsonl": [{"table": "public.orders", "comment": "taken over"}]},  # the table's id too, its columns stay
    {"c.jsonl": None},  # the file that took them over deleted: a.jsonl's table comes back
    {"a.jsonl": None, "d.jsonl": [orders(("id", "client")), CUSTOMERS]},  # a file renamed (and edited)
    {"d.jsonl": [{"column": "column:wh:public.orders.id"}, orders(("id", "total"))]},  # a column before its table
    {"e.jsonl": [orders(("id", "total", "x"))]},  # a newer file takes the table and its columns
    {"d.jsonl": [orders(("id", "total"), comment="edited")]},  # the older one edited after: now the newest
    {"d.jsonl": [{"column": "column:wh:public.orders.total"}]},  # gives up the table: e.jsonl's back
    {"d.jsonl": [orders(("id",), comment="again")]},  # takes it again
    {"e.jsonl": "touch"},  # the other touched, not changed: now the newest, its table wins
    {"e.jsonl": None},
    {"d.jsonl": [{"table": "we.ird \"s\".tä.b'le", "columns": ["c.ol", "ç\"x", "y" * 300]},
                 orders(("id",), samples="not a list", comment="é" * 40)]},  # odd names, samples not a list
    {"d.jsonl": [orders(("id", "name"), meta={"connectionId": "wh", "tableRef": {"schema": "public", "x": 1}})]},
    {"d.jsonl": [orders(("id", "name"), meta={"connectionId": "wh", "tableRef": {"schema": "publicum"}})]},
]


@pytest.mark.parametrize("watch", [False, True], ids=["stat-walk", "watcher"])
def test_an_edited_index_answers_as_one_built_from_nothing(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "project"
    index = open_index(project, watch=watch)
    try:
        for n, step in enumerate(STEPS):
            for name, specs in step.items():
                if specs is None:
                    (project / "cat" / name).unlink()
                elif specs == "touch":
                    os.utime(project / "cat" / name)
                elif isinstance(specs, list):
                    write(project, name, specs)
            index.refresh()
            assert answers(index) == fresh_answers(project, tmp_path), f"after step {n}: {step}"
    finally:
        index.close()


def test_a_document_taken_over_comes_back_when_the_newer_file_goes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    index = open_index(project)
    try:
        steps: list[dict[str, list[dict[str, Any]]]] = [
            {"a.jsonl": [orders(), CUSTOMERS]}, {"c.jsonl": [{"table": "public.orders", "comment": "taken over"}]}]
        for step in steps:
            for name, specs in step.items():
                write(project, name, specs)
            index.refresh()
        (project / "cat" / "c.jsonl").unlink()
        index.refresh()
        assert answers(index) == fresh_answers(project, tmp_path)
    finally:
        index.close()


def test_an_index_left_half_upgraded_is_rebuilt(tmp_path: Path) -> None:
    """A process killed while dropping an index of the previous layout (schema 2) could leave its ``docs`` table
    without the ``meta`` that names its version; the next open must not take it for the current layout."""
    project = tmp_path / "project"
    write(project, "a.jsonl", [orders(), CUSTOMERS])
    database = project / ".khive" / "index.sqlite"
    database.parent.mkdir()
    old = sqlite3.connect(database)
    old.executescript("""
        CREATE TABLE docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
            connection TEXT, title TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, metadata TEXT NOT NULL);
        INSERT INTO docs VALUES (1, 'stale', 'table', NULL, 'stale', 'cat', 'cat/a.jsonl', '{}');
    """)
    old.close()
    index = open_index(project)
    try:
        index.refresh()
        assert index.get("stale", refresh=False) is None
        assert answers(index) == fresh_answers(project, tmp_path)
    finally:
        index.close()


def test_a_process_that_waited_for_anothers_build_does_not_build_again(tmp_path: Path) -> None:
    """Two processes refreshing one index at once (two daemons, a daemon and the CLI): the second waits for the
    first's write transaction, then finds the files indexed."""
    project = tmp_path / "project"
    for n in range(4):
        write(project, f"f{n}.jsonl", [{"table": f"s{n}.t", "columns": ["id", "name"]}])
    parsing, release = threading.Event(), threading.Event()

    def slow(path: str, text: str) -> Sequence[Item]:
        parsing.set()
        release.wait(30)
        return catalog(path, text)

    first = RetrievalIndex(project, [FileSource("cat", ("cat",), (".jsonl",), slow)], embedder=HashingEmbedder(64),
                           edge_rules=RULES, watch=False)
    second = open_index(project)
    reports: dict[str, RefreshReport] = {}
    try:
        builder = threading.Thread(target=lambda: reports.setdefault("first", first.refresh()))
        builder.start()
        assert parsing.wait(30)  # the first holds the write lock, building
        waiter = threading.Thread(target=lambda: reports.setdefault("second", second.refresh()))
        waiter.start()
        waiter.join(0.5)  # the second walks the files, then waits for the lock
        release.set()
        builder.join(60)
        waiter.join(60)
        assert reports["first"].reindexed == 4
        assert reports["second"].reindexed == 0 and reports["second"].removed == 0
        assert answers(second) == fresh_answers(project, tmp_path)
    finally:
        release.set()
        first.close()
        second.close()
