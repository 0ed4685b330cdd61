"""What ``discover.lookup(id=...)`` names: an index id, a project file path (with ``#entry`` for one entry of a
shard or source), a wiki key, an SL name, a qualified table or column name, or an alias a document declares.

Each way is tried in that order; the first that names exactly one document wins, and the answer says which
way it was (``resolvedBy``). A name that fits several documents is ``ambiguous_id`` with the candidates.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from khive.errors import InvalidArgs, NotFound, OpError
from packs.discover.refs import discover_kind, public_id
from packs.discover.relations import GLOBAL
from packs.discover.text import split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

_GLOB = re.compile(r"[*?\[\]]")
FILE_SUFFIXES = (".md", ".yaml", ".yml")
# The document a whole file stands for, when the path names no entry (a shard of one table is that table).
_FILE_KINDS = ("wiki", "sl_source", "table")


def resolve(index: RetrievalIndex, ident: str, *, connection: str | None, user: str) -> tuple[dict[str, Any], str]:
    """(the document's row, how it was resolved: id, path, key, name or alias)."""
    ident = ident.strip()
    if not ident or _GLOB.search(ident):
        raise InvalidArgs(f"id {ident!r} must be a ref id, a file path, a qualified name, a wiki key, an SL name "
                          "or an alias", details={"field": "id"})
    if ident.split(":", 1)[0] in ("table", "column", "sl", "wiki") and ":" in ident:
        rows = index.rows([ident])
        if rows:
            return dict(rows[0]), "id"
    if _is_path(ident):
        return by_path(index, ident, connection=connection, user=user), "path"
    for doc_id in (f"wiki:@{user}/{ident}", f"wiki:{ident}", f"sl:{ident}"):
        rows = index.rows([doc_id])
        if rows and (connection is None or rows[0]["connection"] in (None, connection)):
            return dict(rows[0]), "key" if doc_id.startswith("wiki:") else "name"
    row = _by_qualified_name(index, ident, connection)
    if row is not None:
        return row, "name"
    aliased = [row for row in index.rows_with_alias(ident) if _in_scope(row, connection, user)]
    if len(aliased) == 1:
        return dict(aliased[0]), "alias"
    if aliased:
        raise _ambiguous(ident, [row["id"] for row in aliased], "declared as an alias by")
    hints = [public_id(h.id, discover_kind(h.kind, h.metadata), h.metadata)
             for h in index.search(" ".join(split_words(ident)), limit=3, refresh=False, snippets=False)]
    hint = f"; did you mean {', '.join(hints)}?" if hints else "; discover.search finds ids"
    raise NotFound(f"nothing is known as {ident!r}{hint}", code="entity_not_found",
                   details={"id": ident, "closest": hints})


def _is_path(ident: str) -> bool:
    path = ident.partition("#")[0]
    return "/" in path and path.endswith(FILE_SUFFIXES)


def _in_scope(row: dict[str, Any], connection: str | None, user: str) -> bool:
    if row["kind"] == "wiki":  # the caller's own tier and the global one (archived pages still resolve)
        return row["metadata"].get("scope") in (GLOBAL, user)
    return connection is None or row["connection"] in (None, connection)


def _ambiguous(ident: str, candidates: list[str], why: str) -> OpError:
    return OpError(f"id {ident!r} is {why} {len(candidates)} entities; pass connection= or one of their docIds",
                   code="ambiguous_id", details={"candidates": candidates[:10]})


def _by_qualified_name(index: RetrievalIndex, ident: str, connection: str | None) -> dict[str, Any] | None:
    scope = connection or "*"
    parts = ident.split(".")
    names = [ident] + ([".".join(parts[1:])] if len(parts) >= 3 else [])  # catalog.db.name -> db.name
    patterns = [f"{kind}:{scope}:{name}" for name in names for kind in ("table", "column")]
    if len(parts) == 1:
        patterns.append(f"table:{scope}:*.{ident}")
    rows = index.rows_matching(patterns)
    tables = [row for row in rows if row["kind"] == "table"]
    rows = tables or rows
    if len(rows) == 1:
        return dict(rows[0])
    if rows:
        raise _ambiguous(ident, [row["id"] for row in rows], "the name of")
    return None


def entry_name(row: dict[str, Any]) -> str:
    """How an entry is named inside its file: a shard's table (``orders``) or column (``orders.status``), a
    source's measure or dimension (``revenue``), a page's key."""
    meta = row["metadata"]
    if row["kind"] == "table":
        return str((meta.get("tableRef") or {}).get("name"))
    if row["kind"] == "column":
        return f"{(meta.get('tableRef') or {}).get('name')}.{meta.get('columnName')}"
    if row["kind"] in ("sl_measure", "sl_dimension"):
        return str(meta.get("name"))
    return public_id(row["id"], discover_kind(row["kind"], meta), meta)


def by_path(index: RetrievalIndex, ident: str, *, connection: str | None, user: str) -> dict[str, Any]:
    """The document a project file path names: the file's own (a page, a source, the one table of a shard),
    or with ``#entry`` one entry of it (``_schema/shop/shop.main.yaml#orders``, ``...#orders.status``,
    ``semantic-layer/shop/orders.yaml#revenue``)."""
    path, _, entry = ident.partition("#")
    path = path.strip().removeprefix("./")
    rows = [row for row in index.rows_at(path) if _in_scope(row, connection, user)]
    if not rows:
        raise NotFound(f"no document of this project comes from {path!r}; paths are project-relative, e.g. "
                       "wiki/global/<key>.md, semantic-layer/<connection>/<name>.yaml or "
                       "_schema/<connection>/<catalog.schema>.yaml#<table>", code="entity_not_found",
                       details={"id": ident, "path": path})
    if entry:
        wanted = entry.strip()
        found = [row for row in rows if entry_name(row) == wanted]
        if len(found) == 1:
            return dict(found[0])
        names = sorted(entry_name(row) for row in rows)
        raise NotFound(f"{path} has no entry {wanted!r}; it has {', '.join(names[:10])}"
                       + (f" and {len(names) - 10} more" if len(names) > 10 else ""), code="entity_not_found",
                       details={"id": ident, "path": path, "entries": names[:50]})
    for kind in _FILE_KINDS:
        own = [row for row in rows if row["kind"] == kind]
        if len(own) == 1:
            return dict(own[0])
        if own:
            raise OpError(f"{path} holds {len(own)} {kind}s; name one as {path}#<{kind}>",
                          code="ambiguous_id",
                          details={"candidates": [f"{path}#{entry_name(row)}" for row in own][:10]})
    return dict(rows[0])
