"""The wiki's contribution to the retrieval index: one document per page, edges for refs and relations."""

from __future__ import annotations

from collections.abc import Sequence

from khive.hookspecs import EdgeRule
from khive.index.documents import Document, Edge, FileSource
from packs.wiki.models import RELATIONS
from packs.wiki.page import GLOBAL, Page, doc_id, parse_page

WIKI_KIND = "wiki"
SL_KINDS = frozenset({"sl_source", "sl_measure", "sl_dimension"})

EDGE_RULES = (
    EdgeRule("refs", frozenset({WIKI_KIND}), frozenset({WIKI_KIND})),
    EdgeRule("sl_refs", frozenset({WIKI_KIND}), SL_KINDS),
    *(EdgeRule(relation, frozenset({WIKI_KIND}), frozenset({WIKI_KIND})) for relation in RELATIONS),
)


def page_document(page: Page) -> Document:
    meta = page.meta
    words = page.key.replace("/", " ").replace("-", " ").replace("_", " ")
    edges = [Edge("refs", doc_id(key, GLOBAL)) for key in meta.refs]
    edges += [Edge("sl_refs", f"sl:{name}") for name in meta.sl_refs]
    edges += [Edge(relation, doc_id(key, GLOBAL)) for relation, key in meta.relations.pairs()]
    return Document(
        id=page.doc_id,
        kind=WIKI_KIND,
        title=meta.title or words,
        fields={"name": " ".join([page.key, words, *meta.aliases]), "title": meta.title or "", "summary": meta.summary,
                "tags": " ".join(meta.tags), "body": page.body,
                "extra": " ".join([*meta.refs, *meta.sl_refs])},
        metadata={"key": page.key, "scope": page.scope, "page_kind": meta.kind, "summary": meta.summary,
                  "tags": meta.tags, "refs": meta.refs, "sl_refs": meta.sl_refs,
                  "relations": {k: v for k, v in meta.relations.model_dump().items() if v},
                  "relevance": meta.relevance, "aliases": meta.aliases, "archived": meta.archived,
                  "stale_since": meta.stale_since.isoformat() if meta.stale_since else None,
                  "date": meta.date.isoformat() if meta.date else None},
        edges=edges,
        embed_text=" ".join(part for part in (words, meta.title or "", meta.summary, " ".join(meta.tags), page.body)
                            if part),
    )


def documents(path: str, text: str) -> Sequence[Document]:
    return [page_document(parse_page(path, text))]


SOURCE = FileSource(name="wiki", roots=("wiki",), suffixes=(".md",), parse=documents, version="2")
