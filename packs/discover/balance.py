"""Lane balance: wiki pages, pattern pages and semantic-layer objects are scored by how much of the question
they cover, on the same scale as tables (``route.py``), so a playbook that answers "how do we report revenue"
is not buried under every table that has a revenue column.

A document's coverage is the idf-weighted share of the query terms whose forms appear in it: its name,
title, summary and tags count fully, its body at BODY (a long page mentions everything once). It earns
COVER x coverage plus ROUTE x coverage^2 first ranks (and LANE_SHARE of its lane's RRF, the tie-break a
table's order inside its schema also is): a document that answers the whole question ranks with the best
tables of the routed schema, one that touches a word of it does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive.index.morph import key
from packs.discover.forms import Term
from packs.discover.lexicon import Lexicon
from packs.discover.rank import Candidate, first_rank
from packs.discover.route import COVER, OPERATION, OPERATION_WORDS, ROUTE, ROUTE_POWER, idfs
from packs.discover.text import split_words

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

KINDS = ("wiki", "sl_source", "sl_measure", "sl_dimension")
HEAD_FIELDS = ("name", "title", "summary", "tags")
BODY = 0.5
DEPTH = 30  # documents (best by lane rank) whose text is read
LANE_SHARE = 0.3  # what a document's own lane rank (RRF) still counts once its coverage is scored


def weights(terms: Sequence[Term], lexicon: Lexicon) -> list[float]:
    """Each term's rarity; a word no table holds counts like a rare one (documents speak of more than tables)."""
    rare = lexicon.idf(1)
    return [w if w > 0 else rare * (OPERATION if term.word in OPERATION_WORDS else 1.0)
            for w, term in zip(idfs(terms, lexicon), terms, strict=True)]


def apply(index: RetrievalIndex, lexicon: Lexicon, found: dict[str, Candidate], terms: Sequence[Term]) -> None:
    documents = sorted((c for c in found.values() if c.index_kind in KINDS and c.reached is None),
                       key=lambda c: (-c.base, c.doc_id))[:DEPTH]
    if not documents or not terms:
        return
    weight = weights(terms, lexicon)
    total = sum(weight) or 1.0
    fields = index.fields([c.doc_id for c in documents])
    for candidate in documents:
        text = fields.get(candidate.doc_id, {})
        head = {key(w) for name in HEAD_FIELDS for w in split_words(text.get(name, ""))}
        body = {key(w) for w in split_words(text.get("body", ""))}
        covered = 0.0
        for w, term in zip(weight, terms, strict=True):
            forms = term.forms
            strength = max((forms[k] for k in forms if k in head), default=0.0)
            strength = max(strength, BODY * max((forms[k] for k in forms if k in body), default=0.0))
            covered += w * strength
        share = covered / total
        candidate.base *= LANE_SHARE
        if share > 0:
            candidate.bonuses["coverage"] = round(COVER * share * first_rank(), 6)
            candidate.bonuses["focus"] = round(ROUTE * share ** ROUTE_POWER * first_rank(), 6)
