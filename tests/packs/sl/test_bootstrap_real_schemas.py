"""sl.bootstrap on schemas shaped like sakila and chinook (ADR 0033): names that do not depend on which connection
is bootstrapped first, measures from what columns mean, both relationships kept under join roles, queries that
name their join path with ``via``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sl_shop import PACKS, configure, layer, ops, source

pytestmark = pytest.mark.anyio

ENV = {"KHIVE_PACKS": PACKS}

RENTALS = """
CREATE TABLE store (store_id INTEGER PRIMARY KEY, name TEXT, manager_staff_id INTEGER REFERENCES staff(staff_id));
CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, name TEXT, store_id INTEGER REFERENCES store(store_id));
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT, store_id INTEGER REFERENCES store(store_id));
CREATE TABLE payment (payment_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(customer_id),
                      staff_id INTEGER REFERENCES staff(staff_id), amount NUMERIC(5, 2));
CREATE TABLE language (language_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE film (film_id INTEGER PRIMARY KEY, title TEXT, language_id INTEGER REFERENCES language(language_id),
                   original_language_id INTEGER REFERENCES language(language_id), rental_rate NUMERIC(4, 2),
                   replacement_cost NUMERIC(5, 2), length INTEGER);
INSERT INTO store VALUES (1, 'Lethbridge', 1), (2, 'Woodridge', 2);
INSERT INTO staff VALUES (1, 'Mike', 1), (2, 'Jon', 2);
INSERT INTO customer VALUES (1, 'Mary', 1), (2, 'Patricia', 2);
INSERT INTO payment VALUES (1, 1, 2, 10), (2, 2, 2, 5), (3, 1, 1, 1);
INSERT INTO language VALUES (1, 'English'), (2, 'French');
INSERT INTO film VALUES (1, 'Academy Dinosaur', 1, 2, 0.99, 20.99, 86), (2, 'Ace Goldfinger', 1, 1, 4.99, 12.99, 48),
                        (3, 'Adaptation Holes', 2, NULL, 2.99, 18.99, 50);
"""
MUSIC = """
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT);
CREATE TABLE invoice (invoice_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(customer_id),
                      total NUMERIC(10, 2), freight NUMERIC(10, 2));
CREATE TABLE invoice_line (invoice_line_id INTEGER PRIMARY KEY, invoice_id INTEGER REFERENCES invoice(invoice_id),
                           unit_price NUMERIC(10, 2), quantity INTEGER, discount REAL, milliseconds INTEGER);
