"""The demo's wiki pages, as ``wiki.write`` ops: a playbook, a warning, and a note superseded by a newer one."""

from __future__ import annotations

import orjson

PAGES: tuple[dict[str, object], ...] = (
    {"key": "sales/revenue-playbook", "title": "How we report revenue",
     "summary": "Revenue counts delivered and shipped orders, converted to USD on the order date.",
     "tags": ["revenue", "orders", "finance"], "kind": "pattern",
     "refs": ["sales/refunds-are-separate", "sales/revenue-definition-2025"],
     "body": (
         "1. Start from `sales.orders` and keep `status IN ('delivered', 'shipped')`.\n"
         "2. Convert with `finance.fx_rates` on `CAST(ordered_at AS DATE)` and `currency`.\n"
         "3. Group by `date_trunc('month', ordered_at)` for the monthly report.\n"
         "4. Subtract refunds separately (see the warning); never filter `returned` orders out instead.\n")},
    {"key": "sales/refunds-are-separate", "title": "Refunds live in finance, not in order status",
     "summary": "A delivered order can still be partly refunded: net revenue needs finance.refunds.",
     "tags": ["revenue", "refunds"], "kind": "warning", "relevance": ["always"],
     "body": (
         "About 3% of delivered orders get a partial refund. `sales.orders.status` stays `delivered`, so\n"
         "counting only `returned` orders under-states refunds. Join `finance.refunds` through\n"
         "`finance.payments.order_id` (DuckDB cannot declare that cross-schema key; the scan infers it).\n")},
    {"key": "sales/revenue-definition-2024", "title": "Revenue definition (2024, outdated)",
     "summary": "Old rule: revenue = all orders except cancelled. Superseded.",
     "tags": ["revenue"], "kind": "note",
     "body": "We used to count every order that was not cancelled, including returns.\n"},
    {"key": "sales/revenue-definition-2025", "title": "Revenue definition (current)",
     "summary": "Revenue = delivered + shipped orders, in USD, minus refunds for net revenue.",
     "tags": ["revenue"], "kind": "rule", "relations": {"supersedes": ["sales/revenue-definition-2024"]},
     "refs": ["sales/refunds-are-separate"],
     "body": "Since 2025 returns and cancellations are excluded, and refunds are netted from finance.refunds.\n"},
)


def write_ops() -> str:
    """One batch of wiki.write ops in the DSL's JSON form (values with quotes and newlines need no escaping)."""
    return orjson.dumps([{"verb": "wiki.write", "args": page} for page in PAGES]).decode()
