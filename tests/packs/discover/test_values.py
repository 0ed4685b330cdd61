"""discover.search recognises a thing a question names by one of its values ("films in French": the
language table holds French), from the values the scan sampled; free text and numbers are not names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from discover_project import Call
from sqlite_project import sqlite_project

pytestmark = pytest.mark.anyio

MEDIA_DDL = """
CREATE TABLE language (language_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE film (film_id INTEGER PRIMARY KEY, title TEXT, description TEXT,
                   language_id INTEGER REFERENCES language (language_id));
CREATE TABLE actor (actor_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT);
CREATE TABLE film_actor (actor_id INTEGER REFERENCES actor (actor_id), film_id INTEGER REFERENCES film (film_id));
CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, full_name TEXT, job TEXT, badge TEXT);
CREATE TABLE rental (rental_id INTEGER PRIMARY KEY, film_id INTEGER REFERENCES film (film_id),
                     staff_id INTEGER REFERENCES staff (staff_id), rented_on TEXT);
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return sqlite_project(tmp_path / "proj", "media", MEDIA_DDL, [
        ("INSERT INTO language VALUES (?, ?)", enumerate(["English", "French", "German"])),
        ("INSERT INTO film VALUES (?, ?, ?, ?)", [
            (i, f"Title {i}", f"A thoughtful drama of a teacher who must find a mine shaft ({'ab'[i % 2]})", i % 3)
            for i in range(20)]),
        ("INSERT INTO staff VALUES (?, ?, ?, ?)", [
            (1, "Ann Lee", "Sales Representative", "B-1017"), (2, "Bo Chen", "Store Manager", "B-2203")]),
    ])


@pytest.fixture
async def scanned(call: Call) -> Call:
    report = await call('scan.run(connection="media")')
    assert "error" not in report, report
    return call


async def refs(call: Call, query: str, kinds: str = '["table"]') -> list[dict[str, Any]]:
    return list((await call(f'discover.search(query="{query}", kinds={kinds}, limit=10)'))["refs"])


async def test_a_value_the_scan_sampled_names_its_table(scanned: Call) -> None:
    ids = [ref["id"] for ref in await refs(scanned, "films in French")]
    assert ids[0] == "main.film" and "main.language" in ids[:2]
    found = await refs(scanned, "sales representatives", kinds='["table", "column"]')
    assert found[0]["id"] == "main.staff" and "reached" not in found[0]
    assert "main.staff.job" in [ref["id"] for ref in found]  # the column whose values hold it


async def test_free_text_and_codes_are_not_names(scanned: Call) -> None:
    for query in ("teacher", "shaft", "B-1017"):
        result = await scanned(f'discover.search(query="{query}", kinds=["table"], limit=10)')
        assert [ref["id"] for ref in result["refs"] if "reached" not in ref] == [], (query, result["refs"])
