"""bench/routing.py: the routing of a missed question, read from discover's own ranking on a made-up pool."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from discover_project import PACKS, duckdb_project

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from packs.discover import lexicon_store

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
import routing  # noqa: E402  (bench/ is on the path just above)

pytestmark = pytest.mark.anyio

# "items" names the café's order lines; "reorder level" is only a column of the garden centre's stock.
POOL_DDL = """
CREATE SCHEMA cafe;
CREATE TABLE cafe.orders (id INTEGER PRIMARY KEY, placed_at TIMESTAMP);
CREATE TABLE cafe.order_item (order_id INTEGER REFERENCES cafe.orders (id), quantity INTEGER);
CREATE SCHEMA garden_centre;
CREATE TABLE garden_centre.plant (id INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE garden_centre.inventory (plant_id INTEGER REFERENCES garden_centre.plant (id), reorder_level INTEGER);
CREATE SCHEMA kennel;
CREATE TABLE kennel.dog (id INTEGER PRIMARY KEY, name VARCHAR, breed VARCHAR);
"""


async def test_a_question_routed_elsewhere_shows_both_schemas_and_their_evidence(tmp_path: Path) -> None:
    root = tmp_path / "pool"
    duckdb_project(root, POOL_DDL)
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")
        assert (await dispatch(parse('scan.run(connection="wh")'), ctx))["results"][0]["ok"]
        await dispatch(parse('discover.search(query="items under their reorder level", limit=5)'), ctx)
        lexicon = lexicon_store.of(runtime.index)
        names = routing.unit_names(lexicon)
        found = routing.explain(lexicon, names, "items under their reorder level", "garden_centre")
        nowhere = routing.explain(lexicon, names, "which poodles are there", "kennel")
    finally:
        await runtime.aclose()
    assert [unit["unit"] for unit in found["units"][:2]] == ["cafe", "garden_centre"], found
    assert found["why"] in ("near", "far") and 0 < found["gold_share"] < 1, found
    garden = found["units"][1]["tables"]["garden_centre.inventory"]
    assert garden[list(found["terms"]).index("reorder")] > 0, found  # the column match is shown as evidence
    assert nowhere["why"] == "unreached" and nowhere["gold_share"] is None, nowhere
