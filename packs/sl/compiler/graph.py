"""The join graph of a connection's sources and the join tree a measure source needs.

Nodes are sources; each declared ``joins`` entry is an edge, and its reverse (many_to_one <->
one_to_many, one_to_one <-> one_to_one) is added unless the other source declares it. A join tree
is the union of shortest paths from the measure's source to the sources the query needs, found
with Dijkstra over the cost ``(weight, extra)`` compared in that order:

* ``weight``: 1 per many_to_one / one_to_one hop, ``FAN_OUT_WEIGHT`` (10) per one_to_many hop;
* ``extra``: the number of sources on the path the query does not otherwise need. This is the
  tie-break: among equally heavy paths the one through sources already in the query wins.

Paths that are still tied after that are *ambiguous*. When they differ only in which of several
joins between the same two sources they use (role-playing joins), the first declared join is
taken and a note says so. When they run through different sources, nothing principled picks one
and the query is refused (``ambiguous_join_path``) with the candidate paths, so the caller can
name the path: ``via`` lists sources the tree must go through and join roles it must use (a role
names one of several joins between two sources; ``restricted`` drops the others, ADR 0033).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from packs.sl.compiler.model import CompileError
from packs.sl.models import Source

FAN_OUT_WEIGHT = 10
MAX_LISTED_PATHS = 4
_REVERSE = {"many_to_one": "one_to_many", "one_to_many": "many_to_one", "one_to_one": "one_to_one"}


@dataclass(frozen=True)
class Edge:
    left: str
    right: str
    relationship: str
    keys: tuple[tuple[str, str], ...]  # (column of left, column of right)
    order: int  # declaration order; an implied reverse edge shares its declared edge's number
    declared: bool = True
    role: str | None = None  # the declared join's role; its reverse carries the same

    @property
    def weight(self) -> int:
        return FAN_OUT_WEIGHT if self.relationship == "one_to_many" else 1

    @property
    def fans_out(self) -> bool:
        return self.relationship == "one_to_many"

    def describe(self) -> dict[str, object]:
        return {"from": self.left, "to": self.right, "relationship": self.relationship,
                "on": [{"from": f"{self.left}.{a}", "to": f"{self.right}.{b}"} for a, b in self.keys],
                **({"role": self.role} if self.role else {})}


@dataclass
class JoinGraph:
    edges: dict[str, list[Edge]]  # outgoing edges by source
    dangling: list[str]  # "orders -> stores": joins to sources that are not defined
    into: dict[str, list[Edge]] = field(default_factory=dict)  # incoming edges by source

    def __post_init__(self) -> None:
        for outgoing in self.edges.values():
            for edge in outgoing:
                self.into.setdefault(edge.right, []).append(edge)

    def incoming(self, node: str) -> list[Edge]:
        return self.into.get(node, [])

    def roles(self) -> dict[str, list[Edge]]:
        """role -> the declared joins that carry it (a role is unique per source, not per connection)."""
        found: dict[str, list[Edge]] = {}
        for outgoing in self.edges.values():
            for edge in outgoing:
                if edge.role and edge.declared:
                    found.setdefault(edge.role, []).append(edge)
        return found

    def restricted(self, roles: Iterable[str]) -> JoinGraph:
        """The graph without the joins that compete with a chosen role: between the two sources a chosen role
        joins, only the joins of that role (either way) stay."""
        chosen = [edge for role in roles for edge in self.roles().get(role, [])]
        pairs = {frozenset((edge.left, edge.right)): edge.role for edge in chosen}
        edges = {node: [edge for edge in outgoing
                        if pairs.get(frozenset((edge.left, edge.right)), edge.role) == edge.role]
                 for node, outgoing in self.edges.items()}
        return JoinGraph(edges, self.dangling)


_CACHE: list[tuple[tuple[tuple[str, Source], ...], JoinGraph]] = []  # recent graphs, by their sources' identity
_CACHE_SIZE = 8


def build_graph(sources: Mapping[str, Source]) -> JoinGraph:
    """The join graph; the last few are reused while the same Source objects are passed (they hold them alive)."""
    key = tuple(sources.items())
    for seen, graph in _CACHE:
        if len(seen) == len(key) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(seen, key, strict=True)):
            return graph
    graph = _build_graph(sources)
    _CACHE.insert(0, (key, graph))
    del _CACHE[_CACHE_SIZE:]
    return graph


def _build_graph(sources: Mapping[str, Source]) -> JoinGraph:
    edges: dict[str, list[Edge]] = {name: [] for name in sources}
    dangling: list[str] = []
    declared: set[tuple[str, str, frozenset[tuple[str, str]]]] = set()
    order = 0
    for name, source in sources.items():
        for join in source.joins:
            keys = tuple((key.from_, key.to) for key in join.on)
            if join.to not in sources:
                dangling.append(f"{name} -> {join.to}")
                continue
            edges[name].append(Edge(name, join.to, join.relationship, keys, order, role=join.role))
            declared.add((name, join.to, frozenset(keys)))
            order += 1
    for edge in [edge for outgoing in edges.values() for edge in outgoing]:
        swapped = tuple((b, a) for a, b in edge.keys)
        if (edge.right, edge.left, frozenset(swapped)) not in declared:
            edges[edge.right].append(Edge(edge.right, edge.left, _REVERSE[edge.relationship], swapped, edge.order,
                                          declared=False, role=edge.role))
    for outgoing in edges.values():
        outgoing.sort(key=lambda e: (e.right, e.order))
    return JoinGraph(edges, dangling)


@dataclass
class JoinTree:
    root: str
    parent: dict[str, Edge] = field(default_factory=dict)  # node -> the edge that reaches it
    notes: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        return [self.root, *self.parent]

    @property
    def edges(self) -> list[Edge]:
        """The tree's joins, parents before children."""
        ordered: list[Edge] = []
        pending = [self.root]
        while pending:
            children = self.children(pending.pop(0))
            ordered += children
            pending += [edge.right for edge in children]
        return ordered

    def children(self, node: str) -> list[Edge]:
        return sorted((edge for edge in self.parent.values() if edge.left == node), key=lambda e: (e.order, e.right))

    def path(self, node: str) -> list[Edge]:
        edges: list[Edge] = []
        while node != self.root:
            edge = self.parent[node]
            edges.append(edge)
            node = edge.left
        return edges[::-1]

    def fans_out(self, node: str) -> bool:
        """True when reaching ``node`` from the root crosses a one_to_many join."""
        return any(edge.fans_out for edge in self.path(node))

    def subtree(self, node: str) -> list[str]:
        found = [node]
        for edge in self.children(node):
            found += self.subtree(edge.right)
        return found


