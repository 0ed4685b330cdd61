"""discover.search over abbreviated identifiers: short runs of two known pieces (``isopen``, ``custid``),
two-letter short forms (``Ph``, ``Nm``) and tables named by a cut of the word (``cou``), through the dispatcher
on a generated DuckDB pool (issue #17, ADR 0031 sixth session). The split and the weight are also taken out,
to show their question fails without them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from discover_project import Call
from sqlite_project import duckdb_project

from khive.index import morph
from packs.discover import forms

pytestmark = pytest.mark.anyio

POOL_DDL = """
CREATE SCHEMA shop;
CREATE TABLE shop.branch (branch_id INTEGER PRIMARY KEY, isopen BOOLEAN, city VARCHAR);
CREATE TABLE shop.ledger (entry_id INTEGER PRIMARY KEY, custid INTEGER, amt DECIMAL);
CREATE TABLE shop.depot (depot_id INTEGER PRIMARY KEY, capacity INTEGER, city VARCHAR);
CREATE TABLE shop.courier (courier_id INTEGER PRIMARY KEY, CourierNm VARCHAR, Ph VARCHAR);
CREATE SCHEMA uni;
CREATE TABLE uni.cou (cou_id INTEGER PRIMARY KEY, title VARCHAR, credits INTEGER);
CREATE TABLE uni.course_offering (offering_id INTEGER PRIMARY KEY, cou_id INTEGER REFERENCES uni.cou (cou_id),
                                  semester VARCHAR);
CREATE TABLE uni.learner (learner_id INTEGER PRIMARY KEY, full_name VARCHAR);
CREATE SCHEMA misc;""" + "".join(f"""
CREATE TABLE misc.filler_{i} (id INTEGER PRIMARY KEY, label_{i} VARCHAR);""" for i in range(20))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return duckdb_project(tmp_path / "proj", "pool", POOL_DDL)


@pytest.fixture(autouse=True)
def fresh_words() -> Iterator[None]:
    """Identifier words are memoised per process: a test that changes a rule must not see another's."""
    for cached in (morph.segment, morph.identifier_words):
        cached.cache_clear()
    yield
    for cached in (morph.segment, morph.identifier_words):
        cached.cache_clear()


async def search(call: Call, query: str, kind: str) -> list[str]:
    report = await call('scan.run(connection="pool")')
    assert "error" not in report, report
    refs = (await call(f'discover.search(query="{query}", kinds=["{kind}"], limit=5)'))["refs"]
    return [ref["id"] for ref in refs]


async def test_a_short_run_of_two_known_pieces_meets_each_word(call: Call) -> None:
    # ``isopen`` is is + open, ``custid`` is cust (customer) + id: neither run is a word of its own
    assert (await search(call, "open", "column"))[:1] == ["shop.branch.isopen"]
    assert (await search(call, "customer", "column"))[:1] == ["shop.ledger.custid"]


async def test_without_the_split_a_short_run_meets_no_word(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(morph, "PAIR_MIN", 10**6)
    assert "shop.branch.isopen" not in await search(call, "open", "column")


async def test_a_word_of_its_own_is_never_split_in_two() -> None:
    # ``coupon`` could be co + upon, ``userid`` use + rid: a word stays whole, and abbreviations win the cut
    assert morph.segment("coupon") == ("coupon",)
    assert morph.segment("userid") == ("user", "id")


async def test_two_letter_short_forms_of_data_naming_meet_their_words(call: Call) -> None:
    # ``Ph`` is phone and ``Nm`` name in a hand-made schema; no rule could read two letters as a cut of a word
    assert (await search(call, "phone", "column"))[:1] == ["shop.courier.Ph"]
    assert (await search(call, "courier name", "column"))[:1] == ["shop.courier.CourierNm"]


async def test_a_table_named_by_a_cut_of_the_word_leads_for_that_word(call: Call) -> None:
    # ``cou`` is the course table; course_offering names the word as one part of two
    assert (await search(call, "courses", "table"))[:2] == ["uni.cou", "uni.course_offering"]


async def test_at_the_old_weight_the_partial_name_won(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forms, "ABBREVIATED", 0.8)
    assert (await search(call, "courses", "table"))[:1] == ["uni.course_offering"]
