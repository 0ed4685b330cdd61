"""discover.search over a warehouse with comments: a word many comments repeat (boilerplate) counts little,
through the dispatcher on a generated DuckDB pool (issue #17, ADR 0031 fifth session)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from discover_project import Call
from sqlite_project import duckdb_project

from packs.discover import comment_weights

pytestmark = pytest.mark.anyio

# Every column of the erp schema carries the same formula ("... kept for merge replication"); one of them also
# says what it holds. The logistics schema has no comments at all. Filler tables make the words rare in the
# catalog, as a real warehouse's are.
ERP_TABLES = ("part", "bin", "shelf", "crate", "pallet")
POOL_DDL = "CREATE SCHEMA erp;" + "".join(f"""
CREATE TABLE erp.{name} ({name}_id INTEGER PRIMARY KEY, rowguid VARCHAR, modified TIMESTAMP);
COMMENT ON COLUMN erp.{name}.{name}_id IS 'Primary key, kept for merge replication.';
COMMENT ON COLUMN erp.{name}.rowguid IS 'Row identifier, kept for merge replication.';
COMMENT ON COLUMN erp.{name}.modified IS 'Date the row changed, kept for merge replication.';"""
                                       for name in ERP_TABLES) + """
ALTER TABLE erp.pallet ADD COLUMN tare DECIMAL;
COMMENT ON COLUMN erp.pallet.tare IS 'Empty weight in kilograms, kept for merge replication.';
CREATE SCHEMA logistics;
CREATE TABLE logistics.parcel (parcel_id INTEGER PRIMARY KEY, weight DECIMAL, sent DATE);
CREATE SCHEMA misc;""" + "".join(f"""
CREATE TABLE misc.filler_{i} (id INTEGER PRIMARY KEY, label_{i} VARCHAR);""" for i in range(30))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return duckdb_project(tmp_path / "proj", "pool", POOL_DDL)


async def first_tables(call: Call, query: str) -> list[str]:
    report = await call('scan.run(connection="pool")')
    assert "error" not in report, report
    refs = (await call(f'discover.search(query="{query}", kinds=["table"], limit=5)'))["refs"]
    return [ref["id"] for ref in refs]


async def test_a_word_every_comment_repeats_counts_less_than_a_word_a_column_names(call: Call) -> None:
    # "replication" is in every erp comment: it says nothing about which table. "weight" is a column of parcel
    # and a comment word of pallet's tare; parcel, named by its column, is the answer.
    ids = await first_tables(call, "weight replication")
    assert ids[0] == "logistics.parcel", ids
    assert "erp.pallet" in ids  # the comment still counts, below


async def test_without_the_rule_the_boilerplate_word_wins(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same catalog with every comment word counted fully: the repeated formula carries pallet to the top.
    monkeypatch.setattr(comment_weights, "COMMON_MIN", 10**9)
    ids = await first_tables(call, "weight replication")
    assert ids[0] == "erp.pallet", ids


async def test_a_catalog_with_few_comments_keeps_every_comment_word(call: Call, project: Path) -> None:
    # Only pallet's four comments are left: too few to call any of their words a formula, so "replication"
    # counts like any comment word and pallet, which holds both words, leads.
    pool = duckdb.connect(str(project / "pool.duckdb"))
    for name in ERP_TABLES[:-1]:
        pool.execute(f"DROP TABLE erp.{name}")
    pool.close()
    ids = await first_tables(call, "weight replication")
    assert ids[0] == "erp.pallet", ids