Cost = tuple[int, int]


def join_tree(graph: JoinGraph, root: str, required: Iterable[str], named: Iterable[str] = ()) -> JoinTree:
    """The join tree from ``root`` to every ``required`` source (see the module docstring for the rules);
    ``named`` are the required sources the query's ``via`` lists (a note says when one of them chose a path)."""
    needed = set(required) - {root}
    cost: dict[str, Cost] = {root: (0, 0)}
    heap: list[tuple[Cost, str]] = [((0, 0), root)]
    done: set[str] = set()
    while heap:
        here, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for edge in graph.edges.get(node, ()):
            step = _plus(here, edge, needed)
            if edge.right not in cost or step < cost[edge.right]:
                cost[edge.right] = step
                heapq.heappush(heap, (step, edge.right))
    missing = sorted(needed - set(cost))
    if missing:
        hint = f"; joins to undefined sources: {', '.join(graph.dangling)}" if graph.dangling else ""
        raise CompileError(
            f"no chain of joins connects {root} to {', '.join(missing)}; declare a join between them "
            f"(joins: [{{to: ..., on: [{{from: ..., to: ...}}]}}]) or query them separately{hint}",
            code="disconnected_sources", details={"from": root, "unreachable": missing})
    tree = JoinTree(root)
    for target in sorted(needed, key=lambda n: (cost[n], n)):
        _add_path(tree, graph, cost, needed, target, frozenset(named))
    return tree


def _add_path(tree: JoinTree, graph: JoinGraph, cost: dict[str, Cost], needed: set[str], target: str,
              named: frozenset[str]) -> None:
    node = target
    while node != tree.root and node not in tree.parent:
        best = [e for e in graph.incoming(node) if e.left in cost and _plus(cost[e.left], e, needed) == cost[node]]
        lightest = [e for e in graph.incoming(node) if e.left in cost and cost[e.left][0] + e.weight == cost[node][0]]
        via = sorted({e.left for e in best})
        if len(via) > 1:
            paths = [p for left in via for p in _paths(graph, cost, needed, tree.root, left, exact=True)]
            raise CompileError(
                f"the join path from {tree.root} to {target} is ambiguous: equally short paths "
                f"{_or(paths, node)}; name the one you mean with via (e.g. via=[\"{via[0]}\"])",
                code="ambiguous_join_path",
                details={"from": tree.root, "to": target, "paths": [[*p, node] for p in paths]})
        chosen = min(best, key=lambda e: e.order)
        if len(best) > 1:
            keys = " / ".join(_keys(e) for e in sorted(best, key=lambda e: e.order))
            others = [e.role for e in sorted(best, key=lambda e: e.order) if e.role and e is not chosen]
            hint = f"; choose another with via (e.g. via=[\"{others[0]}\"])" if others else ""
            tree.notes.append(f"ambiguous join {chosen.left} -> {node}: {len(best)} joins ({keys}); "
                              f"used the first declared ({_keys(chosen)}){hint}")
        if len({e.left for e in lightest}) > 1:
            paths = [p for left in sorted({e.left for e in lightest})
                     for p in _paths(graph, cost, needed, tree.root, left, exact=False)]
            why = ("as via names it" if chosen.left in named
                   else "which brings in fewest sources the query does not already use")
            tree.notes.append(f"ambiguous join path {tree.root} -> {node}: equally short paths {_or(paths, node)}; "
                              f"chose the one through {chosen.left}, {why}")
        tree.parent[node] = chosen
        node = chosen.left


def _plus(cost: Cost, edge: Edge, needed: set[str]) -> Cost:
    return cost[0] + edge.weight, cost[1] + (edge.right not in needed)


def _paths(graph: JoinGraph, cost: dict[str, Cost], needed: set[str], root: str, node: str, *,
           exact: bool) -> list[list[str]]:
    """Up to MAX_LISTED_PATHS cheapest paths root -> node (source names): by full cost, or by weight only."""
    if node == root:
        return [[root]]
    found: list[list[str]] = []
    for edge in graph.incoming(node):
        if edge.left not in cost:
            continue
        if exact and _plus(cost[edge.left], edge, needed) != cost[node]:
            continue
        if not exact and cost[edge.left][0] + edge.weight != cost[node][0]:
            continue
        for prefix in _paths(graph, cost, needed, root, edge.left, exact=exact):
            if [*prefix, node] not in found:
                found.append([*prefix, node])
            if len(found) >= MAX_LISTED_PATHS:
                return found
    return found


def _or(paths: list[list[str]], node: str) -> str:
    return " or ".join(" -> ".join([*p, node]) for p in paths)


def _keys(edge: Edge) -> str:
    return " and ".join(f"{edge.left}.{a} = {edge.right}.{b}" for a, b in edge.keys)
