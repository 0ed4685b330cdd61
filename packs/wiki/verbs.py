"""Verbs of the wiki pack: write, read, search, list, delete."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from khive.context import Context
from khive.errors import InvalidArgs, NotFound, OpError, WriteConflict
from khive.limits import QueryText, capped, current, invalid
from khive.project.store import content_sha256
from khive.verbs import Params, Verb, Visibility
from packs.wiki import results
from packs.wiki.index import WIKI_KIND, page_document
from packs.wiki.models import Frontmatter, PageKey, PageKind, Relations, check_key
from packs.wiki.page import GLOBAL, Page, PageError, describe, doc_id, page_path, parse_page, render_page

Scope = Literal["global", "user"]


def _scope(scope: str, ctx: Context) -> str:
    return GLOBAL if scope == "global" else ctx.user_name


class WriteParams(Params):
    key: PageKey = Field(description="path-like page key, e.g. historic-sql/orders-by-region")
    body: Annotated[str, capped("wiki_body_chars", "the page body")] = Field(default="", description="markdown body")
    summary: str = ""
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list, description="keys of other pages")
    sl_refs: list[str] = Field(default_factory=list, description="semantic-layer names")
    relations: Relations = Field(default_factory=Relations)
    kind: PageKind = "note"
    relevance: list[str] = Field(default_factory=list, description='["always"] or phase names')
    aliases: list[str] = Field(default_factory=list, description="other names for the page; discover.lookup "
                                                                 "resolves them")
    scope: Scope = Field(default="global", description="global, or user (the caller's own override tier)")
    stale_since: dt.date | None = None
    archived: bool = False
    date: dt.date | None = Field(default=None, description="required for recap pages")
    base_sha256: str | None = Field(
        default=None, max_length=64,
        description='the sha256 wiki.read gave: written only if the page is still that one (else write_conflict); '
                    '"": only if there is no page yet')

    @model_validator(mode="after")
    def _frontmatter_size(self) -> WriteParams:
        """Every frontmatter field is stored, indexed and checked (a ref is a file lookup): cap them together."""
        size = sum(len(str(value)) for name in FRONTMATTER_FIELDS for value in _values(getattr(self, name)))
        if size > current().wiki_frontmatter_chars:
            raise invalid("wiki_frontmatter_chars", size, "the frontmatter (title, summary, tags, refs, sl_refs, "
                          "relations, relevance, aliases)")
        return self


FRONTMATTER_FIELDS = ("title", "summary", "tags", "refs", "sl_refs", "relations", "relevance", "aliases")


def _values(value: Any) -> list[Any]:
    if isinstance(value, Relations):
        return [key for _, key in value.pairs()]
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def write(params: WriteParams, ctx: Context) -> dict[str, Any]:
    """Create or replace a page; unknown refs are reported back, and resolve once their pages exist."""
    fields = params.model_dump(exclude={"key", "body", "scope", "base_sha256"})
    try:
        meta = Frontmatter.model_validate(fields)
    except ValidationError as exc:
        raise InvalidArgs(f"wiki.write: {describe(exc)}", details={"key": params.key}) from None
    page = Page(params.key, _scope(params.scope, ctx), meta, params.body)
    index = ctx.runtime.index
    problems = index.edge_problems(page_document(page))
    if problems:
        raise OpError("; ".join(problems), code="edge_rule_violation", details={"problems": problems})
    text = render_page(meta, params.body)

    def unless_changed(current: str | None) -> str:
        """Two agents that read, edit and write the same page would lose one edit without the check."""
        if params.base_sha256 is not None and params.base_sha256 != _sha256(current):
            raise WriteConflict(
                f"wiki page {page.key!r} ({page.scope}) changed since base_sha256 {params.base_sha256[:12]!r}: "
                "wiki.read it again, redo your edit on what it holds now, and write with its sha256",
                details={"key": page.key, "scope": page.scope, "baseSha256": params.base_sha256,
                         "sha256": _sha256(current)})
        return text

    result = ctx.runtime.files.update(page.path, unless_changed, author=ctx.principal,
                                      message=f"wiki: write {page.path}")
    index.refresh()
    return {"key": page.key, "scope": page.scope, "path": page.path, "changed": result.changed,
            "sha256": result.sha256, **_links(page, ctx), "commitError": result.commit_error}


class ReadParams(Params):
    key: PageKey
    scope: Scope | None = Field(default=None, description="default: the caller's page if any, else global")


def _sha256(text: str | None) -> str:
    """The page file's sha256 as the file store reports it for a write; "" when there is no page."""
    return content_sha256(None if text is None else text.encode("utf-8")) or ""


