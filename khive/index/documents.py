"""What packs hand to the index: documents with weighted fields, metadata and edges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from khive.index.morph import identifier_words

# The FTS columns every document fills (missing ones are empty). Default BM25 weights favour names.
FIELDS = ("name", "title", "summary", "tags", "body", "extra")
DEFAULT_WEIGHTS: Mapping[str, float] = {"name": 10.0, "title": 6.0, "summary": 4.0, "tags": 3.0, "body": 1.0,
                                        "extra": 1.5}


@dataclass(frozen=True, slots=True)
class Edge:
    relation: str  # refs, sl_refs, supersedes, fk, join, contains, ...
    target: str  # document id
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Document:
    id: str  # unique across the index, e.g. "wiki:global/orders-playbook", "table:warehouse:public.orders"
    kind: str  # wiki, sl_source, sl_measure, sl_dimension, table, column, pattern, ...
    title: str
    fields: Mapping[str, str]  # keys from FIELDS
    connection: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    edges: Sequence[Edge] = ()
    embed_text: str | None = None  # what the vector lane sees; default: title, summary and body


@lru_cache(maxsize=65536)  # column names repeat across tables; the split is pure
def words(name: str) -> str:
    """The words an identifier stands for (``khive.index.morph``): ``customerId`` -> ``customer id``,
    ``salesorderheader`` -> ``salesorderheader sales order header``, ``qty`` -> ``qty quantity``; lets a
    question's words meet identifiers."""
    return " ".join(identifier_words(name))


def dedupe_edges(edges: Sequence[Edge]) -> list[Edge]:
    """The edges in order, each (relation, target) once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for edge in edges:
        if (edge.relation, edge.target) not in seen:
            seen.add((edge.relation, edge.target))
            out.append(edge)
    return out


@dataclass(frozen=True, slots=True)
class EdgeRule:
    """An allowed edge: ``relation`` from a document of ``from_kinds`` to one of ``to_kinds``.

    ``implied``: such an edge usually goes to a later document of the same file without metadata (a table's
    columns); the index then stores it as the target's link to its source instead of an edge row of its own
    (ADR 0050). Every edge read answers as if it were a row; any other edge of the relation is a row."""

    relation: str
    from_kinds: frozenset[str]
    to_kinds: frozenset[str]
    implied: bool = False


class IndexSource(Protocol):
    """A pack's contribution: which files it owns and how a file becomes documents.

    Listing is a stat-walk of ``roots`` (or inotify in a warm process); an item changed when its
    (mtime, size) stamp differs and its content hash differs. ``version`` re-indexes every item of
    the source when bumped (a parser change).
    """

    @property
    def name(self) -> str: ...

    @property
    def roots(self) -> tuple[str, ...]:
        """Project-relative directories."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """File suffixes this source reads, e.g. (".md",)."""
        ...

    @property
    def version(self) -> str: ...

    def documents(self, path: str, text: str) -> Sequence[Document]:
        """Documents for one file (project-relative ``path``); raise ValueError for a bad file."""
        ...


@dataclass(frozen=True, slots=True)
class FileSource:
    """A ready-made IndexSource from a function ``(path, text) -> documents``."""

    name: str
    roots: tuple[str, ...]
    suffixes: tuple[str, ...]
    parse: Any  # Callable[[str, str], Sequence[Document]]
    version: str = "1"

    def documents(self, path: str, text: str) -> Sequence[Document]:
        result: Sequence[Document] = self.parse(path, text)
        return result


def owns(source: IndexSource, project: Path, path: Path) -> str | None:
    """The project-relative path if ``path`` belongs to ``source``, else None."""
    try:
        relative = path.relative_to(project).as_posix()
    except ValueError:
        return None
    return relative if owns_relative(source, relative) else None


def owns_relative(source: IndexSource, relative: str) -> bool:
    """Whether the project-relative POSIX path ``relative`` belongs to ``source``."""
    return relative.endswith(source.suffixes) and any(
        relative == root or relative.startswith(root.rstrip("/") + "/") for root in source.roots)
