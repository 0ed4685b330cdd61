"""discover.search routes a question to the schema that reaches most of its words, through the dispatcher on a
made-up pool of small databases (one schema each, keys declared, no rows)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from discover_project import PACKS

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio

# A café whose order lines are named after "item", a garden centre whose stock says "reorder level" only in a
# column, and an unrelated kennel so that no word is in every schema.
SMALL_DBS_DDL = """
CREATE SCHEMA cafe;
CREATE TABLE cafe.product (id INTEGER PRIMARY KEY, name VARCHAR, price DECIMAL(8, 2));
CREATE TABLE cafe.orders (id INTEGER PRIMARY KEY, placed_at TIMESTAMP);
CREATE TABLE cafe.order_item (order_id INTEGER REFERENCES cafe.orders (id),
                              product_id INTEGER REFERENCES cafe.product (id), quantity INTEGER);
CREATE SCHEMA garden_centre;
CREATE TABLE garden_centre.plant (id INTEGER PRIMARY KEY, name VARCHAR, hardiness VARCHAR);
CREATE TABLE garden_centre.inventory (plant_id INTEGER REFERENCES garden_centre.plant (id), on_hand INTEGER,
                                      reorder_level INTEGER);
CREATE SCHEMA kennel;
CREATE TABLE kennel.dog (id INTEGER PRIMARY KEY, name VARCHAR, breed VARCHAR);
CREATE TABLE kennel.walk (id INTEGER PRIMARY KEY, dog_id INTEGER REFERENCES kennel.dog (id), walked_on DATE);
"""


async def test_several_words_in_one_schemas_columns_outweigh_one_table_name(tmp_path: Path) -> None:
    # "items" names cafe.order_item; "reorder" and "level" are only columns of garden_centre.inventory. Two of the
    # question's words landing in one schema say more about where it belongs than one word naming a table
    # elsewhere: routing evidence short of a name counts raised to EVIDENCE_POWER (ADR 0031, eighth session).
    root = tmp_path / "small"
    init_project(root, "ann")
    duckdb.connect(str(root / "wh.duckdb")).execute(SMALL_DBS_DDL).close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}",
                                                 "connections:\n  wh: {driver: duckdb, path: wh.duckdb}"))
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")
        scanned = await dispatch(parse('scan.run(connection="wh")'), ctx)
        assert scanned["results"][0]["ok"], scanned
        found = await dispatch(parse('discover.search(query="items under their reorder level", kinds=["table"], '
                                     'limit=10)'), ctx)
    finally:
        await runtime.aclose()
    ids = [ref["id"] for ref in found["results"][0]["result"]["refs"]]
    assert ids[0] == "garden_centre.inventory", ids
    assert "garden_centre.plant" in ids[:3], ids
