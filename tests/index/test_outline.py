"""``RetrievalIndex.outline`` answers each asked key as the document's metadata holds it, for a table's own row
and for its columns' lean child rows (whose metadata text starts in the parent's row; ADR 0050), whatever the
number of keys asked (it reads each row's metadata once; ADR 0049)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, Edge, FileSource
from khive.index.embed import HashingEmbedder
from khive.index.engine import RetrievalIndex

KEYS = ["comment", "samples", "tableRef", "primaryKey", "rows", "ratio", "absent", "note"]


def catalog(path: str, text: str) -> Sequence[Document]:
    """``table name`` then its ``column name`` lines; each document's metadata mixes every JSON type."""
    docs: list[Document] = []
    table = ""
    for n, line in enumerate(text.splitlines()):
        kind, name = line.split()
        doc_id = name if kind == "table" else f"{table}.{name}"
        if kind == "table":
            table = name
        metadata: dict[str, Any] = {
            "connectionId": "wh", "tableRef": {"db": "shop", "name": table, "quote": 'say "é"\n'},
            "primaryKey": n % 2 == 0, "rows": n * 1000, "ratio": n / 7, "comment": None if n % 3 else f"Café {n}",
            "samples": [] if n % 4 else ["Paris", 3, None, {"x": [1.5]}], "note": "a, b\tc",
        }
        docs.append(Document(id=doc_id, kind=kind, title=doc_id, fields={"name": name}, metadata=metadata,
                             edges=[Edge("contains", f"{name}.{c}") for c in ("id", "city")] if kind == "table"
                             else []))
    return docs


def as_sql(value: Any) -> Any:
    """What SQLite's ``json_extract`` gives for one value: objects and lists as their JSON text, booleans as
    0/1, the rest as it is."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return value


@pytest.fixture
def index(tmp_path: Path) -> Iterator[RetrievalIndex]:
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "a.txt").write_text("table orders\ncolumn id\ncolumn city\ntable shops\ncolumn id\n"
                                            "column city\n")
    rule = EdgeRule("contains", frozenset({"table"}), frozenset({"column"}), implied=True)
    found = RetrievalIndex(tmp_path, [FileSource("cat", ("cat",), (".txt",), catalog)],
                           embedder=HashingEmbedder(32), edge_rules=(rule,), watch=False)
    found.refresh()
    yield found
    found.close()


@pytest.mark.parametrize("keys", [KEYS, KEYS[:1], [], ["samples", "samples"]])
def test_outline_answers_every_key_as_the_metadata_holds_it(index: RetrievalIndex, keys: list[str]) -> None:
    rows = {row["id"]: row for row in index.documents()}
    expected = [(doc_id, row["connection"], row["title"], *(as_sql(row["metadata"].get(key)) for key in keys))
                for doc_id, row in rows.items() if row["kind"] in ("table", "column")]
    answered = index.outline(["table", "column"], keys)
    assert sorted(answered) == sorted(expected)
    assert [row[0] for row in answered] == [row[0] for row in expected]  # in rowid order, as the rows were made
    assert len(answered) == 6


def test_the_columns_rows_are_lean(index: RetrievalIndex) -> None:
    """The case the outline must rebuild: every column's metadata text starts in its table's row."""
    db = sqlite3.connect(index.project / ".khive" / "index.sqlite")
    try:
        assert db.execute("SELECT count(*) FROM docs WHERE lead IS NOT NULL").fetchone()[0] == 4
    finally:
        db.close()


def test_outline_without_titles_answers_the_ids_and_the_keys_alone(index: RetrievalIndex) -> None:
    assert index.outline(["table", "column"], KEYS, titles=False) == [
        (row[0], *row[3:]) for row in index.outline(["table", "column"], KEYS)]
    assert index.outline(["column"], [], titles=False) == [
        ("orders.id",), ("orders.city",), ("shops.id",), ("shops.city",)]


def test_outline_of_one_kind_and_a_key_that_is_not_a_name(index: RetrievalIndex) -> None:
    assert [row[0] for row in index.outline(["column"], ["comment"])] == [
        "orders.id", "orders.city", "shops.id", "shops.city"]
    with pytest.raises(ValueError, match="plain name"):
        index.outline(["column"], ["comment') --"])
