"""What the batch parse learns about one template: tables, columns by clause, join pairs.

Every table name is a catalog key (``schema.name``, or ``catalog.schema.name`` when the connection's
scan spans several catalogs); tables the scan does not know stay as written in ``unknown_tables`` and
take no part in bucketing. Tuples are sorted and unique, so two parses of the same template compare
(and serialize) equal whatever process produced them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from khive.gcpause import paused_gc as shared_pause

Clause = Literal["select", "where", "join", "groupBy", "orderBy", "having"]
CLAUSES: tuple[Clause, ...] = ("select", "where", "join", "groupBy", "orderBy", "having")


# Plain tuples, not NamedTuples: CPython stops tracking a tuple of strings in the cyclic GC, a tuple
# subclass never, and a run holds millions of these.
ColumnUse = tuple[str, str, str]  # (table, clause, column); clause is one of CLAUSES
JoinEdge = tuple[str, str, str, str]  # (left table, left column, right table, right column); left sorts first


def join_edge(a: tuple[str, str], b: tuple[str, str]) -> JoinEdge:
    """The edge between ``(table, column)`` ``a`` and ``b``, in its one canonical orientation."""
    (lt, lc), (rt, rc) = sorted((a, b))
    return (lt, lc, rt, rc)


@dataclass(frozen=True, slots=True)
class ParsedTemplate:
    template_id: str
    tables: tuple[str, ...] = ()
    unknown_tables: tuple[str, ...] = ()
    columns: tuple[ColumnUse, ...] = ()
    joins: tuple[JoinEdge, ...] = ()
    error: str | None = None  # set when sqlglot could not parse or scope the template

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> list[Any]:
        """A compact, positional form for the parse cache."""
        return [self.template_id, list(self.tables), list(self.unknown_tables),
                [list(c) for c in self.columns], [list(j) for j in self.joins], self.error]

    @classmethod
    def from_json(cls, data: list[Any], shared: dict[Any, Any] | None = None) -> ParsedTemplate:
        """The inverse of ``to_json``. ``shared`` (one dict per batch) makes equal column uses and joins
        one object: a batch repeats a few thousand of them tens of thousands of times."""
        template_id, tables, unknown, columns, joins, error = data
        if shared is None:
            shared = {}
        uses = tuple([shared.setdefault(key, key) for key in map(tuple, columns)])
        edges = tuple([shared.setdefault(key, key) for key in map(tuple, joins)])
        return cls(template_id, tuple(tables), tuple(unknown), uses, edges, error)


_FREEZE: ContextVar[bool] = ContextVar("historic_sql_freeze_built", default=False)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Build many small records without the cyclic GC rescanning them after every few hundred.

    Tens of thousands of parse results are millions of tuples; with the collector on, loading them
    costs several times the loading itself. Nothing built here is cyclic, so pausing loses nothing.
    Inside ``frozen_until_exit`` what was built is then frozen, not left for the next collections. The
    pause is the shared one (``khive.gcpause``), counted across the daemon's concurrent requests.
    """
    with shared_pause():
        try:
            yield
        finally:
            if _FREEZE.get():
                gc.freeze()


@contextmanager
def frozen_until_exit() -> Iterator[None]:
    """A scope (an ingest) whose records ``paused_gc`` hides from the cyclic collector until the scope ends.

    An ingest builds a few hundred thousand acyclic records (templates, parse results) in bursts and keeps
    them to the end. Left in the young generation, each burst is traversed by the next collection of every
    generation: 0.4 s of an unchanged 50,000-template rerun. ``gc.freeze`` moves everything alive out of
    the collector's sight (refcounting still frees it); leaving the scope puts it all back
    (``gc.unfreeze``), so cyclic garbage frozen on the way is collected then. Thread-safe in effect: the
    flag is a context variable (anyio carries it into worker threads), freezing is global and harmless.
    """
    token = _FREEZE.set(True)
    try:
        yield
    finally:
        _FREEZE.reset(token)
        gc.unfreeze()
