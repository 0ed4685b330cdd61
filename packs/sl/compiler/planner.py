"""Plan a semantic-layer query: which sources, joined how, aggregated where.

The pieces of a request resolve to a measure source per measure, and the *required* sources:
those of the dimensions, filters and segments. Planning then works per measure source (a
*group*: the requested measures of one source, derived ones expanded to the base measures they
need, cycles refused):

1. **Join tree.** ``graph.join_tree``: shortest paths over the join graph from the group's source
   to every required source, one_to_many hops weighing 10 and many_to_one / one_to_one hops 1.
   Equally short paths through different sources are broken in favour of the path that brings in
   fewest sources the query does not otherwise use; if that does not decide, the query is refused
   as ``ambiguous_join_path`` with the candidates. ``via`` names the path: its sources are required
   too and must lie on the way to what the query reads, its join roles keep only that join between
   the two sources they connect (``invalid_via`` otherwise). Equally short paths that differ only in which of
   several joins between the same two sources they take use the first declared join, with a note.
   Required sources the group's source cannot reach: ``disconnected_sources``, naming them.
2. **Fan-out.** A tree node is on the group's *own side* when the path to it is only many_to_one /
   one_to_one joins: joining it cannot duplicate the measure's rows. A one_to_many join leaving the
   own side is a *crossing*; everything below it fans out. Without crossings the group is one flat
   ``SELECT ... GROUP BY``. With crossings the measure is **pre-aggregated**: a CTE groups the own
   side by the own-side dimensions plus the crossing join keys, computing partial aggregates (sum,
   count, min, max; avg as sum and count). Each crossing subtree becomes a *bridge* CTE, ``SELECT
   DISTINCT`` join keys and the dimensions living there, so a measure row is counted once per
   distinct dimension value rather than once per joined row. The group then joins the partials to
   the bridges and re-aggregates: sum of sums, sum of counts, min of mins, max of maxes, and
   ``sum(sum) / sum(count)`` for avg. count_distinct and median cannot be re-aggregated from
   partials and are refused (``fan_out_not_reaggregable``) when a crossing is needed.
3. **Filters and segments** go into the WHERE of the group's flat query or pre-aggregation; a filter
   reading a source across a crossing (it would decide per measure row whether *any* fanned-out
   row matches, and is easy to misread) is refused (``fan_out_filter``) with the reason.
4. **Chasm traps.** Measures of several sources are never aggregated over one join: each group is
   computed in its own CTE grouped by the requested dimensions, and the groups are combined by a
   LEFT JOIN from a *dimension spine* (the UNION of the groups' dimension values) with null-safe
   equality on every dimension. Without dimensions the one-row groups are cross joined.

``time_grain`` truncates the time dimensions (DATE_TRUNC, rendered per dialect by sqlglot).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packs.sl.compiler.graph import Edge, JoinGraph, JoinTree, build_graph, join_tree
from packs.sl.compiler.model import AdHocMeasure, CompileError, DimRef, MeasureRef, Predicate
from packs.sl.compiler.resolve import Catalog
from packs.sl.models import Source

REAGGREGABLE = {"sum": "sum of sums", "count": "sum of counts", "min": "min of mins", "max": "max of maxes",
                "avg": "sum of sums / sum of counts"}


@dataclass
class Group:
    source: str
    measures: list[MeasureRef]  # requested, in request order
    base: list[MeasureRef]  # non-derived measures they need
    tree: JoinTree
    crossings: list[Edge]  # one_to_many joins leaving the own side; empty: no pre-aggregation

    @property
    def own_side(self) -> list[str]:
        crossed = {node for edge in self.crossings for node in self.tree.subtree(edge.right)}
        return [node for node in self.tree.nodes if node not in crossed]

    @property
    def cte(self) -> str:
        return f"{self.source}__agg"


@dataclass
class Plan:
    dialect: str
    groups: list[Group]
    dims: list[DimRef]
    outputs: dict[str, str]  # measure qualified name -> output column
    predicates: list[Predicate]
    order_by: list[tuple[str, bool]]  # (output column, descending)
    limit: int | None
    time_grain: str | None
    notes: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        joins = [{**edge.describe(), "measureSource": g.source} for g in self.groups for edge in g.tree.edges]
        pre = [{"source": g.source, "measures": [m.qualified for m in g.measures],
                "grain": [d.qualified for d in self.dims if d.source in g.own_side]
                + [f"{e.left}.{a}" for e in g.crossings for a, _ in e.keys],
                "fanOutJoins": [e.describe() for e in g.crossings],
                "reaggregation": {m.qualified: REAGGREGABLE[m.agg] for m in g.base}}
               for g in self.groups if g.crossings]
        return {
            "dialect": self.dialect,
            "measures": [m.qualified for g in self.groups for m in g.measures],
            "dimensions": [d.qualified for d in self.dims],
            "sources": sorted({node for g in self.groups for node in g.tree.nodes}),
            "joins": joins,
            "preAggregations": pre,
            "combine": None if len(self.groups) < 2 else {
                "strategy": "dimension spine LEFT JOIN" if self.dims else "cross join of one-row groups",
                "groups": [g.cte for g in self.groups]},
            "filters": [p.text for p in self.predicates if p.kind == "filter"],
            "segments": [p.text for p in self.predicates if p.kind == "segment"],
            "timeGrain": self.time_grain,
            "orderBy": [f"{name} desc" if desc else name for name, desc in self.order_by],
            "limit": self.limit,
            "notes": self.notes,
        }


def plan_query(sources: Mapping[str, Source], *, measures: list[str | AdHocMeasure], dimensions: list[str],
               filters: list[str], segments: list[str], time_grain: str | None, order_by: list[str],
               limit: int | None, dialect: str, via: list[str] | None = None) -> tuple[Plan, Catalog]:
    if not measures:
        raise CompileError("name at least one measure (source.measure)", code="invalid_args")
    catalog = Catalog(sources, dialect)
    refs = [catalog.add_adhoc(m) if isinstance(m, AdHocMeasure) else catalog.measure(m) for m in measures]
    refs = list(dict.fromkeys(refs))
    dim_names = list(dict.fromkeys(catalog.dimension(name) for name in dimensions))
    outputs = _output_names([(s, n) for s, n in dim_names] + [(m.source, m.name) for m in refs])
    notes: list[str] = []
    dims = []
    for source, name in dim_names:
        column = sources[source].column(name)
        assert column is not None
        grain = time_grain if column.type == "time" else None
        dims.append(DimRef(source, column, outputs[(source, name)], grain))
    if time_grain and not any(d.time_grain for d in dims):
        notes.append(f"time_grain {time_grain} applies to time dimensions, and none was requested")
    predicates = [catalog.predicate(text) for text in filters] + [catalog.segment(name) for name in segments]
    required = {d.source for d in dims} | {s for p in predicates for s in p.sources}
    graph = build_graph(sources)
    via_sources, via_roles = _resolve_via(via or [], sources, graph)
    if via_roles:
        graph = graph.restricted(via_roles)
    groups: list[Group] = []
    for source in dict.fromkeys(m.source for m in refs):
        wanted = [m for m in refs if m.source == source]
        base = list(dict.fromkeys(b for m in wanted for b in catalog.base_measures(m)))
        tree = join_tree(graph, source, required | set(via_sources), via_sources)
        _check_via(tree, required, via_sources, via_roles)
        notes += [n for n in tree.notes if n not in notes]
        crossings = [edge for edge in tree.edges if edge.fans_out and not tree.fans_out(edge.left)]
        group = Group(source, wanted, base, tree, crossings)
        _check_fan_out(group, dims, predicates)
        groups.append(group)
    if len(groups) > 1:
        notes.append(f"measures of {len(groups)} sources ({', '.join(g.source for g in groups)}) are aggregated "
                     "separately and combined on the dimensions, so none multiplies another")
    for group in groups:
        if group.crossings:
            fanned = ", ".join(f"{e.left} -> {e.right}" for e in group.crossings)
            notes.append(f"{group.source} measures are pre-aggregated before the one_to_many join(s) {fanned}: "
                         f"each {group.source} row counts once per distinct value of the dimensions beyond, so "
                         "totals across those values can exceed the overall total")
    labels = {**{d.qualified: d.output for d in dims}, **{m.qualified: outputs[(m.source, m.name)] for m in refs}}
    plan = Plan(dialect, groups, dims, {m.qualified: outputs[(m.source, m.name)] for m in refs}, predicates,
                [_order_item(item, labels) for item in order_by], limit, time_grain, notes)
    return plan, catalog


def _resolve_via(via: list[str], sources: Mapping[str, Source], graph: JoinGraph) -> tuple[list[str], list[str]]:
    """``via`` split into source names and join roles; anything else is an unknown name."""
    roles = graph.roles()
    named, chosen = [], []
    for item in dict.fromkeys(via):
        if item in sources:
            named.append(item)
        elif item in roles:
            chosen.append(item)
        else:
            known = sorted({*sources, *roles})
            close = difflib.get_close_matches(item, known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; sources: {', '.join(sorted(sources))}"
            raise CompileError(f"via {item!r} is neither a source nor a join role of this connection{hint}",
                               code="unknown_name", details={"kind": "via", "name": item})
    return named, chosen


def _check_via(tree: JoinTree, required: set[str], via_sources: list[str], via_roles: list[str]) -> None:
    """Each ``via`` source lies on the way to something the query reads, each role is a join the tree takes."""
    ways = {node for target in required if target in tree.parent or target == tree.root
            for node in [tree.root, target, *(edge.left for edge in tree.path(target))]}
    for source in via_sources:
        if source not in ways:
            raise CompileError(f"via {source!r}: the query's dimensions and filters are reached from {tree.root} "
                               f"without going through {source}; name a source on the path, or drop it from via",
                               code="invalid_via", details={"via": source, "measure_source": tree.root})
    used = {edge.role for edge in tree.parent.values() if edge.role}
    for role in via_roles:
        if role not in used:
            raise CompileError(f"via {role!r}: the query reaches {', '.join(sorted(required)) or 'nothing'} from "
                               f"{tree.root} without that join; name a join role on the path, or drop it from via",
                               code="invalid_via", details={"via": role, "measure_source": tree.root})


def _check_fan_out(group: Group, dims: list[DimRef], predicates: list[Predicate]) -> None:
    if not group.crossings:
        return
    tree = group.tree
    for predicate in predicates:
        fanned = sorted(s for s in predicate.sources if tree.fans_out(s))
        if fanned:
            path = " -> ".join([group.source, *(e.right for e in tree.path(fanned[0]))])
            raise CompileError(
                f"{predicate.kind} {predicate.text!r} reads {', '.join(fanned)}, which {group.source} reaches only "
                f"through a one_to_many join ({path}): each {group.source} row would match many rows there, so "
                f"the filter would keep a {group.source} row when any of them matches. Group by that dimension "
                "instead and read the rows you need, filter on a column of the measure's side, or give one measure "
                "the condition as an ad hoc measure filter",
                code="fan_out_filter", details={"filter": predicate.text, "measure_source": group.source,
                                                "path": path})
    stuck = [m for m in group.base if m.agg not in REAGGREGABLE]
    if stuck:
        dim = next(d for d in dims if tree.fans_out(d.source))
        path = " -> ".join([group.source, *(e.right for e in tree.path(dim.source))])
        names = ", ".join(f"{m.qualified} ({m.agg})" for m in stuck)
        raise CompileError(
            f"{names} cannot be computed by {dim.qualified}: reaching it from {group.source} crosses a one_to_many "
            f"join ({path}), so the measure must be pre-aggregated and re-aggregated, and a {stuck[0].agg} cannot "
            "be re-aggregated from partial results. Drop that dimension or use a sum/count/min/max/avg measure",
            code="fan_out_not_reaggregable",
            details={"measures": [m.qualified for m in stuck], "dimension": dim.qualified, "path": path})


def _output_names(items: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Bare names unless two outputs share one; then ``source_name`` (with a number if still taken)."""
    bare = [name for _, name in items]
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for source, name in items:
        chosen = name if bare.count(name) == 1 else f"{source}_{name}"
        candidate, n = chosen, 2
        while candidate in taken:
            candidate, n = f"{chosen}_{n}", n + 1
        taken.add(candidate)
        names[(source, name)] = candidate
    return names


def _order_item(item: str, labels: dict[str, str]) -> tuple[str, bool]:
    words = item.split()
    descending = len(words) == 2 and words[1].lower() == "desc"
    if len(words) not in (1, 2) or (len(words) == 2 and words[1].lower() not in ("asc", "desc")):
        raise CompileError(f"order_by item {item!r}: write a measure or dimension name, optionally followed by "
                           "asc or desc", code="invalid_args")
    name = words[0]
    if name in labels.values():
        return name, descending
    candidates = [q for q in labels if q == name or q.split(".", 1)[1] == name]
    if len(candidates) == 1:
        return labels[candidates[0]], descending
    if candidates:
        raise CompileError(f"order_by {name!r} is ambiguous: {', '.join(candidates)}; qualify it",
                           code="ambiguous_name", details={"candidates": candidates})
    listed = ", ".join(labels)
    raise CompileError(f"order_by {name!r} is not among the query's measures and dimensions ({listed}); add it to "
                       "measures or dimensions first", code="unknown_name", details={"name": name})
