"""The demo shop's tables: columns, types, keys and the comments a scan reads back.

DuckDB refuses foreign keys across schemas, so only links inside a schema are declared; links
between schemas (``finance.payments.order_id`` -> ``sales.orders.id``) are left to the scan's
relationship inference, which is part of what the demo shows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Table:
    name: str  # schema.table
    comment: str
    columns: tuple[tuple[str, str, str], ...]  # (name, DuckDB type and constraints, comment)
    extra: str = ""  # table constraints, e.g. a composite primary key

    def ddl(self) -> str:
        parts = [f"{name} {kind}" for name, kind, _ in self.columns]
        if self.extra:
            parts.append(self.extra)
        return f"CREATE TABLE {self.name} (\n  " + ",\n  ".join(parts) + "\n)"

    def comments(self) -> list[str]:
        statements = [f"COMMENT ON TABLE {self.name} IS {_literal(self.comment)}"]
        statements += [f"COMMENT ON COLUMN {self.name}.{name} IS {_literal(text)}"
                       for name, _, text in self.columns if text]
        return statements


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SCHEMAS = ("catalog", "marketing", "sales", "support", "finance")

# In creation order: referenced tables first.
TABLES: tuple[Table, ...] = (
    Table("catalog.categories", "Product categories, two levels: departments and their sub-categories.", (
        ("id", "INTEGER PRIMARY KEY", "category id"),
        ("name", "VARCHAR NOT NULL", "display name, e.g. Headphones"),
        ("department", "VARCHAR NOT NULL", "top-level department, e.g. Electronics"),
        ("parent_id", "INTEGER REFERENCES catalog.categories(id)", "the department row; NULL for departments"),
    )),
    Table("catalog.suppliers", "Vendors we buy stock from.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("name", "VARCHAR NOT NULL", "supplier's trading name"),
        ("country", "VARCHAR NOT NULL", "ISO 3166 alpha-2 country of the supplier"),
        ("lead_time_days", "INTEGER NOT NULL", "typical days from purchase order to our warehouse"),
        ("is_preferred", "BOOLEAN NOT NULL", "on the preferred-vendor list this year"),
    )),
    Table("catalog.products", "Everything we sell (SKUs); prices in USD.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("sku", "VARCHAR NOT NULL UNIQUE", "stock keeping unit, e.g. EL-00042"),
        ("name", "VARCHAR NOT NULL", "product name shown in the shop"),
        ("category_id", "INTEGER NOT NULL REFERENCES catalog.categories(id)", "leaf category"),
        ("supplier_id", "INTEGER NOT NULL REFERENCES catalog.suppliers(id)", ""),
        ("brand", "VARCHAR", "manufacturer brand; NULL for unbranded goods"),
        ("list_price", "DECIMAL(10,2) NOT NULL", "current list price in USD"),
        ("unit_cost", "DECIMAL(10,2) NOT NULL", "what one unit costs us in USD (for margin)"),
        ("launched_on", "DATE NOT NULL", "first day on sale"),
        ("discontinued_on", "DATE", "last day on sale; NULL while still sold"),
    )),
    Table("catalog.price_changes", "History of list price changes (promotions, cost pass-through).", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("product_id", "INTEGER NOT NULL REFERENCES catalog.products(id)", ""),
        ("changed_on", "DATE NOT NULL", ""),
        ("old_price", "DECIMAL(10,2) NOT NULL", "list price before the change, USD"),
        ("new_price", "DECIMAL(10,2) NOT NULL", "list price after the change, USD"),
        ("reason", "VARCHAR NOT NULL", "promotion, cost_increase, competitor_match or clearance"),
    )),
    Table("marketing.campaigns", "Marketing campaigns; orders attribute to at most one (last touch).", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("name", "VARCHAR NOT NULL", "internal campaign name"),
        ("channel", "VARCHAR NOT NULL", "email, paid_search, social, affiliate or tv"),
        ("objective", "VARCHAR NOT NULL", "acquisition, retention or reactivation"),
        ("started_on", "DATE NOT NULL", ""),
        ("ended_on", "DATE", "NULL while the campaign runs"),
        ("budget_usd", "DECIMAL(12,2) NOT NULL", "approved spend in USD"),
    )),
    Table("marketing.coupons", "Discount codes handed out by campaigns.", (
        ("code", "VARCHAR PRIMARY KEY", "what the customer types at checkout, e.g. BF25-0007"),
        ("campaign_id", "INTEGER NOT NULL REFERENCES marketing.campaigns(id)", ""),
        ("percent_off", "INTEGER NOT NULL", "discount in percent of the subtotal"),
        ("valid_until", "DATE NOT NULL", ""),
    )),
    Table("marketing.email_events", "Email sends, opens, clicks and unsubscribes per customer.", (
        ("id", "BIGINT PRIMARY KEY", ""),
        ("customer_id", "INTEGER NOT NULL", "the recipient (sales.customers.id)"),
        ("campaign_id", "INTEGER NOT NULL REFERENCES marketing.campaigns(id)", ""),
        ("event", "VARCHAR NOT NULL", "sent, open, click or unsubscribe"),
        ("occurred_at", "TIMESTAMP NOT NULL", "UTC"),
    )),
    Table("sales.regions", "Sales regions; every customer and store belongs to one.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("name", "VARCHAR NOT NULL", "e.g. DACH, Nordics, US West"),
        ("country", "VARCHAR NOT NULL", "main ISO 3166 alpha-2 country"),
        ("timezone", "VARCHAR NOT NULL", "IANA time zone used for daily reporting"),
    )),
    Table("sales.stores", "Where orders are placed: the web shop, marketplaces and physical stores.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("region_id", "INTEGER NOT NULL REFERENCES sales.regions(id)", ""),
        ("name", "VARCHAR NOT NULL", ""),
        ("kind", "VARCHAR NOT NULL", "web, marketplace, flagship or outlet"),
        ("opened_on", "DATE NOT NULL", ""),
    )),
    Table("sales.customers", "People and companies who signed up; one row per account.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("full_name", "VARCHAR NOT NULL", "account holder's name"),
        ("email", "VARCHAR NOT NULL", "login e-mail (personal data)"),
        ("region_id", "INTEGER NOT NULL REFERENCES sales.regions(id)", "home region"),
        ("segment", "VARCHAR NOT NULL", "consumer, smb or enterprise"),
        ("signup_at", "TIMESTAMP NOT NULL", "account creation, UTC"),
        ("marketing_opt_in", "BOOLEAN NOT NULL", "agreed to marketing e-mails"),
        ("birth_year", "INTEGER", "self-reported; NULL when not given"),
    )),
    Table("sales.orders", "Customer orders, one row per checkout. Revenue counts delivered and shipped orders.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("customer_id", "INTEGER NOT NULL REFERENCES sales.customers(id)", ""),
        ("store_id", "INTEGER NOT NULL REFERENCES sales.stores(id)", ""),
        ("campaign_id", "INTEGER", "last-touch campaign (marketing.campaigns.id); NULL when organic"),
        ("coupon_code", "VARCHAR", "marketing.coupons.code applied at checkout, if any"),
        ("status", "VARCHAR NOT NULL", "placed, paid, shipped, delivered, cancelled or returned"),
        ("channel", "VARCHAR NOT NULL", "web, app, marketplace or store"),
        ("ordered_at", "TIMESTAMP NOT NULL", "checkout time, UTC"),
        ("currency", "VARCHAR NOT NULL", "ISO 4217 currency the customer paid in"),
        ("subtotal", "DECIMAL(12,2) NOT NULL", "sum of the lines before discount, in currency"),
        ("discount_amount", "DECIMAL(12,2) NOT NULL", "coupon discount, in currency"),
        ("shipping_fee", "DECIMAL(12,2) NOT NULL", "in currency"),
        ("total_amount", "DECIMAL(12,2) NOT NULL", "subtotal - discount + shipping, in currency"),
    )),
    Table("sales.order_items", "Order lines: one product and quantity per line.", (
        ("order_id", "INTEGER NOT NULL REFERENCES sales.orders(id)", ""),
        ("line_number", "INTEGER NOT NULL", "1-based position in the order"),
        ("product_id", "INTEGER NOT NULL", "catalog.products.id"),
        ("quantity", "INTEGER NOT NULL", ""),
        ("unit_price", "DECIMAL(10,2) NOT NULL", "price paid per unit, in the order's currency"),
    ), extra="PRIMARY KEY (order_id, line_number)"),
    Table("sales.shipments", "Parcels sent for orders; delivered_at is NULL while in transit.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("order_id", "INTEGER NOT NULL REFERENCES sales.orders(id)", ""),
        ("carrier", "VARCHAR NOT NULL", "dhl, ups, fedex, postnl or in_house"),
        ("shipped_at", "TIMESTAMP NOT NULL", "UTC"),
        ("delivered_at", "TIMESTAMP", "UTC; NULL while in transit or lost"),
    )),
    Table("support.agents", "Customer support agents.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("full_name", "VARCHAR NOT NULL", ""),
        ("team", "VARCHAR NOT NULL", "tier1, tier2 or billing"),
        ("hired_on", "DATE NOT NULL", ""),
    )),
    Table("support.tickets", "Support tickets opened by customers, optionally about one order.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("customer_id", "INTEGER NOT NULL", "sales.customers.id"),
        ("order_id", "INTEGER", "sales.orders.id the ticket is about; NULL for general questions"),
        ("agent_id", "INTEGER REFERENCES support.agents(id)", "assignee; NULL while unassigned"),
        ("topic", "VARCHAR NOT NULL", "delivery, refund, product, billing or account"),
        ("priority", "VARCHAR NOT NULL", "low, normal, high or urgent"),
        ("status", "VARCHAR NOT NULL", "open, pending, solved or closed"),
        ("opened_at", "TIMESTAMP NOT NULL", "UTC"),
        ("closed_at", "TIMESTAMP", "UTC; NULL while open"),
    )),
    Table("support.csat_responses", "Satisfaction survey answers, at most one per ticket.", (
        ("ticket_id", "INTEGER PRIMARY KEY REFERENCES support.tickets(id)", ""),
        ("score", "INTEGER NOT NULL", "1 (very unhappy) .. 5 (very happy)"),
        ("answered_at", "TIMESTAMP NOT NULL", "UTC"),
    )),
    Table("finance.fx_rates", "Daily exchange rates to USD; join on the order's date and currency.", (
        ("rate_date", "DATE NOT NULL", ""),
        ("currency", "VARCHAR NOT NULL", "ISO 4217"),
        ("usd_rate", "DOUBLE NOT NULL", "USD per one unit of currency"),
    ), extra="PRIMARY KEY (rate_date, currency)"),
    Table("finance.payments", "Payment attempts for orders; only captured payments are money in.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("order_id", "INTEGER NOT NULL", "sales.orders.id"),
        ("method", "VARCHAR NOT NULL", "card, paypal, klarna, bank_transfer or gift_card"),
        ("status", "VARCHAR NOT NULL", "captured, failed or pending"),
        ("amount", "DECIMAL(12,2) NOT NULL", "in currency"),
        ("currency", "VARCHAR NOT NULL", "ISO 4217"),
        ("paid_at", "TIMESTAMP NOT NULL", "UTC"),
    )),
    Table("finance.refunds", "Money paid back to customers, against one captured payment.", (
        ("id", "INTEGER PRIMARY KEY", ""),
        ("payment_id", "INTEGER NOT NULL REFERENCES finance.payments(id)", ""),
        ("order_id", "INTEGER NOT NULL", "sales.orders.id"),
        ("amount", "DECIMAL(12,2) NOT NULL", "in the payment's currency"),
        ("reason", "VARCHAR NOT NULL", "damaged, late, wrong_item, changed_mind or fraud"),
        ("refunded_at", "TIMESTAMP NOT NULL", "UTC"),
    )),
)
