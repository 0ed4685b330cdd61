"""Names to definitions: ``source.measure`` / ``source.dimension`` / ``source.segment`` and filter columns.

A name may be unqualified when exactly one source defines it; otherwise the error lists the
qualified candidates. Filters are parsed with sqlglot and every column is rewritten to its
definition over the source alias (a declared column's ``expr``, else the raw column).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping

from sqlglot import exp

from packs.sl.compiler.model import (
    AdHocMeasure,
    CompileError,
    MeasureRef,
    Predicate,
    column_sql,
    parse_sql,
)
from packs.sl.models import Source


class Catalog:
    """The sources of one connection plus the ad hoc measures of one request."""

    def __init__(self, sources: Mapping[str, Source], dialect: str):
        self.sources = sources
        self.dialect = dialect
        self.adhoc: dict[tuple[str, str], MeasureRef] = {}

    # --- lookups ----------------------------------------------------------------------------------

    def _lookup(self, kind: str, name: str, items: Callable[[Source], Iterable[str]]) -> tuple[str, str]:
        prefix, dot, item = name.strip().partition(".")
        if dot:
            source = self.sources.get(prefix)
            if source is None:
                raise CompileError(f"unknown source {prefix!r} in {kind} {name!r}{_close(prefix, self.sources)}",
                                   code="unknown_name", details={"kind": kind, "name": name})
            known = list(items(source))
            if item not in known:
                listed = ", ".join(known) or "none"
                raise CompileError(f"source {prefix} has no {kind} {item!r}{_close(item, known)}; "
                                   f"its {kind}s: {listed}", code="unknown_name", details={"kind": kind, "name": name})
            return prefix, item
        candidates = [source for source, defined in self.sources.items() if name in items(defined)]
        if len(candidates) == 1:
            return candidates[0], name
        if candidates:
            qualified = [f"{source}.{name}" for source in candidates]
            raise CompileError(f"{kind} {name!r} is ambiguous: {', '.join(qualified)}; qualify it",
                               code="ambiguous_name", details={"kind": kind, "name": name, "candidates": qualified})
        everything = [f"{s}.{i}" for s, defined in self.sources.items() for i in items(defined)]
        hint = _close(name, [*everything, *(q.split(".", 1)[1] for q in everything)])
        raise CompileError(f"unknown {kind} {name!r}{hint}", code="unknown_name",
                           details={"kind": kind, "name": name})

    def measure(self, name: str) -> MeasureRef:
        source, item = self._lookup("measure", name, self._measure_names)
        return self.measure_of(source, item)

    def _measure_names(self, source: Source) -> list[str]:
        return [m.name for m in source.measures] + [n for s, n in self.adhoc if s == source.name]

    def measure_of(self, source: str, name: str) -> MeasureRef:
        found = self.adhoc.get((source, name))
        if found is not None:
            return found
        declared = self.sources[source].measure(name)
        if declared is None:
            raise CompileError(f"source {source} has no measure {name!r}", code="unknown_name",
                               details={"kind": "measure", "name": f"{source}.{name}"})
        return MeasureRef.of(source, declared)

    def dimension(self, name: str) -> tuple[str, str]:
        return self._lookup("dimension", name, lambda s: [c.name for c in s.columns])

    def segment(self, name: str) -> Predicate:
        source, item = self._lookup("segment", name, lambda s: [g.name for g in s.segments])
        segment = next(g for g in self.sources[source].segments if g.name == item)
        return self.predicate(segment.filter, kind="segment", default_source=source, label=f"{source}.{item}")

    # --- ad hoc measures --------------------------------------------------------------------------

    def add_adhoc(self, measure: AdHocMeasure) -> MeasureRef:
        what = f"ad hoc measure {measure.name!r}"
        if measure.agg != "count" and not measure.expr:
            raise CompileError(f"{what}: agg {measure.agg} needs an expr", code="invalid_measure")
        qualifiers: set[str] = set()
        for text in (measure.expr, measure.filter):
            if text:
                tree = parse_sql(text, self.dialect, what=what)
                qualifiers |= {c.table for c in tree.find_all(exp.Column) if c.table}
        source = measure.source
        if source is None:
            if len(qualifiers) != 1:
                why = "its columns name several sources" if qualifiers else "no source is given"
                raise CompileError(f"{what}: {why}; an ad hoc measure reads one source: set source: or qualify "
                                   "its columns (orders.amount)", code="invalid_measure")
            source = next(iter(qualifiers))
        if source not in self.sources:
            raise CompileError(f"{what}: unknown source {source!r}{_close(source, self.sources)}",
                               code="unknown_name", details={"kind": "source", "name": source})
        if qualifiers - {source}:
            raise CompileError(f"{what}: reads {', '.join(sorted(qualifiers - {source}))} besides {source}; an ad hoc "
                               "measure reads one source's columns", code="invalid_measure")
        if self.sources[source].measure(measure.name) is not None or (source, measure.name) in self.adhoc:
            raise CompileError(f"{what}: {source} already has a measure of that name; choose another name",
                               code="invalid_measure")
        ref = MeasureRef(source, measure.name, measure.agg, measure.expr, measure.filter, adhoc=True)
        self.adhoc[(source, measure.name)] = ref
        return ref

    # --- derived measures -------------------------------------------------------------------------

    def derived_refs(self, measure: MeasureRef) -> list[MeasureRef]:
        """The measures a derived measure's expr names (all of its own source)."""
        tree = parse_sql(measure.expr or "", self.dialect, what=f"derived measure {measure.qualified}")
        refs: list[MeasureRef] = []
        for node in tree.find_all(exp.Column):
            if node.table and node.table != measure.source:
                raise CompileError(f"derived measure {measure.qualified} names {node.sql()}: a derived measure "
                                   f"combines measures of its own source ({measure.source})", code="invalid_measure")
            try:
                ref = self.measure_of(measure.source, node.name)
            except CompileError:
                known = ", ".join(self._measure_names(self.sources[measure.source]))
                raise CompileError(f"derived measure {measure.qualified} names {node.name!r}, which is not a measure "
                                   f"of {measure.source} (its measures: {known})", code="invalid_measure") from None
            if ref not in refs:
                refs.append(ref)
        return refs

    def base_measures(self, measure: MeasureRef, stack: tuple[str, ...] = ()) -> list[MeasureRef]:
        """The non-derived measures a measure needs, derived ones expanded; a cycle is an error."""
        if measure.agg != "derived":
            return [measure]
        if measure.qualified in stack:
            cycle = " -> ".join([*stack[stack.index(measure.qualified):], measure.qualified])
            raise CompileError(f"derived measures form a cycle: {cycle}; break it", code="derived_cycle",
                               details={"cycle": cycle})
        found: list[MeasureRef] = []
        for ref in self.derived_refs(measure):
            for base in self.base_measures(ref, (*stack, measure.qualified)):
                if base not in found:
                    found.append(base)
        return found

    # --- filters ----------------------------------------------------------------------------------

    def predicate(self, text: str, *, kind: str = "filter", default_source: str | None = None,
                  label: str | None = None) -> Predicate:
        """``text`` parsed, each column replaced by its definition over its source's alias."""
        tree = parse_sql(text, self.dialect, what=kind)
        if tree.find(exp.AggFunc) is not None:
            raise CompileError(f"{kind} {text!r} aggregates; {kind}s apply to rows before aggregation and filtering "
                               "on measure values is not supported (sort with order_by and limit instead)",
                               code="invalid_filter", details={kind: text})
        used: set[str] = set()
        for node in list(tree.find_all(exp.Column)):
            if node.find_ancestor(exp.Select) is not None:
                continue
            source = self._column_source(node, kind, text, default_source)
            used.add(source)
            replacement = column_sql(self.sources[source], node.name, self.dialect)
            if node is tree:
                tree = replacement
            else:
                node.replace(replacement)
        return Predicate(kind, label or text, tree, frozenset(used))

    def _column_source(self, node: exp.Column, kind: str, text: str, default_source: str | None) -> str:
        if len(node.parts) > 2:
            raise CompileError(f"{kind} {text!r}: write columns as source.column, not {node.sql()}",
                               code="invalid_filter")
        if node.table:
            if node.table not in self.sources:
                raise CompileError(f"{kind} {text!r}: unknown source {node.table!r}{_close(node.table, self.sources)}",
                                   code="unknown_name", details={"kind": "source", "name": node.table})
            source = self.sources[node.table]
            if source.column(node.name) is None and node.name in self._measure_names(source):
                raise self._measure_in_filter(kind, text, f"{node.table}.{node.name}")
            return node.table
        if default_source is not None:
            return default_source
        owners = [s for s, source in self.sources.items() if node.name in self._measure_names(source)
                  and source.column(node.name) is None]
        if owners and not any(source.column(node.name) for source in self.sources.values()):
            raise self._measure_in_filter(kind, text, f"{owners[0]}.{node.name}")
        try:
            return self._lookup("dimension", node.name, lambda s: [c.name for c in s.columns])[0]
        except CompileError as exc:
            if exc.code != "unknown_name":
                raise
            raise CompileError(f"{kind} {text!r}: {exc.message}; a column that is not a declared dimension must be "
                               f"qualified as source.column (e.g. orders.{node.name})", code=exc.code,
                               details=exc.details) from None

    @staticmethod
    def _measure_in_filter(kind: str, text: str, measure: str) -> CompileError:
        return CompileError(f"{kind} {text!r} names the measure {measure}; {kind}s apply to rows before aggregation, "
                            "and filtering on measure values is not supported (sort with order_by and limit instead)",
                            code="invalid_filter", details={kind: text, "measure": measure})


def _close(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""
