"""The packs' declared edge rules, checked for each document an index build writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from khive.index.documents import Document, DocumentBatch, Edge, EdgeRule

KindOf = Callable[[str], "str | None"]  # the kind of the indexed document of an id (None: not indexed)


class EdgeRuleError(ValueError):
    pass


class EdgeRules:
    def __init__(self, rules: Sequence[EdgeRule]):
        self.rules = tuple(rules)
        # (from kind, relation) -> the target kinds the rules allow: the per-edge check of an index build
        self._allowed: dict[tuple[str, str], frozenset[str]] = {}
        # (from kind, relation) whose edges may be kept on their target's row (ADR 0050)
        self.implied = frozenset((kind, rule.relation) for rule in self.rules if rule.implied
                                 for kind in rule.from_kinds)
        for rule in self.rules:
            for kind in rule.from_kinds:
                key = (kind, rule.relation)
                self._allowed[key] = self._allowed.get(key, frozenset()) | rule.to_kinds

    def problems(self, document: Document, kind_of: Mapping[str, str] | KindOf) -> list[str]:
        """Why each of ``document``'s edges breaks the rules (empty: all fine); ``kind_of``: the kind of each
        existing target (a mapping of those looked up at once, or a lookup per edge)."""
        problems = []
        for edge in document.edges:
            rules = [rule for rule in self.rules if rule.relation == edge.relation]
            if not rules:
                declared = sorted({rule.relation for rule in self.rules})
                problems.append(f"edge relation {edge.relation!r} is not declared by any pack "
                                f"(declared: {', '.join(declared) or 'none'})")
                continue
            if not any(document.kind in rule.from_kinds for rule in rules):
                allowed = sorted({kind for rule in rules for kind in rule.from_kinds})
                problems.append(f"a {document.kind} document cannot have a {edge.relation!r} edge "
                                f"(allowed from: {', '.join(allowed)})")
                continue
            target = kind_of.get(edge.target) if isinstance(kind_of, Mapping) else kind_of(edge.target)
            if target is not None and not any(
                    document.kind in rule.from_kinds and target in rule.to_kinds for rule in rules):
                allowed = sorted({kind for rule in rules if document.kind in rule.from_kinds for kind in rule.to_kinds})
                problems.append(f"{edge.relation!r} from {document.id} to {edge.target} ({target}) is not "
                                f"allowed; targets may be: {', '.join(allowed)}")
        return problems

    def checked(self, document: Document, kind_of: Mapping[str, str] | KindOf) -> list[tuple[str, str, Any]]:
        """``document``'s edges as (relation, target, metadata); an ``EdgeRuleError`` naming every problem."""
        if isinstance(kind_of, Mapping) and self._allowed_all(document, kind_of):
            return [(edge.relation, edge.target, edge.metadata if type(edge.metadata) is dict else dict(edge.metadata))
                    for edge in document.edges]
        problems = self.problems(document, kind_of)
        if problems:
            raise EdgeRuleError("; ".join(problems))
        return [(edge.relation, edge.target, dict(edge.metadata)) for edge in document.edges]

    def check_adopted(self, parent: Document, batch: DocumentBatch) -> None:
        """The rules allow ``parent``'s ``from_previous`` edges to ``batch`` (one check for all of them)."""
        relation = batch.from_previous or ""
        if batch.ids and batch.kind not in self._allowed.get((parent.kind, relation), frozenset()):
            edge = replace(parent, edges=[Edge(relation, batch.ids[0])])
            raise EdgeRuleError("; ".join(self.problems(edge, {batch.ids[0]: batch.kind})))

    def _allowed_all(self, document: Document, kinds: Mapping[str, str]) -> bool:
        """Whether every edge of ``document`` keeps the rules (the common case, decided without messages)."""
        for edge in document.edges:
            allowed = self._allowed.get((document.kind, edge.relation))
            if allowed is None:
                return False
            target = kinds.get(edge.target)
            if target is not None and target not in allowed:
                return False
        return True
