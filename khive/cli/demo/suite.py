"""The demo's retrieval suite (``bench/retrieval-suite.json``): everyday questions about the shop and what
should answer each, so ``khive doctor`` measures hit@3 on the demo the way a team would on its own project.

The questions are written in an analyst's words (synonyms, abbreviations), each with every id that counts
as a right answer among the first three refs: the table, its semantic-layer source, or the wiki page.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from khive.atomicfile import replace_bytes

SUITE = "bench/retrieval-suite.json"
CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("how do we report revenue", ("sales/revenue-playbook", "sales/revenue-definition-2025")),
    ("monthly revenue by region", ("sales.orders", "orders", "sales.regions", "regions")),
    ("refund rate by product category", ("finance.refunds", "refunds", "sales/refunds-are-separate")),
    ("which customers churned after a support ticket", ("support.tickets", "tickets", "sales.customers")),
    ("csat score per support agent", ("support.csat_responses", "csat_responses", "support.agents", "agents")),
    ("avg order value by store", ("sales.orders", "orders", "sales.stores", "stores")),
    ("qty sold per product", ("sales.order_items", "order_items", "catalog.products", "products")),
    ("suppliers with the longest lead time", ("catalog.suppliers", "suppliers")),
    ("price history of a product", ("catalog.price_changes", "price_changes")),
    ("email campaign clicks and opens", ("marketing.email_events", "email_events", "marketing.campaigns")),
    ("coupon codes used on orders", ("marketing.coupons", "coupons", "sales.orders")),
    ("exchange rates to USD", ("finance.fx_rates", "fx_rates")),
    ("shipments delivered late by carrier", ("sales.shipments", "shipments")),
    ("payments by payment method", ("finance.payments", "payments")),
    ("customers by signup country", ("sales.customers", "customers")),
)


def write_suite(root: Path) -> bool:
    """Write the suite atomically unless the project already has one (a team's own stays). True when written."""
    path = root / SUITE
    if path.exists():
        return False
    cases = [{"query": query, "expected": list(expected)} for query, expected in CASES]
    replace_bytes(path, orjson.dumps({"cases": cases}, option=orjson.OPT_INDENT_2))
    return True
