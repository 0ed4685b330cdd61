"""Why each tuning question missed: the schemas ``discover.search`` routed it between and the evidence each got.

    .venv/bin/python bench/routing.py                        # the small databases (ADR 0057), misses at 3
    .venv/bin/python bench/routing.py --set abbrev --k 10    # a pooled dev variant: plain, comments, abbrev

Prints ONE JSON line: per miss the question, its gold schema and that schema's routing share, the best few units
(schemas merged by foreign keys) with their share and their best tables' evidence per question term; and a summary
of the misses by how far the gold schema was from being routed first:

* ``unreached``: no question word reaches the gold schema (a value or a synonym stands for its tables);
* ``tie``: its share is at least ``route.CONTESTED`` but another unit leads (the question's words do not tell them
  apart; the unit-size term decides);
* ``near`` (0.75 up to that) and ``far`` (below 0.75): another schema's evidence is stronger;
* ``routed``: the gold schema leads, and the miss is the order or the fill inside it.

Held-out questions are never read (the same hash as ``bench/retrieval.py``). The evidence comes from
``packs.discover.route`` itself (``score_tables`` and ``route``), as ``discover.search`` computes it; ADR 0031's
eighth session is the reading this tool was written for.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import devwarehouse  # noqa: E402  (bench/ is on the path)
import retrieval  # noqa: E402
import smalldbs  # noqa: E402

from khive.bootstrap import open_runtime  # noqa: E402
from khive.context import CLI, Context  # noqa: E402
from khive.dispatch import dispatch  # noqa: E402
from khive.dsl import parse  # noqa: E402
from packs.discover import forms, lexicon_store, route, search  # noqa: E402
from packs.discover.lexicon import Lexicon  # noqa: E402
from packs.discover.text import query_terms  # noqa: E402

SHOWN_UNITS = 4  # units listed per miss
SHOWN_TABLES = 3  # of each, its best tables by coverage
NEAR = 0.75


def tuning_cases(which: str) -> tuple[Path, list[dict[str, Any]]]:
    """The warehouse and its tuning questions (held-out ones left out entirely)."""
    if which == "small":
        smalldbs.build()
        return smalldbs.TARGET, [c for c in smalldbs.questions(smalldbs.TARGET) if not retrieval.held_out(c["id"])]
    builds = devwarehouse.warehouses()
    cases = retrieval.written_questions(builds["plain"][0]) + retrieval.defog_questions(retrieval.DATABASES)
    cases = [c for c in cases if c["id"].startswith("defog-") or not retrieval.held_out(c["id"])]
    if which == "abbrev":
        renamed = devwarehouse.abbrev_tables()
        cases = [{**c, "gold": [frozenset(renamed[t] for t in g) for g in c["gold"]]} for c in cases]
    return builds[which][0], cases


def classify(gold_share: float | None, leads: bool) -> str:
    """How far the gold schema was from being routed first."""
    if leads:
        return "routed"
    if not gold_share:
        return "unreached"
    if gold_share >= route.CONTESTED:
        return "tie"
    return "near" if gold_share >= NEAR else "far"


def unit_names(lexicon: Lexicon) -> dict[int, str]:
    """unit -> its schemas (``a+b`` when a foreign key merged them)."""
    schemas: dict[int, set[str]] = {}
    for table_id, table in lexicon.tables.items():
        schemas.setdefault(table.unit, set()).add(table_id.split(":", 2)[-1].split(".")[0].lower())
    return {unit: "+".join(sorted(names)) for unit, names in schemas.items()}


def explain(lexicon: Lexicon, names: dict[int, str], question: str, gold_schema: str) -> dict[str, Any]:
    """The routing of one question, computed as ``discover.search`` computes it."""
    terms = query_terms(search.PERIOD.sub(" ", search.SORTING.sub(" ", question)))
    expanded = forms.expand(question, terms, lexicon)
    weights = route.idfs(expanded, lexicon)
    scored = route.score_tables(expanded, weights, lexicon, None)
    shares = route.route(expanded, weights, lexicon, scored)
    ranked = sorted(shares, key=lambda unit: (-shares[unit], unit))
    gold_units = [unit for unit in shares if gold_schema in names[unit].split("+")]
    gold_share = max((shares[unit] for unit in gold_units), default=None)
    leads = bool(ranked) and ranked[0] in gold_units

    def unit_view(unit: int) -> dict[str, Any]:
        best = sorted((e for e in scored.values() if e.table.unit == unit), key=lambda e: -e.coverage)[:SHOWN_TABLES]
        return {"unit": names[unit], "share": round(shares[unit], 3),
                "tables": {e.table.doc_id.split(":", 2)[-1]: [round(v, 2) for v in e.evidence] for e in best}}

    shown = ranked[:SHOWN_UNITS] + [u for u in gold_units if u not in ranked[:SHOWN_UNITS]]
    return {"terms": {t.word: round(w, 2) for t, w in zip(expanded, weights, strict=True)},
            "gold_share": None if gold_share is None else round(gold_share, 3),
            "why": classify(gold_share, leads), "units": [unit_view(unit) for unit in shown]}


async def misses(which: str, k: int) -> dict[str, Any]:
    path, cases = tuning_cases(which)
    with tempfile.TemporaryDirectory() as tmp:
        root = retrieval.new_project(Path(tmp), f"  wh:\n    driver: duckdb\n    path: {path}\n")
        runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan,discover"})
        try:
            ctx = Context(runtime, "operator:bench", CLI, presentation="verbose")
            scanned = await dispatch(parse('scan.run(connection="wh")'), ctx)
            assert scanned["results"][0]["ok"], scanned
            out = []
            for case in cases:
                text = (f'discover.search(query={json.dumps(case["question"])}, kinds=["table", "column"], '
                        "limit=10)")
                envelope = await dispatch(parse(text), ctx)
                ranked = retrieval.table_order(envelope["results"][0]["result"]["refs"])
                if any(gold <= set(ranked[:k]) for gold in case["gold"]):
                    continue
                lexicon = lexicon_store.of(runtime.index)  # the one the search just used
                gold_schema = next(iter(case["gold"][0])).split(".")[0]
                out.append({"id": case["id"], "q": case["question"], "gold": sorted(case["gold"][0]),
                            "top": ranked[:5], **explain(lexicon, unit_names(lexicon), case["question"], gold_schema)})
        finally:
            await runtime.aclose()
    return {"bench": "routing", "set": which, "k": k, "tuning_questions": len(cases), "misses": len(out),
            "why": dict(Counter(m["why"] for m in out).most_common()), "rows": out}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="small", choices=["small", *sorted(devwarehouse.VARIANTS)])
    parser.add_argument("--k", type=int, default=3, help="a miss: not every gold table among the first k")
    args = parser.parse_args()
    print(json.dumps(anyio.run(misses, args.set, args.k)))


if __name__ == "__main__":
    main()
