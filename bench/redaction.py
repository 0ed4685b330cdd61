"""Redaction benchmark: what the core redaction service (khive/redact.py, ADR 0035) costs where it runs.

    .venv/bin/python bench/redaction.py            # prints ONE JSON line
    .venv/bin/python bench/redaction.py --quick    # smaller inputs, for a smoke test

1. Query-history texts: the TPC-H and TPC-DS queries of ``../shared/data/workloads`` (generated analytics SQL
   when absent), redacted as text and as SQL, in MB/s; and, per template, the redaction of its canonical text
   against normalizing it (``historic_sql``'s Normalizer, the step every history text passes anyway).
2. Sample values: short strings like a scan's samples (names, codes, emails, dates, prose), µs per value,
   against ``str.lower`` of the same value (the cheapest thing anyone would do to a value).
3. Linearity: adversarial inputs (long digit runs, ``key=`` repeated, ``eyJ`` repeated, a PEM header without an
   end, many URL-like colons...) at 1 and 4 MB: the ratio of the times is ~4 when the cost is linear.
4. Secret-dense text: 1 MB in which every line holds a credential.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from khive.redact import BUILTIN
from packs.historic_sql.normalize import Normalizer

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT.parent / "shared" / "data" / "workloads"
ADVERSARIAL = {
    "digits": "1234567890",
    "digits_spaced": "1 2 3 4 5 ",
    "key_equals": "key=",
    "password_equals": "password=x1 ",
    "token_spaced": "token = x ",
    "jwt_prefix": "eyJ",
    "jwt_dots": "eyJaaaaaaa.",
    "pem_unended": "-----BEGIN RSA PRIVATE KEY-----AAAA",
    "colons": "://:",
    "sk_prefix": "sk-",
    "aws_prefix": "AKIA",
    "identified_by": "identified by ",
    "quote_open": "password='xxxxxxxx",
    "plain_words": "orders revenue customer status ",
}


def best(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def queries() -> tuple[list[tuple[str, str]], str]:
    found = sorted([*WORKLOADS.glob("tpch/*/*.sql"), *WORKLOADS.glob("tpcds/*/*.sql")])
    if found:
        return [(p.read_text(encoding="utf-8"), "duckdb" if p.parts[-2] == "duckdb_queries" else "postgres")
                for p in found], f"{len(found)} TPC-H/TPC-DS files"
    rng = random.Random(1)
    made = [(f"SELECT c{i}.name, SUM(o.amount) FROM orders AS o JOIN customers AS c{i} ON o.customer_id = c{i}.id "
             f"WHERE o.status = '{rng.choice(['paid', 'open'])}' AND o.day >= DATE '2024-0{1 + i % 9}-01' "
             f"GROUP BY 1 ORDER BY 2 DESC LIMIT {10 + i}", "postgres") for i in range(200)]
    return made, "200 generated queries"


def history(rounds: int) -> dict[str, object]:
    texts, source = queries()
    corpus = "\n".join(text for text, _ in texts)
    text_s = best(lambda: BUILTIN.text(corpus), rounds)
    sql_s = best(lambda: BUILTIN.sql(corpus), rounds)
    canon = []
    normalize_us, redact_us = [], []
    for text, dialect in texts:
        normalizer = Normalizer(dialect)  # fresh: no cache
        started = time.perf_counter()
        canonical = normalizer.normalize(text).canonical_sql
        normalize_us.append((time.perf_counter() - started) * 1e6)
        canon.append(canonical)
        redact_us.append(best(lambda canonical=canonical: BUILTIN.sql(canonical), 3) * 1e6)
    unchanged = sum(BUILTIN.text(text) == text and BUILTIN.sql(text) == text for text, _ in texts)
    return {"source": source, "chars": len(corpus), "text_mb_s": round(len(corpus) / text_s / 1e6, 1),
            "sql_mb_s": round(len(corpus) / sql_s / 1e6, 1), "unchanged": f"{unchanged}/{len(texts)}",
            "per_template_redact_us_median": round(statistics.median(redact_us), 1),
            "per_template_normalize_us_median": round(statistics.median(normalize_us), 1),
            "redact_over_normalize": round(sum(redact_us) / sum(normalize_us), 4)}


def samples(count: int, rounds: int) -> dict[str, object]:
    rng = random.Random(7)
    pool = ["Ada Lovelace", "enterprise", "2024-03-01 10:00:00", "ops@example.com", "EUR", "42.50", "shipped",
            "SKU-19-ABC", "Customer 1234", "north-west region", "a longer note about the order that was late",
            "+1 555 123 4567", "https://example.com/p/42", "true", "17"]
    values = [rng.choice(pool) + ("" if rng.random() < 0.7 else f" {rng.randint(1, 10**6)}") for _ in range(count)]
    ours = best(lambda: [BUILTIN.value(v) for v in values], rounds)
    bare = best(lambda: [v.lower() for v in values], rounds)
    return {"values": count, "us_per_value": round(ours / count * 1e6, 2),
            "lower_us_per_value": round(bare / count * 1e6, 3), "ratio_to_lower": round(ours / bare, 1)}


def linearity(megabytes: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, unit in ADVERSARIAL.items():
        small = unit * (megabytes * 1_000_000 // len(unit))
        large = small * 4
        small_s = best(lambda small=small: BUILTIN.text(small), 1)
        large_s = best(lambda large=large: BUILTIN.text(large), 1)
        out[name] = {"mb_s": round(len(large) / large_s / 1e6, 1), "x4_ratio": round(large_s / small_s, 2)}
    return out


def dense(megabytes: int) -> dict[str, object]:
    lines = ["host=db user=etl password=hunter2 dbname=x", "token=ghp_" + "a" * 36, "AKIA" + "B" * 16 + " rotated",
             "card 4111 1111 1111 1111 paid", "postgresql://u:pw@h/db"]
    text = "\n".join(lines * (megabytes * 1_000_000 // sum(len(line) + 1 for line in lines)))
    seconds = best(lambda: BUILTIN.text(text), 1)
    return {"mb_s": round(len(text) / seconds / 1e6, 1), "secrets": text.count("\n") + 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 2 if args.quick else 5
    print(json.dumps({"bench": "redaction", "history": history(rounds),
                      "samples": samples(2_000 if args.quick else 50_000, rounds),
                      "linearity": linearity(1), "dense": dense(1)}))


if __name__ == "__main__":
    main()
