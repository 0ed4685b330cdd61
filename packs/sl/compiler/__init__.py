"""The semantic-layer compiler: measures by dimensions over a connection's sources, as one SQL statement.

``compile_query`` is pure: sources in, SQL text and a plan out. How the join tree is chosen and
how fan-out and chasm traps are avoided is described in ``planner``; ``sqlbuild`` renders the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packs.sl.compiler.model import TIME_GRAINS, AdHocMeasure, Compiled, CompileError
from packs.sl.compiler.planner import plan_query
from packs.sl.compiler.sqlbuild import SqlBuilder
from packs.sl.models import Source

__all__ = ["TIME_GRAINS", "AdHocMeasure", "CompileError", "Compiled", "compile_query"]


def compile_query(sources: Mapping[str, Source], *, measures: Sequence[str | AdHocMeasure],
                  dimensions: Sequence[str] = (), filters: Sequence[str] = (), segments: Sequence[str] = (),
                  time_grain: str | None = None, order_by: Sequence[str] = (), limit: int | None = None,
                  dialect: str, via: Sequence[str] = ()) -> Compiled:
    """Compile measures by dimensions (names ``source.name``, unqualified when unique) to SQL in ``dialect``."""
    if time_grain is not None and time_grain not in TIME_GRAINS:
        raise CompileError(f"time_grain {time_grain!r} is not one of {', '.join(TIME_GRAINS)}", code="invalid_args")
    if limit is not None and limit < 0:
        raise CompileError(f"limit must be >= 0, got {limit}", code="invalid_args")
    plan, catalog = plan_query(sources, measures=list(measures), dimensions=list(dimensions), filters=list(filters),
                               segments=list(segments), time_grain=time_grain, order_by=list(order_by), limit=limit,
                               dialect=dialect.lower(), via=list(via))
    sql = SqlBuilder(plan, catalog).build()
    return Compiled(sql, plan.describe(), list(plan.notes))
