"""How sure a lookup is of what it reports, in 0..1, with the reason.

* An entity: a table or column of the latest scan, a page or source people keep, is certain (1.0). A page
  marked stale is half as sure (0.5), one that is superseded or archived less (0.3); a semantic-layer
  source whose table the latest scan does not hold is 0.5, and its measures and dimensions with it.
* A neighbour: an edge someone declared or a scan observed (a foreign key, a join, a ref, contains) is 1.0;
  an inferred foreign key carries the inference's own confidence; ``pattern_of`` is read from a pattern
  page's text (0.7); a reference to something that does not exist is 0. A neighbour beyond the first hop
  is as sure as the path to it: the product of the confidences along it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

CERTAIN = 1.0
STALE = 0.5
RETIRED = 0.3  # superseded or archived
MISSING_TABLE = 0.5
INFERRED = 0.5  # an inferred key that does not say how sure it is
FROM_TEXT = 0.7  # pattern_of: a page names the table in its text
DANGLING = 0.0


def edge(relation: str, metadata: dict[str, Any], exists: bool) -> float:
    if not exists:
        return DANGLING
    if relation == "pattern_of":
        return FROM_TEXT
    if metadata.get("inferred"):
        value = metadata.get("confidence")
        return round(float(value), 4) if isinstance(value, int | float) and 0 <= value <= 1 else INFERRED
    return CERTAIN


def entity(index: RetrievalIndex, row: dict[str, Any]) -> tuple[float, str]:
    """(confidence, why) of one resolved document."""
    kind, meta = row["kind"], row["metadata"]
    if kind == "wiki":
        superseding = index.incoming([row["id"], f"wiki:{meta.get('key')}"], "supersedes")
        by = sorted({s for found in superseding.values() for s in found})
        if by:
            return RETIRED, f"superseded by {', '.join(b.removeprefix('wiki:') for b in by)}"
        if meta.get("archived"):
            return RETIRED, "archived"
        if meta.get("stale_since"):
            return STALE, f"stale since {meta['stale_since']}"
        return CERTAIN, "a page of this project"
    if kind in ("table", "column"):
        return CERTAIN, "in the latest scan"
    source = row
    if kind in ("sl_measure", "sl_dimension"):
        owners = index.incoming([row["id"]], "contains").get(row["id"], [])
        rows = index.rows(owners[:1])
        if not rows:
            return CERTAIN, "declared in the semantic layer"
        source = rows[0]
    table = source["metadata"].get("table")
    if not table:
        return CERTAIN, "declared in the semantic layer (SQL)"
    targets = [other for _, other in index.edge_map([source["id"]], relations=["sl_table"]).get(source["id"], [])]
    if targets and index.existing(targets):
        return CERTAIN, f"declared in the semantic layer; reads {table}, in the latest scan"
    return MISSING_TABLE, f"declared in the semantic layer; reads {table}, which the latest scan does not hold"