INSERT INTO customer VALUES (1, 'Luis', 'Brazil'), (2, 'Leonie', 'Germany');
INSERT INTO invoice VALUES (1, 1, 3.96, 1.5), (2, 2, 1.98, 2.25);
INSERT INTO invoice_line VALUES (1, 1, 0.99, 2, 0, 343719), (2, 1, 0.99, 2, 0.1, 342562), (3, 2, 1.99, 1, 0, 230619);
"""


def make_project(root: Path) -> Path:
    configure(root, "  rentals:\n    driver: sqlite\n    path: rentals.sqlite\n"
                    "  music:\n    driver: sqlite\n    path: music.sqlite\n")
    for name, ddl in (("rentals", RENTALS), ("music", MUSIC)):
        db = sqlite3.connect(root / f"{name}.sqlite")
        db.executescript(ddl)
        db.commit()
        db.close()
    return root


@pytest.fixture
def scanned(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "first")
    return root


async def test_names_do_not_depend_on_which_connection_goes_first(scanned: Path, tmp_path: Path) -> None:
    await ops(scanned, ENV, 'scan.run(connection="rentals")', 'scan.run(connection="music")')
    other = tmp_path / "second"
    shutil.copytree(scanned, other, ignore=shutil.ignore_patterns(".khive"))
    rentals, music = await ops(scanned, ENV, 'sl.bootstrap(connection="rentals")', 'sl.bootstrap(connection="music")')
    music_first, rentals_second = await ops(other, ENV, 'sl.bootstrap(connection="music")',
                                            'sl.bootstrap(connection="rentals")')
    assert layer(scanned) == {path.replace("second", "first"): text for path, text in layer(other).items()}
    assert rentals["renamed"] == rentals_second["renamed"] == [
        {"table": "main.customer", "source": "rentals_customer",
         "reason": "connection music also has a table customer"}]
    assert music["renamed"] == music_first["renamed"] == [
        {"table": "main.customer", "source": "music_customer",
         "reason": "connection rentals also has a table customer"}]
    assert source(scanned, "music", "invoice")["joins"][0]["to"] == "music_customer"


async def test_measures_follow_what_columns_mean(scanned: Path) -> None:
    await ops(scanned, ENV, 'scan.run(connection="music")', 'scan.run(connection="rentals")',
              'sl.bootstrap(connection="music")', 'sl.bootstrap(connection="rentals")')
    lines = source(scanned, "music", "invoice_line")
    measures = {m["name"]: (m["agg"], m.get("expr")) for m in lines["measures"]}
    assert measures == {"invoice_line_count": ("count", None), "avg_unit_price": ("avg", "unit_price"),
                        "total_quantity": ("sum", "quantity"), "avg_discount": ("avg", "discount"),
                        "revenue": ("sum", "unit_price * quantity")}
    why = lines["descriptions"]["bootstrap"]
    assert "unit_price is a price or rate, averaged, never summed" in why
    assert "revenue is unit_price x quantity, summed; discount is not applied to it" in why
    assert "milliseconds: numbers whose names say nothing additive, left as dimensions" in why
    invoice = source(scanned, "music", "invoice")
    assert {m["name"] for m in invoice["measures"]} == {"invoice_count", "sum_total", "total_freight"}
    assert "freight is an amount, summed" in invoice["descriptions"]["bootstrap"]
    film = source(scanned, "rentals", "film")
    assert {m["name"]: m["agg"] for m in film["measures"]} == {"film_count": "count", "avg_rental_rate": "avg",
                                                               "total_replacement_cost": "sum"}
    (answer,) = await ops(scanned, ENV, 'sl.query(connection="music", measures=["revenue", "avg_unit_price"])')
    db = sqlite3.connect(scanned / "music.sqlite")
    revenue, average = db.execute("SELECT SUM(unit_price * quantity), AVG(unit_price) FROM invoice_line").fetchone()
    db.close()
    assert answer["rows"][0][0] == pytest.approx(revenue) and answer["rows"][0][1] == pytest.approx(average)


async def test_a_second_relationship_to_a_source_is_kept_under_a_role(scanned: Path) -> None:
    await ops(scanned, ENV, 'scan.run(connection="rentals")')
    (report,) = await ops(scanned, ENV, 'sl.bootstrap(connection="rentals")')
    film = source(scanned, "rentals", "film")
    assert [(j["to"], j.get("role"), j["on"][0]["from"]) for j in film["joins"]] == [
        ("language", "language", "language_id"), ("language", "original_language", "original_language_id")]
    store = source(scanned, "rentals", "store")
    assert sorted((j["to"], j["relationship"], j.get("role")) for j in store["joins"]) == [
        ("customer", "one_to_many", None), ("staff", "many_to_one", "manager_staff"),
        ("staff", "one_to_many", "staff_by_store")]
    assert any("film joins language 2 ways (roles language, original_language)" in n for n in report["notes"])
    by_language, by_original = await ops(
        scanned, ENV, 'sl.query(connection="rentals", measures=["film_count"], dimensions=["language.name"], '
                 'order_by=["name"])',
        'sl.query(connection="rentals", measures=["film_count"], dimensions=["language.name"], '
        'via=["original_language"], order_by=["name"])')
    assert by_language["rows"] == [["English", 2], ["French", 1]]
    assert any("used the first declared" in note and 'via=["original_language"]' in note
               for note in by_language["notes"])
    assert by_original["rows"] == [["English", 1], ["French", 1], [None, 1]]


async def test_a_query_names_its_join_path_with_via(scanned: Path) -> None:
    await ops(scanned, ENV, 'scan.run(connection="rentals")', 'sl.bootstrap(connection="rentals")')  # alone: customer
    base = 'sl.query(connection="rentals", measures=["total_amount"], dimensions=["store.name"], order_by=["name"]'
    ambiguous, by_customer, by_staff, unknown, aside = await ops(
        scanned, ENV, base + ")", base + ', via=["customer"])', base + ', via=["staff"])',
        base + ', via=["stafff"])',
        'sl.query(connection="rentals", measures=["total_amount"], dimensions=["customer.name"], via=["staff"])')
    assert ambiguous["error"]["code"] == "ambiguous_join_path"
    assert "via=[" in ambiguous["error"]["message"]
    assert by_customer["rows"] == [["Lethbridge", 11], ["Woodridge", 5]]  # Mary paid 10 + 1, Patricia 5
    assert by_staff["rows"] == [["Lethbridge", 1], ["Woodridge", 15]]  # Mike took 1, Jon 10 + 5
    assert unknown["error"]["code"] == "unknown_name" and "did you mean staff" in unknown["error"]["message"]
    assert aside["error"]["code"] == "invalid_via"  # payment reaches customer without staff
    assert "without going through staff" in aside["error"]["message"]
