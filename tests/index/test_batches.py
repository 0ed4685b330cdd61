"""Document batches (ADR 0050): many documents alike handed over as columns are indexed as the documents they
stand for, whether the file is new, edited, or shares an id with another file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, DocumentBatch, Edge, FileSource, Item
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex

RULES = (EdgeRule("contains", frozenset({"table"}), frozenset({"column"}), implied=True),)
AS_ROWS = (EdgeRule("contains", frozenset({"table"}), frozenset({"column"})),)  # every edge a row, as before


def parsed(text: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """``table: column type note; column type note`` per line."""
    out = []
    for line in text.splitlines():
        table, _, rest = line.partition(":")
        columns = [part.split(maxsplit=2) for part in rest.split(";") if part.strip()]
        out.append((table.strip(), [(name, type_, note) for name, type_, note in columns]))
    return out


def column_fields(table: str, name: str, type_: str, note: str) -> dict[str, str]:
    return {"name": name, "title": f"{table}.{name}", "summary": note, "tags": type_, "body": "", "extra": table}


def as_documents(path: str, text: str) -> Sequence[Item]:
    docs: list[Item] = []
    for table, columns in parsed(text):
        ids = [f"col:{table}.{name}" for name, _, _ in columns]
        docs.append(Document(id=f"table:{table}", kind="table", title=table, fields={"name": table},
                             edges=[Edge("contains", i) for i in ids],
                             metadata={"connectionId": "wh", "table": table, "columns": len(ids)}))
        docs.extend(Document(id=i, kind="column", title=f"{table}.{name}", connection="wh",
                             fields=column_fields(table, name, type_, note),
                             # the third column's metadata does not start as its table's: it keeps all of it
                             metadata={"connectionId": "wh" if n != 2 else "wh2", "table": table, "type": type_,
                                       "n": n},
                             embed_text=f"{name} {note}" if n % 2 else None)
                    for n, (i, (name, type_, note)) in enumerate(zip(ids, columns, strict=True)))
    return docs


def as_batches(path: str, text: str, relation: str = "contains") -> Sequence[Item]:
    """The same documents, each table's columns one batch, the table's edges to them declared by the batch."""
    items: list[Item] = []
    for item in as_documents(path, text):
        if isinstance(item, Document) and item.kind == "table":
            item = replace(item, edges=[])
        if isinstance(item, Document) and item.kind == "column":
            last = items[-1]
            if isinstance(last, DocumentBatch):
                items[-1] = DocumentBatch(
                    kind="column", connection="wh", ids=[*last.ids, item.id], titles=[*last.titles, item.title],
                    fields={k: [*v, item.fields[k]] for k, v in last.fields.items()},
                    metadata=[*last.metadata, item.metadata],
                    embed_texts=[*(last.embed_texts or []), item.embed_text or ""], from_previous=relation)
                continue
            items.append(DocumentBatch(kind="column", connection="wh", ids=[item.id], titles=[item.title],
                                       fields={k: [v] for k, v in item.fields.items()}, metadata=[item.metadata],
                                       embed_texts=[item.embed_text or ""], from_previous=relation))
            continue
        items.append(item)
    return items


FILES = {"a.txt": "orders: id int key; amount numeric paid total; placed date when ordered\n"
                  "customers: id int key; name text who buys\nempty:",
         "b.txt": "stores: id int key; city text where it is"}


def build(project: Path, parse: Any, files: dict[str, str], rules: tuple[EdgeRule, ...] = RULES) -> RetrievalIndex:
    (project / "cat").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (project / "cat" / name).write_text(text)
    index = RetrievalIndex(project, [FileSource("cat", ("cat",), (".txt",), parse)], embedder=HashingEmbedder(64),
                           edge_rules=rules, watch=False)
    index.refresh()
    return index


def seen(index: RetrievalIndex) -> dict[str, Any]:
    ids = sorted(str(row["id"]) for row in index.documents())
    return {"rows": index.rows(ids), "fields": index.fields(ids), "edges": index.edge_map(ids),
            "in": index.edge_map(ids, direction="in"), "outline": index.outline(["column"], ["type", "n"]),
            "search": [[(hit.id, hit.score, sorted(hit.lanes)) for hit in index.search(query, limit=20, refresh=False)]
                       for query in ("amount paid", "city", "who buys", "key")]}


def test_a_batch_is_indexed_as_its_documents(tmp_path: Path) -> None:
    found = []
    for name, parse, rules in (("rows", as_documents, AS_ROWS), ("documents", as_documents, RULES),
                               ("batches", as_batches, RULES)):
        index = build(tmp_path / name, parse, FILES, rules)
        try:
            found.append(seen(index))
            # an edit, then a file that takes over a column id of another (the one-by-one path)
            build(tmp_path / name, parse, {"a.txt": "orders: id int key; total numeric sum"}, rules).close()
            index.close()
            index = build(tmp_path / name, parse, {"c.txt": "stores: city text moved here"}, rules)
            found.append(seen(index))
        finally:
            index.close()
    assert found[0] == found[2] == found[4] and found[1] == found[3] == found[5]
    assert found[0]["search"][0][0][0] == "col:orders.amount"
    assert found[3]["rows"][-1]["path"] == "cat/c.txt"


def test_a_batch_with_texts_missing_says_which_lengths_differ() -> None:
    with pytest.raises(ValueError, match=r"a batch of 2 ids needs as many titles.*\[1, 2\]"):
        DocumentBatch(kind="column", connection=None, ids=["a", "b"], titles=["a"], fields={}, metadata=[{}, {}])


def test_a_first_build_with_an_id_in_two_files_keeps_one_row_of_it(tmp_path: Path) -> None:
    """A build from nothing knows which ids it has written: the second file with ``stores`` replaces it."""
    for name, parse in (("documents", as_documents), ("batches", as_batches)):
        index = build(tmp_path / name, parse, {**FILES, "c.txt": "stores: city text moved here"})
        try:
            rows = index.rows(["table:stores", "col:stores.city", "col:stores.id"])
            assert [(row["id"], row["path"]) for row in rows] == [
                ("col:stores.city", "cat/c.txt"), ("col:stores.id", "cat/b.txt"), ("table:stores", "cat/c.txt")]
            assert index.count() == 11
            assert index.edge_map(["table:stores"]) == {"table:stores": [("contains", "col:stores.city")]}
        finally:
            index.close()


def test_edges_from_a_batch_follow_the_rules_and_a_document(tmp_path: Path) -> None:
    def misplaced(path: str, text: str) -> Sequence[Item]:
        return [item for item in as_batches(path, text) if isinstance(item, DocumentBatch)]

    for name, parse, error in (
            ("misplaced", misplaced, "is a batch with from_previous edges: put the Document those edges come from"),
            ("undeclared", lambda path, text: as_batches(path, text, "holds"), "'holds' is not declared")):
        index = build(tmp_path / name, parse, {"b.txt": FILES["b.txt"]})
        try:
            assert error in index.item_errors()["cat/b.txt"] and index.count() == 0
        finally:
            index.close()
