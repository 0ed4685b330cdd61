"""Data-backed: discover.search on a slice of defog's questions beats the FTS5 baseline by a clear margin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "retrieval-dev" / "defog"
DBS = ("academic", "scholar", "yelp")  # shared names across schemas (author, journal, ...) make it hard


@pytest.mark.data
@pytest.mark.postgres
def test_discover_ranks_gold_tables_well_above_the_baseline(pg_database: str) -> None:
    if not DATA.is_dir():
        pytest.skip("../shared/data/retrieval-dev/defog is not here")
    sys.path.insert(0, str(ROOT / "bench"))
    import retrieval

    retrieval.load(pg_database, DBS)
    figures = retrieval.evaluate(pg_database, DBS)
    ours, baseline = figures["ours"], figures["baseline_fts_descriptions"]
    assert figures["questions"] == 80
    assert ours["all_gold@10"] >= 0.95 and ours["all_gold@10"] >= baseline["all_gold@10"]
    assert ours["all_gold@3"] >= 0.8 and ours["all_gold@3"] >= baseline["all_gold@3"] + 0.1