def _load(ctx: Context, key: str, scope: str) -> tuple[Page, str] | None:
    text = ctx.runtime.files.read_text(page_path(key, scope))
    if text is None:
        return None
    try:
        return parse_page(page_path(key, scope), text), _sha256(text)
    except PageError as exc:
        raise OpError(str(exc), code="invalid_page", details={"key": key, "scope": scope}) from None


def _resolve(ctx: Context, key: str, scope: str | None) -> tuple[Page, str]:
    check_key(key)
    order = [_scope(scope, ctx)] if scope else [ctx.user_name, GLOBAL]
    for candidate in order:
        found = _load(ctx, key, candidate)
        if found is not None:
            return found
    raise NotFound(f"no wiki page {key!r} (looked in {', '.join(order)}); wiki.list() shows the pages",
                   code="page_not_found", details={"key": key})


def _exists(ctx: Context, key: str) -> bool:
    files = ctx.runtime.files
    return files.exists(page_path(key, ctx.user_name)) or files.exists(page_path(key, GLOBAL))


def _links(page: Page, ctx: Context) -> dict[str, Any]:
    targets = [*page.meta.refs, *(key for _, key in page.meta.relations.pairs())]
    unresolved = sorted({key for key in targets if not _exists(ctx, key)})
    known = ctx.runtime.index.existing([f"sl:{name}" for name in page.meta.sl_refs])  # one query for all
    unresolved_sl = sorted(name for name in page.meta.sl_refs if f"sl:{name}" not in known)
    return {"unresolvedRefs": unresolved, "unresolvedSlRefs": unresolved_sl}


def read(params: ReadParams, ctx: Context) -> dict[str, Any]:
    """Read a page: frontmatter, body, link status, backlinks; a user page shadows the global one."""
    page, sha256 = _resolve(ctx, params.key, params.scope)
    index = ctx.runtime.index
    backlinks = index.edges(doc_id(page.key, GLOBAL), direction="in")
    superseded_by = [edge["id"] for edge in backlinks if edge["relation"] == "supersedes"]
    shadows_global = page.scope != GLOBAL and ctx.runtime.files.exists(page_path(page.key, GLOBAL))
    return {"key": page.key, "scope": page.scope, "path": page.path, "sha256": sha256,
            **_wire(page.meta.model_dump(mode="json")), "body": page.body, **_links(page, ctx),
            "backlinks": backlinks, "supersededBy": superseded_by, "shadowsGlobal": shadows_global}


def _wire(frontmatter: dict[str, Any]) -> dict[str, Any]:
    """Frontmatter fields as results name them (camelCase, ADR 0039); relation names inside stay as written."""
    return {to_camel(key): value for key, value in frontmatter.items()}


class SearchParams(Params):
    query: QueryText
    tags: list[str] = Field(default_factory=list, max_length=50, description="pages must carry all of these")
    kind: PageKind | None = None
    scope: Scope | None = Field(default=None, description="default: global and the caller's pages")
    limit: int = Field(default=10, ge=1, le=50)
    include_superseded: bool = False
    include_archived: bool = False


