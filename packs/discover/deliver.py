"""``render_bodies=true``: the text of the best refs in the same answer, so an agent needs no read per hit.

The first BODIES_MAX refs that have a body are delivered, in rank order: a page's or pattern's markdown body,
a semantic-layer source's YAML, verbatim up to BODY_CHARS each (cut at a line end, ``truncated: true``).
Tables and columns have no body here (``discover.lookup`` and ``scan.entity`` describe them); measures and
dimensions are delivered through their source. Possibly relevant documents are never delivered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex
    from khive.project.store import FileStore

BODIES_MAX = 5
BODY_CHARS = 6000
PAGE_KINDS = ("wiki", "pattern")


def cut(text: str, limit: int = BODY_CHARS) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    end = text.rfind("\n", 0, limit)
    return text[: end if end > limit // 2 else limit].rstrip(), True


def bodies(index: RetrievalIndex, files: FileStore, refs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    chosen = [ref for ref in refs if ref["kind"] in (*PAGE_KINDS, "sl_source")][:BODIES_MAX]
    if not chosen:
        return []
    rows = {row["id"]: row for row in index.rows([ref["docId"] for ref in chosen])}
    fields = index.fields([ref["docId"] for ref in chosen if ref["kind"] in PAGE_KINDS])
    hashes = index.item_hashes(sorted({row["path"] for row in rows.values()}))
    out = []
    for ref in chosen:
        row = rows.get(ref["docId"])
        if row is None:
            continue
        if ref["kind"] in PAGE_KINDS:
            text = fields.get(ref["docId"], {}).get("body", "")
            form = "markdown"
        else:
            text = files.read_text(row["path"]) or ""
            form = "yaml"
        body, truncated = cut(text)
        out.append({"id": ref["id"], "kind": ref["kind"], "docId": ref["docId"], "path": row["path"],
                    "contentHash": hashes.get(row["path"]), "format": form, "body": body, "truncated": truncated,
                    "chars": len(text)})
    return out
