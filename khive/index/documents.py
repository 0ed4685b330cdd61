"""What packs hand to the index: documents with weighted fields, metadata and edges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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


@dataclass(frozen=True, slots=True)
class DocumentBatch:
    """Many documents of one kind and connection without edges of their own, as columns of values (a table's
    columns): what a source hands over instead of a ``Document`` each when it has thousands alike. The index
    stores them exactly as the ``documents()`` they stand for, in order (ADR 0050).

    ``from_previous``: the relation of an edge from the ``Document`` just before the batch to each of its
    documents (a table's ``contains``), as if that document listed them after its own edges."""

    kind: str
    connection: str | None
    ids: Sequence[str]
    titles: Sequence[str]
    fields: Mapping[str, Sequence[str]]  # keys from FIELDS, one text per document each
    metadata: Sequence[Mapping[str, Any]]
    embed_texts: Sequence[str] | None = None  # as Document.embed_text, for every document or none
    from_previous: str | None = None

    def __post_init__(self) -> None:
        sizes = {len(self.titles), len(self.metadata), *(len(texts) for texts in self.fields.values()),
                 *([len(self.embed_texts)] if self.embed_texts is not None else [])}
        if sizes - {len(self.ids)}:
            raise ValueError(f"a batch of {len(self.ids)} ids needs as many titles, metadata, field texts and "
                             f"embed texts (got lengths {sorted(sizes)})")

    def __len__(self) -> int:
        return len(self.ids)

    def field_texts(self, name: str) -> Sequence[str]:
        return self.fields.get(name) or [""] * len(self.ids)

    def documents(self) -> list[Document]:
        texts = self.embed_texts if self.embed_texts is not None else [None] * len(self.ids)
        return [Document(id=doc_id, kind=self.kind, title=title, connection=self.connection, metadata=meta,
                         fields={name: texts_of[n] for name, texts_of in self.fields.items()}, embed_text=text)
                for n, (doc_id, title, meta, text) in enumerate(zip(self.ids, self.titles, self.metadata, texts,
                                                                     strict=True))]


Item = Document | DocumentBatch  # what a source's ``documents()`` gives: one document or many alike


def embed_texts(item: Item) -> Sequence[str]:
    """What the vector lane sees of each document of ``item``: its embed text, else title, summary and body."""
    if isinstance(item, Document):
        return [item.embed_text or " ".join(part for part in (item.title, item.fields.get("summary", ""),
                                                              item.fields.get("body", "")) if part)]
    given = item.embed_texts if item.embed_texts is not None else [""] * len(item)
    if all(given):
        return given
    return [text or " ".join(part for part in parts if part) for text, parts in zip(
        given, zip(item.titles, item.field_texts("summary"), item.field_texts("body"), strict=True), strict=True)]


def expand(items: Sequence[Item]) -> list[Document]:
    """Every document of ``items``, in order, a batch's ``from_previous`` edges on the document before it."""
    out: list[Document] = []
    for n, item in enumerate(items):
        if isinstance(item, DocumentBatch):
            if item.from_previous:
                parent = previous_document(items, n)
                out[-1] = replace(parent, edges=[*parent.edges, *(Edge(item.from_previous, i) for i in item.ids)])
            out.extend(item.documents())
        else:
            out.append(item)
    return out


def previous_document(items: Sequence[Item], n: int) -> Document:
    """The document just before the batch ``items[n]``, which its ``from_previous`` edges come from."""
    previous = items[n - 1] if n else None
    if not isinstance(previous, Document):
        raise ValueError(f"item {n} of a file's documents is a batch with from_previous edges: put the Document "
                         f"those edges come from just before it")
    return previous


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

    def documents(self, path: str, text: str) -> Sequence[Item]:
        """Documents (or batches of them) for one file (project-relative ``path``); raise ValueError for a bad
        file."""
        ...


@dataclass(frozen=True, slots=True)
class FileSource:
    """A ready-made IndexSource from a function ``(path, text) -> documents``."""

    name: str
    roots: tuple[str, ...]
    suffixes: tuple[str, ...]
    parse: Any  # Callable[[str, str], Sequence[Item]]
    version: str = "1"

    def documents(self, path: str, text: str) -> Sequence[Item]:
        result: Sequence[Item] = self.parse(path, text)
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