def search(params: SearchParams, ctx: Context) -> dict[str, Any]:
    """Search pages: key, summary, score (0..1), snippet; superseded and archived pages are hidden."""
    index = ctx.runtime.index
    where: dict[str, Any] = {}
    if params.kind:
        where["page_kind"] = params.kind
    user = ctx.user_name
    visible_scopes = {GLOBAL, user} if params.scope is None else {_scope(params.scope, ctx)}
    results: list[tuple[Any, list[str]]] = []
    # Over-fetch a little for the filters below; fetch deeper only when they removed too much.
    for depth in (params.limit * 2, params.limit * 10):
        # Snippets only for the hits shown: making one tokenizes the whole page.
        hits = index.search(params.query, kinds=[WIKI_KIND], limit=depth, where=where or None, snippets=False,
                            refresh=not results)
        keys = [hit.metadata["key"] for hit in hits]
        shadowed = index.existing([doc_id(key, user) for key in keys]) if params.scope is None else set()
        superseding = index.incoming([doc_id(key, GLOBAL) for key in keys], "supersedes")
        results = []
        for hit in hits:
            meta = hit.metadata
            superseded_by = superseding.get(doc_id(meta["key"], GLOBAL), [])
            if not _visible(meta, params, visible_scopes, shadowed, doc_id(meta["key"], user), superseded_by):
                continue
            results.append((hit, superseded_by))
            if len(results) >= params.limit:
                break
        if len(results) >= params.limit or len(hits) < depth:
            break
    index.add_snippets(params.query, [hit for hit, _ in results])
    return {"hits": [{"key": hit.metadata["key"], "scope": hit.metadata["scope"], "title": hit.title,
                      "summary": hit.metadata["summary"], "kind": hit.metadata["page_kind"],
                      "tags": hit.metadata.get("tags", []), "score": hit.score, "snippet": hit.snippet,
                      "supersededBy": superseded_by} for hit, superseded_by in results],
            "count": len(results)}


def _visible(meta: dict[str, Any], params: SearchParams, scopes: set[str], shadowed: set[str], own_id: str,
             superseded_by: list[str]) -> bool:
    if meta["scope"] not in scopes:
        return False
    if meta["scope"] == GLOBAL and own_id in shadowed:
        return False  # the caller's own page shadows this one
    if meta.get("archived") and not params.include_archived:
        return False
    if not set(params.tags) <= set(meta.get("tags", [])):
        return False
    return not (superseded_by and not params.include_superseded)


class ListParams(Params):
    scope: Scope | None = None
    tag: str | None = None
    kind: PageKind | None = None
    prefix: str | None = Field(default=None, description="key prefix, e.g. historic-sql/")
    limit: int = Field(default=200, ge=1, le=5000)


def list_pages(params: ListParams, ctx: Context) -> dict[str, Any]:
    """List pages (key, scope, kind, summary), sorted by key."""
    index = ctx.runtime.index
    index.refresh()
    scopes = {GLOBAL, ctx.user_name} if params.scope is None else {_scope(params.scope, ctx)}
    pages = []
    for row in index.documents(kind=WIKI_KIND):
        meta = row["metadata"]
        if meta["scope"] not in scopes or (params.kind and meta["page_kind"] != params.kind):
            continue
        if (params.tag and params.tag not in meta.get("tags", [])) or \
                (params.prefix and not meta["key"].startswith(params.prefix)):
            continue
        pages.append({"key": meta["key"], "scope": meta["scope"], "kind": meta["page_kind"],
                      "summary": meta["summary"], "tags": meta.get("tags", []), "archived": meta.get("archived")})
    pages.sort(key=lambda page: (page["key"], page["scope"] != GLOBAL))
    return {"pages": pages[: params.limit], "count": len(pages), "errors": index.item_errors()}


class DeleteParams(Params):
    key: PageKey
    scope: Scope = "global"


def delete(params: DeleteParams, ctx: Context) -> dict[str, Any]:
    """Delete a page (operator)."""
    path = page_path(check_key(params.key), _scope(params.scope, ctx))
    if not ctx.runtime.files.delete(path, author=ctx.principal, message=f"wiki: delete {path}"):
        raise NotFound(f"no wiki page at {path}", code="page_not_found", details={"path": path})
    ctx.runtime.index.refresh()
    return {"deleted": path}


def _write_key(params: Any) -> list[str]:
    return [f"wiki:{params.scope}/{params.key}"]


VERBS = (
    Verb("wiki.write", WriteParams, write, write.__doc__ or "", write_keys=_write_key,
         write_key_rule="wiki:<scope>/<key>", read_only=False, result=results.WriteResult),
    Verb("wiki.read", ReadParams, read, read.__doc__ or "", result=results.ReadResult),
    Verb("wiki.search", SearchParams, search, search.__doc__ or "", result=results.SearchResult),
    Verb("wiki.list", ListParams, list_pages, list_pages.__doc__ or "", result=results.ListResult),
    Verb("wiki.delete", DeleteParams, delete, delete.__doc__ or "", visibility=Visibility.OPERATOR,
         write_keys=_write_key, write_key_rule="wiki:<scope>/<key>", read_only=False, result=results.DeleteResult),
)
