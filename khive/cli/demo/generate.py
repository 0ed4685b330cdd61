"""Column draws for the demo shop, one step per group of tables, in a fixed order from one generator.

Each step reads the frames drawn before it (orders need customers, payments need orders) and adds
its own. Arrays are numpy (object arrays where a column has NULLs); money is rounded to cents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Frame = dict[str, Any]
Step = Callable[[np.random.Generator, float, dict[str, Frame]], None]

START = np.datetime64("2024-12-01T00:00:00", "s")
DAYS = 730  # two years, up to 2026-11-30
DAY = np.timedelta64(1, "D").astype("timedelta64[s]")
HOUR = np.timedelta64(3600, "s")

REGIONS = (  # name, country, time zone, currency, weight
    ("US East", "US", "America/New_York", "USD", 20), ("US West", "US", "America/Los_Angeles", "USD", 16),
    ("Canada", "CA", "America/Toronto", "CAD", 6), ("UK & Ireland", "GB", "Europe/London", "GBP", 12),
    ("DACH", "DE", "Europe/Berlin", "EUR", 14), ("France", "FR", "Europe/Paris", "EUR", 8),
    ("Benelux", "NL", "Europe/Amsterdam", "EUR", 6), ("Nordics", "SE", "Europe/Stockholm", "SEK", 5),
    ("Iberia", "ES", "Europe/Madrid", "EUR", 5), ("Italy", "IT", "Europe/Rome", "EUR", 4),
    ("Poland", "PL", "Europe/Warsaw", "EUR", 2), ("Rest of World", "AU", "Australia/Sydney", "USD", 2),
)
CURRENCIES = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "CAD": 0.74, "SEK": 0.095}
DEPARTMENTS = {
    "Electronics": ("Headphones", "Speakers", "Chargers", "Smart Home", "Cameras"),
    "Home": ("Kitchen", "Bedding", "Lighting", "Storage"),
    "Apparel": ("T-Shirts", "Jackets", "Shoes", "Socks", "Hats"),
    "Sports": ("Running", "Cycling", "Yoga", "Camping"),
    "Beauty": ("Skin Care", "Hair Care", "Fragrance"),
    "Toys": ("Board Games", "Puzzles", "Building Sets"),
    "Grocery": ("Coffee", "Tea", "Snacks", "Pantry"),
}
BRANDS = ("Northwind", "Contoso", "Fabrikam", "Tailspin", "Litware", "Adventure Works", "Proseware", "Wingtip",
          "Lucerne", "Margie's", "Alpine Ski House", "Coho")
FIRST = ("Anna", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira", "Liam", "Maya",
         "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Ximena", "Yusuf", "Zoe",
         "Aiko", "Bruno", "Carmen", "Dmitri", "Emma", "Felix", "Giulia", "Hannah", "Ivan", "Julia", "Karim", "Lena")
LAST = ("Smith", "Müller", "García", "Rossi", "Dubois", "Jansen", "Nowak", "Andersson", "Kim", "Tanaka", "Brown",
        "Schmidt", "López", "Bianchi", "Martin", "de Vries", "Kowalski", "Nilsson", "Lee", "Sato", "Wilson",
        "Fischer", "Martínez", "Romano", "Bernard", "Bakker", "Wiśniewski", "Johansson", "Park", "Suzuki")
ADJECTIVES = ("Classic", "Pro", "Eco", "Ultra", "Mini", "Max", "Essential", "Premium", "Travel", "Everyday")


def zipf_weights(rng: np.random.Generator, n: int, exponent: float = 1.1, offset: float = 3.0) -> np.ndarray:
    """Popularity weights that sum to 1: rank r gets 1/(r + offset)^exponent, ranks shuffled over the ids."""
    weights = 1.0 / (np.arange(1, n + 1) + offset) ** exponent
    rng.shuffle(weights)
    return np.asarray(weights / weights.sum())


def day_weights() -> np.ndarray:
    """Daily order volume over the two years: growth, a December peak, weekends and Black Friday week."""
    days = START + np.arange(DAYS) * DAY
    day_of_year = (days.astype("datetime64[D]") - days.astype("datetime64[Y]")).astype(int)
    weekday = (days.astype("datetime64[D]").astype(int) + 3) % 7  # 0 = Monday
    trend = 1.0 + 0.6 * np.arange(DAYS) / DAYS
    season = 1.0 + 0.25 * np.cos(2 * np.pi * (day_of_year - 350) / 365)
    week = np.array([1.0, 0.95, 0.95, 1.0, 1.1, 1.25, 1.2])[weekday]
    month = days.astype("datetime64[M]").astype(int) % 12 + 1
    day_of_month = (days.astype("datetime64[D]") - days.astype("datetime64[M]")).astype(int) + 1
    black_friday = np.where((month == 11) & (day_of_month >= 24), 2.5, 1.0)
    weights = trend * season * week * black_friday
    return np.asarray(weights / weights.sum())


HOURS = np.array([1, 0.5, 0.3, 0.2, 0.2, 0.4, 1, 2, 3, 4, 4.5, 5, 5.5, 5, 4.5, 4.5, 5, 5.5, 6.5, 7.5, 8, 7, 5, 2.5])


def timestamps(rng: np.random.Generator, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    day = rng.choice(DAYS, size=n, p=weights if weights is not None else day_weights())
    hour = rng.choice(24, size=n, p=HOURS / HOURS.sum())
    seconds = day * 86400 + hour * 3600 + rng.integers(0, 3600, size=n)
    return START + seconds.astype("timedelta64[s]")


def pick(rng: np.random.Generator, values: tuple[Any, ...] | list[Any], shares: list[float], n: int) -> np.ndarray:
    p = np.array(shares, dtype=float)
    return np.array(values, dtype=object)[rng.choice(len(values), size=n, p=p / p.sum())]


def with_nulls(rng: np.random.Generator, values: np.ndarray, share: float) -> np.ndarray:
    out = np.array(values, dtype=object)
    out[rng.random(len(out)) < share] = None
    return out


def keep(present: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` as an object array, NULL (None) where ``present`` is false."""
    out = np.array(values, dtype=object)
    out[~present] = None
    return out


