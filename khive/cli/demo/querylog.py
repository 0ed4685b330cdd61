"""A query log of analyst work on the demo shop: a few thousand executions drawn from templates.

The file is JSONL with ``sql, user, started_at, duration_ms, rows, error``: the query-log file
contract of the historic_sql pack (a file format, so core never imports the pack). Templates vary
their literals (dates, ids, limits, IN lists), a handful of people run most of them, a reporting
service account runs a few on a schedule, and dbt and Looker leave their usual query comments.
One template always fails (a column that does not exist), a health check probes with ``SELECT 1``.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from khive.atomicfile import replace_with

SEED = 8
ANALYSTS = ("ana.lopez", "ben.kowalski", "chloe.martin", "david.kim", "elena.rossi", "farid.haddad")
FINANCE = ("grace.lee", "hiro.tanaka")
SUPPORT_OPS = ("ines.garcia",)
SERVICE = "svc_reporting"
DEPARTMENTS = ("Electronics", "Home", "Apparel", "Sports")
URGENT = ("'urgent'", "'urgent', 'high'")
STATUSES = ("placed", "paid", "shipped", "delivered", "cancelled", "returned")

Sql = Callable[[random.Random], str]


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    weight: float
    users: tuple[str, ...]
    sql: Sql
    base_ms: float  # median runtime
    rows: Callable[[random.Random], int]
    error_rate: float = 0.0


def _day(r: random.Random, earliest: str = "2025-01-01", span: int = 600) -> str:
    return (dt.date.fromisoformat(earliest) + dt.timedelta(days=r.randrange(span))).isoformat()


def _statuses(r: random.Random) -> str:
    return ", ".join(f"'{s}'" for s in r.sample(STATUSES[1:4], r.randint(1, 3)))


def _ids(r: random.Random, top: int) -> str:
    return ", ".join(str(r.randint(1, top)) for _ in range(r.randint(1, 6)))


def _rows(low: int, high: int) -> Callable[[random.Random], int]:
    return lambda r: r.randint(low, high)


DBT = '/* {"app": "dbt", "dbt_version": "1.8.4", "profile_name": "shop", "node_id": "model.shop.%s"} */\n'
LOOKER = "\n-- Looker Query Context '{\"user_id\": %d, \"history_slug\": \"%s\", \"instance_slug\": \"shop\"}'"

TEMPLATES: tuple[Template, ...] = (
    Template("monthly_revenue", 9, ANALYSTS + FINANCE, lambda r: (
        "SELECT date_trunc('month', o.ordered_at) AS month, sum(o.total_amount) AS revenue\n"
        f"FROM sales.orders o\nWHERE o.status IN ({_statuses(r)}) AND o.ordered_at >= DATE '{_day(r)}'\n"
        "GROUP BY 1 ORDER BY 1"), 180, _rows(6, 24)),
    Template("revenue_by_region_usd", 6, ANALYSTS + FINANCE, lambda r: (
        "SELECT g.name AS region, sum(o.total_amount * fx.usd_rate) AS revenue_usd\n"
        "FROM sales.orders o\nJOIN sales.customers c ON c.id = o.customer_id\n"
        "JOIN sales.regions g ON g.id = c.region_id\n"
        "JOIN finance.fx_rates fx ON fx.rate_date = CAST(o.ordered_at AS DATE) AND fx.currency = o.currency\n"
        f"WHERE o.status IN ('delivered', 'shipped') AND o.ordered_at BETWEEN DATE '{_day(r)}' "
        f"AND DATE '{_day(r, '2026-06-01', 180)}'\nGROUP BY g.name ORDER BY revenue_usd DESC"), 420, _rows(8, 12)),
    Template("top_products", 7, ANALYSTS, lambda r: (
        "SELECT p.name, p.sku, sum(oi.quantity) AS units, sum(oi.quantity * oi.unit_price) AS sales\n"
        "FROM sales.order_items oi\nJOIN catalog.products p ON p.id = oi.product_id\n"
        f"JOIN sales.orders o ON o.id = oi.order_id\nWHERE o.ordered_at >= DATE '{_day(r)}'\n"
        f"GROUP BY p.name, p.sku ORDER BY units DESC LIMIT {r.choice((10, 20, 25, 50, 100))}"), 350, _rows(10, 100)),
    Template("customer_orders", 8, ANALYSTS + SUPPORT_OPS, lambda r: (
        "SELECT id, status, total_amount, ordered_at FROM sales.orders\n"
        f"WHERE customer_id = {r.randint(1, 6000)} ORDER BY ordered_at DESC"), 25, _rows(0, 40)),
    Template("customer_by_email", 3, SUPPORT_OPS, lambda r: (
        "SELECT id, full_name, segment, signup_at FROM sales.customers\n"
        f"WHERE email = '{r.choice(('anna', 'ben', 'maya', 'liam'))}.smith{r.randint(1, 6000)}@example.com'"),
        15, _rows(0, 1)),
    Template("category_sales", 5, ANALYSTS, lambda r: (
        "SELECT c.department, c.name AS category, count(DISTINCT oi.order_id) AS orders, "
        "sum(oi.quantity * oi.unit_price) AS sales\n"
        "FROM sales.order_items oi\nJOIN catalog.products p ON p.id = oi.product_id\n"
        "JOIN catalog.categories c ON c.id = p.category_id\n"
        f"WHERE c.department IN ({', '.join(repr(d) for d in r.sample(DEPARTMENTS, 2))})"
        "\nGROUP BY 1, 2 ORDER BY sales DESC"), 300, _rows(4, 12)),
    Template("refunds_by_reason", 4, FINANCE, lambda r: (
        "SELECT f.reason, count(*) AS refunds, sum(f.amount) AS refunded\n"
        "FROM finance.refunds f\nJOIN finance.payments p ON p.id = f.payment_id\n"
        f"WHERE f.refunded_at >= DATE '{_day(r)}' AND p.method = '{r.choice(('card', 'paypal', 'klarna'))}'\n"
        "GROUP BY f.reason ORDER BY refunded DESC"), 90, _rows(3, 5)),
    Template("refund_rate_by_month", 3, FINANCE, lambda r: (
        "WITH paid AS (\n  SELECT date_trunc('month', paid_at) AS month, sum(amount) AS captured\n"
        "  FROM finance.payments WHERE status = 'captured' GROUP BY 1\n), back AS (\n"
        "  SELECT date_trunc('month', refunded_at) AS month, sum(amount) AS refunded\n"
        "  FROM finance.refunds GROUP BY 1\n)\n"
        "SELECT paid.month, back.refunded / paid.captured AS refund_rate\nFROM paid LEFT JOIN back USING (month)\n"
        f"WHERE paid.month >= DATE '{_day(r)}' ORDER BY 1"), 160, _rows(6, 20)),
    Template("payment_failures", 3, FINANCE + ANALYSTS[:2], lambda r: (
        "SELECT method, count(*) FILTER (WHERE status = 'failed') * 1.0 / count(*) AS failure_rate\n"
        f"FROM finance.payments WHERE paid_at >= DATE '{_day(r)}' GROUP BY method ORDER BY failure_rate DESC"),
        70, _rows(5, 5)),
    Template("tickets_by_topic_week", 5, SUPPORT_OPS + ANALYSTS[2:4], lambda r: (
        "SELECT date_trunc('week', opened_at) AS week, topic, count(*) AS tickets\n"
        f"FROM support.tickets WHERE opened_at >= DATE '{_day(r, '2026-03-01', 200)}'\n"
        "GROUP BY 1, 2 ORDER BY 1, 2"), 60, _rows(20, 150)),
    Template("csat_by_team", 3, SUPPORT_OPS, lambda r: (
        "SELECT a.team, avg(s.score) AS csat, count(*) AS answers\n"
        "FROM support.csat_responses s\nJOIN support.tickets t ON t.id = s.ticket_id\n"
        "JOIN support.agents a ON a.id = t.agent_id\n"
        f"WHERE s.answered_at >= DATE '{_day(r)}' GROUP BY a.team"), 55, _rows(3, 3)),
    Template("open_urgent_tickets", 4, SUPPORT_OPS, lambda r: (
        "SELECT t.id, t.customer_id, t.topic, t.opened_at FROM support.tickets t\n"
        f"WHERE t.status IN ('open', 'pending') AND t.priority IN ({r.choice(URGENT)})"
        f"\nORDER BY t.opened_at LIMIT {r.choice((50, 100, 200))}"), 20, _rows(0, 200)),
    Template("tickets_for_orders", 2, SUPPORT_OPS, lambda r: (
        f"SELECT * FROM support.tickets WHERE order_id IN ({_ids(r, 40000)})"), 18, _rows(0, 6)),
    Template("campaign_performance", 5, ANALYSTS[1:4], lambda r: (
        "SELECT m.name, m.channel, m.budget_usd, count(o.id) AS orders, sum(o.total_amount) AS revenue,\n"
        "       sum(o.total_amount) / m.budget_usd AS roas\n"
        "FROM marketing.campaigns m\nLEFT JOIN sales.orders o ON o.campaign_id = m.id\n"
        f"WHERE m.started_on >= DATE '{_day(r, '2024-10-01', 500)}'\n"
        "GROUP BY m.name, m.channel, m.budget_usd ORDER BY roas DESC"), 230, _rows(5, 40)),
    Template("email_funnel", 3, ANALYSTS[1:3], lambda r: (
        "SELECT campaign_id, count(*) FILTER (WHERE event = 'sent') AS sent,\n"
        "       count(*) FILTER (WHERE event = 'open') AS opens, count(*) FILTER (WHERE event = 'click') AS clicks\n"
        f"FROM marketing.email_events WHERE campaign_id IN ({_ids(r, 40)}) GROUP BY campaign_id"), 110, _rows(1, 6)),
    Template("coupon_usage", 3, ANALYSTS[1:4], lambda r: (
        "SELECT k.code, k.percent_off, count(*) AS orders, sum(o.discount_amount) AS discount\n"
        "FROM sales.orders o\nJOIN marketing.coupons k ON k.code = o.coupon_code\n"
        f"WHERE o.ordered_at >= DATE '{_day(r)}' GROUP BY k.code, k.percent_off ORDER BY orders DESC "
        f"LIMIT {r.choice((10, 20))}"), 140, _rows(10, 20)),
    Template("delivery_time_by_carrier", 3, ANALYSTS[3:] + SUPPORT_OPS, lambda r: (
        "SELECT carrier, avg(date_diff('hour', shipped_at, delivered_at)) AS hours_to_deliver,\n"
        "       count(*) FILTER (WHERE delivered_at IS NULL) AS in_transit\n"
        f"FROM sales.shipments WHERE shipped_at >= DATE '{_day(r)}' GROUP BY carrier"), 80, _rows(5, 5)),
    Template("new_customers", 4, ANALYSTS, lambda r: (
        "SELECT date_trunc('month', signup_at) AS month, segment, count(*) AS signups\n"
        f"FROM sales.customers WHERE signup_at >= DATE '{_day(r)}' "
        f"AND segment IN ({', '.join(repr(s) for s in r.sample(('consumer', 'smb', 'enterprise'), r.randint(1, 3)))})"
        "\nGROUP BY 1, 2 ORDER BY 1"), 40, _rows(6, 60)),
    Template("repeat_purchase_rate", 2, ANALYSTS[:3], lambda r: (
        "WITH per_customer AS (\n  SELECT customer_id, count(*) AS orders FROM sales.orders\n"
        f"  WHERE status <> 'cancelled' AND ordered_at >= DATE '{_day(r)}' GROUP BY customer_id\n)\n"
        "SELECT count(*) FILTER (WHERE orders > 1) * 1.0 / count(*) AS repeat_rate FROM per_customer"),
        120, _rows(1, 1)),
    Template("aov_by_channel", 4, ANALYSTS + FINANCE[:1], lambda r: (
        "SELECT channel, avg(total_amount) AS aov, count(*) AS orders FROM sales.orders\n"
        f"WHERE status NOT IN ('cancelled') AND ordered_at >= DATE '{_day(r)}' GROUP BY channel"), 75, _rows(4, 4)),
    Template("price_history", 2, ANALYSTS[4:], lambda r: (
        "SELECT changed_on, old_price, new_price, reason FROM catalog.price_changes\n"
        f"WHERE product_id = {r.randint(1, 800)} ORDER BY changed_on"), 12, _rows(0, 8)),
    Template("margin_by_supplier", 2, FINANCE, lambda r: (
        "SELECT s.name, s.country, avg(p.list_price - p.unit_cost) AS avg_margin\n"
        "FROM catalog.products p\nJOIN catalog.suppliers s ON s.id = p.supplier_id\n"
        f"WHERE p.discontinued_on IS NULL AND s.is_preferred = {r.choice(('true', 'false'))}\n"
        "GROUP BY s.name, s.country ORDER BY avg_margin DESC"), 35, _rows(10, 60)),
    Template("orders_broken_column", 1, ANALYSTS[4:], lambda r: (
        f"SELECT order_total FROM sales.orders WHERE id = {r.randint(1, 40000)}"), 8, _rows(0, 0), error_rate=1.0),
    Template("daily_kpis", 6, (SERVICE,), lambda r: (
        "SELECT CAST(ordered_at AS DATE) AS day, count(*) AS orders, sum(total_amount) AS gross\n"
        f"FROM sales.orders WHERE ordered_at >= DATE '{_day(r, '2026-09-01', 90)}' GROUP BY 1 ORDER BY 1"),
        140, _rows(1, 90)),
    Template("dbt_fct_daily_revenue", 4, ("dbt_runner",), lambda r: (
        DBT % "fct_daily_revenue" + "SELECT CAST(o.ordered_at AS DATE) AS order_date, o.currency,\n"
        "       sum(o.total_amount) AS revenue, count(*) AS orders\nFROM sales.orders o\n"
        f"WHERE o.status IN ('delivered', 'shipped') AND o.ordered_at >= DATE '{_day(r, '2024-12-01', 10)}'\n"
        "GROUP BY 1, 2"), 900, _rows(3000, 3650)),
    Template("dbt_dim_customers", 3, ("dbt_runner",), lambda r: (
        DBT % "dim_customers" + "SELECT c.id AS customer_id, c.segment, g.name AS region, min(o.ordered_at) AS "
        "first_order_at,\n       count(o.id) AS lifetime_orders\nFROM sales.customers c\n"
        "JOIN sales.regions g ON g.id = c.region_id\nLEFT JOIN sales.orders o ON o.customer_id = c.id\n"
        "GROUP BY 1, 2, 3"), 650, _rows(6000, 6000)),
    Template("looker_orders_explore", 6, ("looker_prod",), lambda r: (
        "SELECT orders.status AS \"orders.status\", COUNT(DISTINCT orders.id) AS \"orders.count\"\n"
        "FROM sales.orders AS orders\nLEFT JOIN sales.customers AS customers ON customers.id = orders.customer_id\n"
        f"WHERE customers.segment = '{r.choice(('consumer', 'smb', 'enterprise'))}' AND orders.ordered_at >= "
        f"TIMESTAMP '{_day(r)} 00:00:00'\nGROUP BY 1 ORDER BY 2 DESC LIMIT 500"
        + LOOKER % (r.randint(1, 40), f"{r.getrandbits(32):08x}")), 260, _rows(3, 6)),
    Template("healthcheck", 3, ("svc_healthcheck",), lambda r: "SELECT 1", 1, _rows(1, 1)),
)


def _durations(r: random.Random, base_ms: float) -> float:
    return round(base_ms * r.lognormvariate(0, 0.6), 3)


def _start_times(r: random.Random, end: dt.datetime, days: int, user: str) -> dt.datetime:
    """Office hours on weekdays for people, round the clock (mostly at night) for the machines."""
    while True:
        moment = end - dt.timedelta(seconds=r.uniform(0, days * 86400))
        if user.startswith(("svc_", "dbt_", "looker_")) or (moment.weekday() < 5 and 8 <= moment.hour < 19):
            return moment.replace(microsecond=0)


def generate_log(end: dt.datetime, *, executions: int = 3000, days: int = 60,
                 seed: int = SEED) -> list[dict[str, object]]:
    """``executions`` records, oldest first, all within ``days`` before ``end`` (UTC)."""
    r = random.Random(seed)
    weights = [template.weight for template in TEMPLATES]
    records = []
    for template in r.choices(TEMPLATES, weights=weights, k=executions):
        user = r.choice(template.users)
        failed = r.random() < template.error_rate
        started = _start_times(r, end, days, user)
        records.append({"sql": template.sql(r), "user": user, "started_at": started.isoformat(),
                        "duration_ms": _durations(r, template.base_ms), "rows": 0 if failed else template.rows(r),
                        "error": "Binder Error: column \"order_total\" not found" if failed else None})
    records.sort(key=lambda record: str(record["started_at"]))
    return records


def write_log(path: Path, end: dt.datetime, **options: int) -> int:
    """Write the log as JSONL atomically; returns the number of records."""
    records = generate_log(end, **options)
    replace_with(path, lambda out: out.writelines(orjson.dumps(record) + b"\n" for record in records))
    return len(records)
