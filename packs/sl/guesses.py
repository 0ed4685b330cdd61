"""What ``sl.bootstrap`` guesses a table's numeric columns mean, and the measures that follow (ADR 0033).

A column's words (``unit_price`` -> unit, price) decide:

* an **amount** (amount, total, subtotal, cost, fee, freight, shipping, tax, revenue, sales, charge, paid,
  spend) or a **quantity** (quantity, qty, units, count) is additive: ``sum``; a balance is not listed (it
  is a state, and summing it over time double counts);
* a **price** or a **rate** (price, rate, ratio, percent, pct, discount, score, rating, margin, and anything
  per unit: ``unit_cost``, ``cost_per_item``, ``avg_...``) is not: a sum of prices means nothing, so it is
  averaged (``avg``) and stays a dimension;
* ``total`` or ``amount`` in the name wins over a price word (``total_price`` is summed);
* any other number (``length``, ``year``, ``rental_duration``) is left a dimension.

A ``revenue`` measure (``sum(price * quantity)``) is derived only when the table has exactly one price and
one quantity, so that price x quantity per row is evident. Every guess is written, with its reason, into
the source's ``descriptions.bootstrap`` for a reviewer to judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Meaning = Literal["amount", "quantity", "price", "none"]

_WORD_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
AMOUNT_WORDS = frozenset({"amount", "amt", "total", "subtotal", "cost", "costs", "fee", "fees", "freight", "shipping",
                          "tax", "taxes", "revenue", "sales", "charge", "charges", "paid", "spend", "spent"})
QUANTITY_WORDS = frozenset({"quantity", "qty", "units", "count"})
PRICE_WORDS = frozenset({"price", "prices", "rate", "ratio", "percent", "percentage", "pct", "discount", "score",
                         "rating", "margin", "avg", "average", "mean"})
PER_UNIT_WORDS = frozenset({"unit", "per", "each"})
WINS_OVER_PRICE = frozenset({"total", "amount", "amt", "subtotal"})


def name_words(name: str) -> list[str]:
    """``unitPrice`` / ``unit_price`` -> ``["unit", "price"]``."""
    return [word.lower() for part in re.split(r"[_\W]+", name) for word in _WORD_RE.findall(part)]


def meaning(name: str) -> Meaning:
    words = set(name_words(name))
    money = words & (AMOUNT_WORDS | PRICE_WORDS)
    if words & WINS_OVER_PRICE:
        return "amount"
    if words & PRICE_WORDS or (money and words & PER_UNIT_WORDS):
        return "price"
    if words & AMOUNT_WORDS:
        return "amount"
    if words & QUANTITY_WORDS:
        return "quantity"
    return "none"


@dataclass
class Guesses:
    measures: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # one sentence per guess, for descriptions.bootstrap

    def description(self) -> str | None:
        if not self.reasons:
            return None
        return "sl.bootstrap guessed from the column names: " + "; ".join(self.reasons) + "."


def guess(table: str, columns: list[Mapping[str, Any]], renamed: Mapping[str, str], taken: set[str],
          count_name: str, keys: set[str]) -> Guesses:
    """Measures of one table: a row count, then one per numeric column whose name says what it is.

    ``columns`` are shard columns (name, type, dimensionType, primaryKey), ``renamed`` maps each to its source
    column name, ``taken`` holds the names in use (the measures' names are added to it), ``keys`` the
    columns of foreign keys (never measures)."""
    out = Guesses()
    out.measures.append({"name": free_name(count_name, taken), "agg": "count",
                         "description": f"Number of {table} rows"})
    prices: list[str] = []
    quantities: list[str] = []
    unclear: list[str] = []
    for column in columns:
        original = str(column["name"])
        if not _numeric_fact(column) or original in keys:
            continue
        cname = renamed[original]
        kind = meaning(original)
        if kind in ("amount", "quantity"):
            what = "an amount" if kind == "amount" else "a quantity"
            name = f"sum_{cname}" if cname.lower().startswith("total") else f"total_{cname}"
            out.measures.append({"name": free_name(name, taken), "agg": "sum", "expr": cname,
                                 "description": f"Sum of {original} ({what}: adds up across rows)"})
            out.reasons.append(f"{original} is {what}, summed")
            if kind == "quantity":
                quantities.append(cname)
        elif kind == "price":
            out.measures.append({"name": free_name(f"avg_{cname}", taken), "agg": "avg", "expr": cname,
                                 "description": f"Average of {original} (a price or rate: a sum of it means nothing)"})
            out.reasons.append(f"{original} is a price or rate, averaged, never summed")
            if _unit_price(original):
                prices.append(cname)
        else:
            unclear.append(original)
    if len(prices) == 1 and len(quantities) == 1:
        price, quantity = prices[0], quantities[0]
        out.measures.append({"name": free_name("revenue", taken), "agg": "sum", "expr": f"{price} * {quantity}",
                             "description": f"Sum of {price} x {quantity} per row (a price and a quantity on one row)"})
        discounts = [str(c["name"]) for c in columns if "discount" in name_words(str(c["name"]))]
        note = f"; {', '.join(discounts)} is not applied to it" if discounts else ""
        out.reasons.append(f"revenue is {price} x {quantity}, summed{note}")
    if unclear:
        out.reasons.append(f"{', '.join(unclear)}: numbers whose names say nothing additive, left as dimensions")
    return out


def _unit_price(name: str) -> bool:
    """A price per item (times a quantity it gives money), not a rate, a ratio or an average."""
    words = set(name_words(name))
    return bool(words & {"price", "prices"} or (words & PER_UNIT_WORDS and words & AMOUNT_WORDS)) and not (
        words & {"avg", "average", "mean"})


def misread(measure: Mapping[str, Any]) -> bool:
    """A sum over a single column that reads as a price or rate (an earlier bootstrap's guess, for example)."""
    expr = measure.get("expr")
    return measure.get("agg") == "sum" and isinstance(expr, str) and expr.isidentifier() and meaning(expr) == "price"


def _numeric_fact(column: Mapping[str, Any]) -> bool:
    """A number that is neither a key nor an identifier."""
    name = str(column["name"]).lower()
    return (column.get("type") in ("number", "integer") and column.get("dimensionType") != "identifier"
            and not column.get("primaryKey") and not name.endswith("_id") and name != "id")


def free_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... the first not in ``taken``; it is added to ``taken``."""
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate)
    return candidate
