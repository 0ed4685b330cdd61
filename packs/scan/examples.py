"""The sample values a ``_schema`` shard shows, chosen so that data churn does not rewrite the shard (ADR 0033).

A scan samples each column's most frequent values (up to ``sample_values.max_values``, most frequent
first); their order and the tail of the list move with every inserted row. The shard shows at most
``SHOWN`` of them, sorted by value, and keeps the ones it shows while every one of them is still among
the values sampled now and the column has not gained values it would show (a small domain that grew).
So one inserted row leaves the shard alone; a value that vanished from the frequent values, or a new
category in a column of few values, is a change in the distribution and refreshes the list.

The chosen list is stored in the run (``samples.examples``), so a shard rebuilt from the run's
``tables.json`` is the same shard; the previous choice is read from the shard itself, which git keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SHOWN = 10


def _order(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)  # SQLite mixes types in one column; within a type, the value's order


def choose(sampled: Sequence[Any], shown: Sequence[Any] | None) -> list[Any]:
    """The values to show: ``shown`` while it still stands (see the module docstring), else a fresh choice."""
    if shown and len(shown) == min(SHOWN, len(sampled)):
        present = {_hashable(v) for v in sampled}
        if all(_hashable(v) in present for v in shown):
            return list(shown)
    return sorted(sampled[:SHOWN], key=_order)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | None) else repr(value)


def stabilize(artifacts: Sequence[dict[str, Any]], shard: Mapping[str, Mapping[str, Any]]) -> None:
    """Give every sampled column of ``artifacts`` its ``samples.examples``, keeping what ``shard`` shows.

    ``shard`` maps ``db.name`` to the table's current shard entry (columns with their ``samples`` list)."""
    for table in artifacts:
        entry = shard.get(f"{table['db']}.{table['name']}") or {}
        before = {column.get("name"): column.get("samples") for column in entry.get("columns") or []
                  if isinstance(column, Mapping)}
        for column in table.get("columns") or []:
            samples = column.get("samples")
            values = (samples or {}).get("values")
            if not values:
                continue
            shown = before.get(column["name"])
            samples["examples"] = choose(values, shown if isinstance(shown, list) else None)