def money(values: np.ndarray) -> np.ndarray:
    return np.round(values.astype(float), 2)



def ids(n: int) -> np.ndarray:
    return np.arange(1, n + 1)


def sized(base: int, scale: float) -> int:
    return max(10, round(base * scale))


def dates(values: np.ndarray) -> np.ndarray:
    """Midnight of each day (DuckDB's numpy scan takes seconds, not days; the DATE column casts)."""
    return values.astype("datetime64[D]").astype("datetime64[s]")


def catalog(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    names: list[str] = []
    departments: list[str] = []
    parents: list[int | None] = []
    for department, subs in DEPARTMENTS.items():
        parent = len(names) + 1
        for name, parent_id in ((department, None), *((sub, parent) for sub in subs)):
            names.append(name)
            departments.append(department)
            parents.append(parent_id)
    parent_ids = np.array(parents, dtype=object)
    frames["catalog.categories"] = {"id": ids(len(names)), "name": np.array(names, dtype=object),
                                    "department": np.array(departments, dtype=object), "parent_id": parent_ids}
    n_suppliers = 60
    frames["catalog.suppliers"] = {
        "id": ids(n_suppliers),
        "name": np.array([f"{BRANDS[i % len(BRANDS)]} Supply {i + 1:02d}" for i in range(n_suppliers)], dtype=object),
        "country": pick(rng, ("CN", "DE", "US", "VN", "PL", "IT", "TR", "IN"), [30, 15, 15, 12, 8, 8, 6, 6],
                        n_suppliers),
        "lead_time_days": rng.integers(3, 60, size=n_suppliers),
        "is_preferred": rng.random(n_suppliers) < 0.3,
    }
    leaves = np.flatnonzero(parent_ids != None) + 1  # noqa: E711 - elementwise on an object array
    n = sized(800, scale)
    category = rng.choice(leaves, size=n, p=zipf_weights(rng, len(leaves), 0.7))
    department_of = np.array(departments, dtype=object)[category - 1]
    price_level = {"Electronics": 4.6, "Home": 3.6, "Apparel": 3.5, "Sports": 3.9, "Beauty": 3.0, "Toys": 3.2,
                   "Grocery": 2.3}
    price = money(np.exp(np.array([price_level[d] for d in department_of]) + rng.normal(0, 0.55, n))) + 0.99
    launched = START - 3 * 365 * DAY + (rng.random(n) * (3 * 365 + DAYS - 30)).astype(int) * DAY
    discontinued = np.where(rng.random(n) < 0.08, launched + rng.integers(120, 700, n) * DAY,
                            np.datetime64("NaT", "s"))
    sub_names = np.array(names, dtype=object)[category - 1]
    frames["catalog.products"] = {
        "id": ids(n),
        "sku": np.array([f"{d[:2].upper()}-{i:05d}" for i, d in zip(ids(n), department_of, strict=True)], dtype=object),
        "name": np.array([f"{ADJECTIVES[rng.integers(len(ADJECTIVES))]} {s} {rng.integers(100, 999)}"
                          for s in sub_names], dtype=object),
        "category_id": category,
        "supplier_id": rng.choice(ids(n_suppliers), size=n, p=zipf_weights(rng, n_suppliers, 0.9)),
        "brand": with_nulls(rng, pick(rng, BRANDS, list(1 / np.arange(1, len(BRANDS) + 1)), n), 0.1),
        "list_price": price,
        "unit_cost": money(price * rng.uniform(0.35, 0.7, n)),
        "launched_on": dates(launched),
        "discontinued_on": dates(np.minimum(discontinued, START + (DAYS - 1) * DAY)),
    }
    m = sized(2000, scale)
    product = rng.integers(1, n + 1, size=m)
    old = price[product - 1]
    frames["catalog.price_changes"] = {
        "id": ids(m), "product_id": product, "changed_on": dates(timestamps(rng, m)),
        "old_price": old, "new_price": money(old * rng.choice([0.8, 0.9, 0.95, 1.05, 1.1], size=m)),
        "reason": pick(rng, ("promotion", "cost_increase", "competitor_match", "clearance"), [45, 25, 20, 10], m),
    }


def marketing_and_places(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    n = 40
    started = START - 60 * DAY + np.sort(rng.integers(0, DAYS, n)) * DAY
    length = rng.integers(14, 90, n) * DAY
    ended = np.where(started + length < START + DAYS * DAY, started + length, np.datetime64("NaT", "s"))
    channel = pick(rng, ("email", "paid_search", "social", "affiliate", "tv"), [35, 25, 20, 12, 8], n)
    themes = ("Spring Sale", "Summer Drop", "Back to School", "Black Friday", "Holiday Gifts", "New Year",
              "Win-back", "Welcome Series", "Loyalty Boost", "Flash Deal")
    frames["marketing.campaigns"] = {
        "id": ids(n),
        "name": np.array([f"{themes[i % len(themes)]} {str(s)[:4]} #{i + 1}" for i, s in enumerate(started)],
                         dtype=object),
        "channel": channel,
        "objective": pick(rng, ("acquisition", "retention", "reactivation"), [50, 35, 15], n),
        "started_on": dates(started), "ended_on": dates(ended),
        "budget_usd": money(np.round(rng.lognormal(9.5, 0.8, n), -2)),
    }
    c = 120
    campaign = rng.integers(1, n + 1, size=c)
    frames["marketing.coupons"] = {
        "code": np.array([f"{'BF' if i % 7 == 0 else 'SAVE'}{p}-{i:04d}"
                          for i, p in zip(ids(c), rng.choice([10, 15, 20, 25], c), strict=True)], dtype=object),
        "campaign_id": campaign,
        "percent_off": rng.choice([10, 15, 20, 25], size=c, p=[0.4, 0.3, 0.2, 0.1]),
        "valid_until": dates(started[campaign - 1] + 90 * DAY),
    }
    regions = len(REGIONS)
    frames["sales.regions"] = {
        "id": ids(regions), "name": np.array([r[0] for r in REGIONS], dtype=object),
        "country": np.array([r[1] for r in REGIONS], dtype=object),
        "timezone": np.array([r[2] for r in REGIONS], dtype=object),
    }
    kinds = ["web"] * 4 + ["marketplace"] * 3 + ["flagship"] * 6 + ["outlet"] * 12
    stores = len(kinds)
    region = np.concatenate([[1, 4, 5, 2], [1, 5, 4], rng.integers(1, regions + 1, stores - 7)])
    frames["sales.stores"] = {
        "id": ids(stores), "region_id": region,
        "name": np.array([f"{REGIONS[r - 1][0]} {k.title()} {i}" for i, (r, k) in enumerate(zip(region, kinds,
                          strict=True), start=1)], dtype=object),
        "kind": np.array(kinds, dtype=object),
        "opened_on": dates(START - rng.integers(30, 2000, stores) * DAY),
    }


def customers(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    n = sized(6000, scale)
    first = np.array(FIRST, dtype=object)[rng.integers(0, len(FIRST), n)]
    last = np.array(LAST, dtype=object)[rng.integers(0, len(LAST), n)]
    signup = START - 400 * DAY + (rng.power(1.2, n) * (DAYS + 370) * 86400).astype("timedelta64[s]")
    region_weights = np.array([r[4] for r in REGIONS], dtype=float)
    frames["sales.customers"] = {
        "id": ids(n),
        "full_name": first + " " + last,
        "email": np.array([f"{f.lower()}.{la.lower().replace(' ', '')}{i}@example.com"
                           for f, la, i in zip(first, last, ids(n), strict=True)], dtype=object),
        "region_id": rng.choice(ids(len(REGIONS)), size=n, p=region_weights / region_weights.sum()),
        "segment": pick(rng, ("consumer", "smb", "enterprise"), [82, 15, 3], n),
        "signup_at": signup,
        "marketing_opt_in": rng.random(n) < 0.55,
        "birth_year": with_nulls(rng, rng.integers(1950, 2007, n), 0.35),
    }
    frames["_weights"] = {"customers": zipf_weights(rng, n, 1.05, 10.0)}


ORDER_STATUSES = ("placed", "paid", "shipped", "delivered", "cancelled", "returned")


def orders(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    n = sized(40000, scale)
    people = frames["sales.customers"]
    customer = rng.choice(people["id"], size=n, p=frames["_weights"]["customers"])
    ordered = np.sort(timestamps(rng, n))
    signup = people["signup_at"][customer - 1]
    late = ordered < signup  # nobody orders before signing up: move those to just after the signup
    ordered = np.where(late, signup + rng.integers(1, 72, n) * HOUR, ordered)
    ordered = np.minimum(ordered, START + DAYS * DAY - np.timedelta64(1, "s"))
    stores = frames["sales.stores"]
    store_weight = np.array([{"web": 10, "marketplace": 4, "flagship": 1.5, "outlet": 0.5}[k] for k in stores["kind"]])
    store = rng.choice(stores["id"], size=n, p=store_weight / store_weight.sum())
    kind = stores["kind"][store - 1]
    channel = np.where(kind == "web", np.where(rng.random(n) < 0.6, "web", "app"),
                       np.where(kind == "marketplace", "marketplace", "store")).astype(object)
    status = pick(rng, ORDER_STATUSES, [1.5, 2.5, 6, 80, 6, 4], n)
    recent = ordered > START + (DAYS - 4) * DAY
    status[recent & (status == "delivered")] = "shipped"
    region = people["region_id"][customer - 1]
    currency = np.array([r[3] for r in REGIONS], dtype=object)[region - 1]
    coupons = frames["marketing.coupons"]
    coupon_row = np.where(rng.random(n) < 0.12, rng.integers(0, len(coupons["code"]), n), -1)
    campaigns = frames["marketing.campaigns"]
    started = campaigns["started_on"].astype("datetime64[s]")
    running = np.searchsorted(started, ordered)  # campaigns started before the order
    campaign = np.where((rng.random(n) < 0.25) & (running > 0), rng.integers(0, np.maximum(running, 1)) + 1, 0)
    campaign = np.where(coupon_row >= 0, coupons["campaign_id"][coupon_row], campaign)

    lines = np.minimum(1 + rng.geometric(0.45, n) - 1, 8)
    order_of_line = np.repeat(ids(n), lines)
    line_number = np.concatenate([np.arange(1, k + 1) for k in lines])
    products = frames["catalog.products"]
    product = rng.choice(products["id"], size=len(order_of_line), p=zipf_weights(rng, len(products["id"]), 1.0))
    quantity = rng.choice([1, 2, 3, 4, 5], size=len(product), p=[0.7, 0.2, 0.05, 0.03, 0.02])
    rate = np.array([CURRENCIES[c] for c in currency])
    unit_price = money(products["list_price"][product - 1] / rate[order_of_line - 1])
    frames["sales.order_items"] = {"order_id": order_of_line, "line_number": line_number, "product_id": product,
                                   "quantity": quantity, "unit_price": unit_price}
    subtotal = money(np.bincount(order_of_line, weights=quantity * unit_price, minlength=n + 1)[1:])
    percent = np.where(coupon_row >= 0, coupons["percent_off"][np.maximum(coupon_row, 0)], 0)
    discount = money(subtotal * percent / 100)
    shipping = np.where((subtotal > 50) | (channel == "store"), 0.0, 4.95)
    frames["sales.orders"] = {
        "id": ids(n), "customer_id": customer, "store_id": store,
        "campaign_id": keep(campaign > 0, campaign),
        "coupon_code": keep(coupon_row >= 0, coupons["code"][np.maximum(coupon_row, 0)]),
        "status": status, "channel": channel, "ordered_at": ordered, "currency": currency,
        "subtotal": subtotal, "discount_amount": discount, "shipping_fee": shipping,
        "total_amount": money(subtotal - discount + shipping),
    }


def fulfilment(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    order = frames["sales.orders"]
    status, ordered = order["status"], order["ordered_at"]
    sent = np.flatnonzero(np.isin(status, ["shipped", "delivered", "returned"]))
    shipped_at = ordered[sent] + rng.integers(4, 72, len(sent)) * HOUR
    delivered_at = (shipped_at + rng.integers(20, 150, len(sent)) * HOUR).astype(object)
    in_transit = (status[sent] == "shipped") | (rng.random(len(sent)) < 0.003)  # a few parcels get lost
    delivered_at[in_transit] = None
    frames["sales.shipments"] = {
        "id": ids(len(sent)), "order_id": order["id"][sent],
        "carrier": pick(rng, ("dhl", "ups", "fedex", "postnl", "in_house"), [35, 25, 15, 15, 10], len(sent)),
        "shipped_at": shipped_at, "delivered_at": delivered_at,
    }
    # Payments: a failed attempt first for some orders, then the capture (pending while only placed).
    paying = np.flatnonzero(status != "cancelled") if len(status) else np.array([], dtype=int)
    retried = np.flatnonzero(rng.random(len(status)) < 0.04)
    rows = np.concatenate([retried, paying])
    first_try = np.concatenate([np.ones(len(retried), bool), np.zeros(len(paying), bool)])
    sequence = np.lexsort((~first_try, rows))
    rows, first_try = rows[sequence], first_try[sequence]
    pay_status = np.where(first_try, "failed", np.where(status[rows] == "placed", "pending", "captured")).astype(object)
    paid_at = ordered[rows] + np.where(first_try, 30, 90) * np.timedelta64(1, "s") + rng.integers(0, 600, len(rows)) * \
        np.timedelta64(1, "s")
    payment_ids = ids(len(rows))
    frames["finance.payments"] = {
        "id": payment_ids, "order_id": order["id"][rows],
        "method": pick(rng, ("card", "paypal", "klarna", "bank_transfer", "gift_card"), [55, 22, 12, 6, 5], len(rows)),
        "status": pay_status, "amount": order["total_amount"][rows], "currency": order["currency"][rows],
        "paid_at": paid_at,
    }
    captured = np.flatnonzero(pay_status == "captured")
    captured_status = status[rows[captured]]
    refunded = captured[(captured_status == "returned") | ((captured_status == "delivered") &
                                                           (rng.random(len(captured)) < 0.03))]
    full = status[rows[refunded]] == "returned"
    amount = order["total_amount"][rows[refunded]]
    frames["finance.refunds"] = {
        "id": ids(len(refunded)), "payment_id": payment_ids[refunded], "order_id": order["id"][rows[refunded]],
        "amount": money(np.where(full, amount, amount * rng.uniform(0.1, 0.6, len(refunded)))),
        "reason": pick(rng, ("damaged", "late", "wrong_item", "changed_mind", "fraud"), [30, 20, 15, 33, 2],
                       len(refunded)),
        "refunded_at": paid_at[refunded] + rng.integers(3, 40, len(refunded)) * DAY,
    }
    days = START + np.arange(DAYS) * DAY
    rate_date: list[np.ndarray] = []
    currency: list[np.ndarray] = []
    usd: list[np.ndarray] = []
    for name, base in CURRENCIES.items():
        walk = base * np.exp(np.cumsum(rng.normal(0, 0.004 if name != "USD" else 0, DAYS)))
        rate_date.append(dates(days))
        currency.append(np.full(DAYS, name, dtype=object))
        usd.append(walk)
    frames["finance.fx_rates"] = {"rate_date": np.concatenate(rate_date), "currency": np.concatenate(currency),
                                  "usd_rate": np.round(np.concatenate(usd), 6)}


def support_and_email(rng: np.random.Generator, scale: float, frames: dict[str, Frame]) -> None:
    agents = 35
    frames["support.agents"] = {
        "id": ids(agents),
        "full_name": np.array([f"{FIRST[(i * 7) % len(FIRST)]} {LAST[(i * 11) % len(LAST)]}" for i in range(agents)],
                              dtype=object),
        "team": pick(rng, ("tier1", "tier2", "billing"), [60, 25, 15], agents),
        "hired_on": dates(START - rng.integers(10, 1500, agents) * DAY),
    }
    n = sized(7000, scale)
    order = frames["sales.orders"]
    about = rng.integers(0, len(order["id"]), n)
    has_order = rng.random(n) < 0.65
    people = frames["sales.customers"]
    customer = np.where(has_order, order["customer_id"][about],
                        rng.choice(people["id"], size=n, p=frames["_weights"]["customers"]))
    opened = np.where(has_order, order["ordered_at"][about] + rng.integers(12, 400, n) * HOUR, timestamps(rng, n))
    opened = np.minimum(opened, START + DAYS * DAY - HOUR)
    status = pick(rng, ("open", "pending", "solved", "closed"), [7, 8, 15, 70], n)
    done = np.isin(status, ["solved", "closed"])
    closed = (opened + (rng.exponential(30, n) * 3600).astype("timedelta64[s]")).astype(object)
    closed[~done] = None
    agent = with_nulls(rng, rng.choice(ids(agents), size=n, p=zipf_weights(rng, agents, 0.5)), 0.0)
    agent[(status == "open") & (rng.random(n) < 0.6)] = None
    frames["support.tickets"] = {
        "id": ids(n), "customer_id": customer,
        "order_id": keep(has_order, order["id"][about]), "agent_id": agent,
        "topic": np.where(has_order, pick(rng, ("delivery", "refund", "product"), [50, 30, 20], n),
                          pick(rng, ("billing", "account", "product"), [40, 40, 20], n)).astype(object),
        "priority": pick(rng, ("low", "normal", "high", "urgent"), [25, 55, 15, 5], n),
        "status": status, "opened_at": opened, "closed_at": closed,
    }
    answered = np.flatnonzero(done & (rng.random(n) < 0.45))
    frames["support.csat_responses"] = {
        "ticket_id": answered + 1, "score": rng.choice([1, 2, 3, 4, 5], size=len(answered),
                                                       p=[0.10, 0.08, 0.12, 0.25, 0.45]),
        "answered_at": opened[answered] + rng.integers(30, 80, len(answered)) * HOUR,
    }
    campaigns = frames["marketing.campaigns"]
    email = np.flatnonzero(campaigns["channel"] == "email") + 1
    m = sized(50000, scale)
    opted = people["id"][people["marketing_opt_in"]]
    campaign = rng.choice(email, size=m)
    start = campaigns["started_on"].astype("datetime64[s]")[campaign - 1]
    frames["marketing.email_events"] = {
        "id": ids(m), "customer_id": rng.choice(opted, size=m),
        "campaign_id": campaign,
        "event": pick(rng, ("sent", "open", "click", "unsubscribe"), [70, 20, 8, 2], m),
        "occurred_at": start + rng.integers(0, 30 * 86400, m).astype("timedelta64[s]"),
    }
    del frames["_weights"]


STEPS: tuple[Step, ...] = (catalog, marketing_and_places, customers, orders, fulfilment, support_and_email)
