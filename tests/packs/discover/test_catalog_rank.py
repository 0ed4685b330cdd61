"""discover.search over a pooled warehouse: routing and fill, identifier morphology, bridges, folded
partitions, fill flagged as reached, and connection scoping, through the dispatcher on generated schemas."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest
from discover_project import PACKS, Call, duckdb_project

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio

# Several small databases pooled into one DuckDB file, one schema each, keys declared, no rows.
POOL_DDL = """
CREATE SCHEMA edu;
CREATE TABLE edu.schools (cds_code VARCHAR PRIMARY KEY, school_name VARCHAR, county VARCHAR, charter BOOLEAN);
CREATE TABLE edu.frpm (cds_code VARCHAR PRIMARY KEY REFERENCES edu.schools (cds_code),
                       free_meal_cnt INTEGER, enrollment INTEGER);
CREATE TABLE edu.satscores (cds VARCHAR PRIMARY KEY REFERENCES edu.schools (cds_code),
                            NumTstTakr INTEGER, AvgScrRead INTEGER, AvgScrMath INTEGER);
CREATE SCHEMA pets;
CREATE TABLE pets.student (stuid INTEGER PRIMARY KEY, fname VARCHAR, lname VARCHAR, age INTEGER);
CREATE TABLE pets.pets (petid INTEGER PRIMARY KEY, pettype VARCHAR, pet_age INTEGER, weight DOUBLE);
CREATE TABLE pets.has_pet (stuid INTEGER REFERENCES pets.student (stuid), petid INTEGER REFERENCES pets.pets (petid));
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id INTEGER PRIMARY KEY, full_name VARCHAR, city VARCHAR);
CREATE TABLE shop.orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES shop.customers (id),
                          order_dt DATE, amt DECIMAL(10, 2), status VARCHAR);
CREATE TABLE shop.payment (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES shop.orders (id), amount DECIMAL(10, 2),
                           paid_at TIMESTAMP);
CREATE TABLE shop.payment_p2024_01 (id INTEGER, order_id INTEGER, amount DECIMAL(10, 2), paid_at TIMESTAMP);
CREATE TABLE shop.payment_p2024_02 (id INTEGER, order_id INTEGER, amount DECIMAL(10, 2), paid_at TIMESTAMP);
CREATE TABLE shop.payment_p2024_03 (id INTEGER, order_id INTEGER, amount DECIMAL(10, 2), paid_at TIMESTAMP);
CREATE TABLE shop.salesorderheader (salesorderid INTEGER PRIMARY KEY, customerid INTEGER, totaldue DECIMAL(12, 2));
CREATE SCHEMA music;
CREATE TABLE music.artist (artistid INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE music.album (albumid INTEGER PRIMARY KEY, title VARCHAR,
                          artistid INTEGER REFERENCES music.artist (artistid));
CREATE TABLE music.customers (id INTEGER PRIMARY KEY, email VARCHAR, country VARCHAR);
CREATE SCHEMA ledger;
CREATE TABLE ledger.accounts (id INTEGER PRIMARY KEY, billing_cycle VARCHAR, country VARCHAR);
CREATE TABLE ledger.statements (id INTEGER PRIMARY KEY, account_id INTEGER REFERENCES ledger.accounts (id),
                                billing_country VARCHAR, due DATE);
CREATE SCHEMA campus;
CREATE TABLE campus.instructor (instructor_id INTEGER PRIMARY KEY, full_name VARCHAR);
CREATE TABLE campus.course (course_id INTEGER PRIMARY KEY, title VARCHAR);
CREATE TABLE campus.course_staff (course_id INTEGER REFERENCES campus.course (course_id),
                                  instructor_id INTEGER REFERENCES campus.instructor (instructor_id));
CREATE SCHEMA video;
CREATE TABLE video.client (client_id INTEGER PRIMARY KEY, first_name VARCHAR, last_name VARCHAR, last_update TIMESTAMP);
CREATE TABLE video.rental (rental_id INTEGER PRIMARY KEY, client_id INTEGER REFERENCES video.client (client_id),
                           rental_year INTEGER, last_update TIMESTAMP);
CREATE SCHEMA diet;
CREATE TABLE diet.dish (dish_id INTEGER PRIMARY KEY, title VARCHAR, calorie INTEGER);
CREATE SCHEMA library;
CREATE TABLE library.author (author_id INTEGER PRIMARY KEY, full_name VARCHAR);
CREATE TABLE library.book (book_id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES library.author (author_id),
                           title VARCHAR);
CREATE TABLE library.edition (edition_id INTEGER PRIMARY KEY, book_id INTEGER REFERENCES library.book (book_id),
                              isbn VARCHAR);
CREATE TABLE library.copy (copy_id INTEGER PRIMARY KEY,
                           edition_id INTEGER REFERENCES library.edition (edition_id), shelf VARCHAR);
CREATE TABLE library.loan (loan_id INTEGER PRIMARY KEY, copy_id INTEGER REFERENCES library.copy (copy_id),
                           due DATE);
CREATE TABLE library.reminder (reminder_id INTEGER PRIMARY KEY,
                               loan_id INTEGER REFERENCES library.loan (loan_id), sent DATE);
CREATE TABLE library.publisher (publisher_id INTEGER PRIMARY KEY, label VARCHAR);
CREATE TABLE library.imprint (imprint_id INTEGER PRIMARY KEY,
                              publisher_id INTEGER REFERENCES library.publisher (publisher_id));
CREATE TABLE library.opening_hours (weekday INTEGER PRIMARY KEY, opens TIME, closes TIME);
CREATE SCHEMA cinema;
CREATE TABLE cinema.language (language_id INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE cinema.movie (movie_id INTEGER PRIMARY KEY, title VARCHAR, runtime INTEGER,
                           language_id INTEGER REFERENCES cinema.language (language_id));
CREATE VIEW cinema.movie_list AS SELECT m.title, m.runtime, l.name AS language_name
    FROM cinema.movie m JOIN cinema.language l ON l.language_id = m.language_id;
CREATE TABLE cinema.theatre (theatre_id INTEGER PRIMARY KEY, name VARCHAR, seats INTEGER);
CREATE SCHEMA retail;
CREATE TABLE retail.customer (c_id INTEGER PRIMARY KEY, c_name VARCHAR);
CREATE TABLE retail.date_dim (d_id INTEGER PRIMARY KEY, d_date DATE);
""" + "".join(f"""
CREATE TABLE retail.{channel}_{fact} ({p}_customer_id INTEGER REFERENCES retail.customer (c_id),
    {p}_date_id INTEGER REFERENCES retail.date_dim (d_id), {p}_net_{fact} DECIMAL);"""
              for channel in ("store", "web", "catalog", "phone", "kiosk") for fact in ("sales", "returns")
              for p in (channel[0] + fact[0],))
# Two copies of one schema: any question about it is a tie between them.
FLEET_KINDS = ("cargo", "crew", "port", "route", "owner", "refit", "flag")
POOL_DDL += "".join(f"""
CREATE SCHEMA {fleet};""" + "".join(f"""
CREATE TABLE {fleet}.vessel_{kind} (id INTEGER PRIMARY KEY, tonnage INTEGER);""" for kind in FLEET_KINDS)
                    for fleet in ("east_fleet", "west_fleet"))
# A second connection with a same-named table: scoping to it must not reorder what it holds.
CRM_DDL = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, segment TEXT);
CREATE TABLE visits (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers (id), visited_at TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers (id), total NUMERIC);
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init_project(root, "ann")
    pool = duckdb.connect(str(root / "pool.duckdb"))
    pool.execute(POOL_DDL)
    pool.close()
    crm = sqlite3.connect(root / "crm.sqlite")
    crm.executescript(CRM_DDL)
    crm.close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  pool:\n    driver: duckdb\n    path: pool.duckdb\n"
                           "  crm:\n    driver: sqlite\n    path: crm.sqlite\n"))
    return root


@pytest.fixture
async def pooled(call: Call) -> Call:
    for connection in ("pool", "crm"):
        report = await call(f'scan.run(connection="{connection}")')
        assert "error" not in report, report
    return call


async def tables(call: Call, query: str, limit: int = 10, **extra: Any) -> list[dict[str, Any]]:
    args = "".join(f", {key}={value}" for key, value in extra.items())
    refs = (await call(f'discover.search(query="{query}", kinds=["table"], limit={limit}{args})'))["refs"]
    return list(refs)


async def test_a_question_is_routed_to_its_schema_and_filled_from_it(pooled: Call) -> None:
    refs = await tables(pooled, "schools with SAT test takers above 1500")
    ids = [ref["id"] for ref in refs]
    assert set(ids[:3]) == {"edu.schools", "edu.satscores", "edu.frpm"}  # the whole schema before any other
    frpm = next(ref for ref in refs if ref["id"] == "edu.frpm")
    assert frpm.get("reached") == "fill" and "matchedOn" in frpm  # reached through its key, not matched


async def test_abbreviated_and_concatenated_identifiers_meet_the_words_of_a_question(pooled: Call) -> None:
    assert (await tables(pooled, "average reading score and number of test takers"))[0]["id"] == "edu.satscores"
    assert (await tables(pooled, "order amount and order date"))[0]["id"] == "shop.orders"
    assert (await tables(pooled, "total due of each sales order header"))[0]["id"] == "shop.salesorderheader"


async def test_two_question_words_written_together_in_one_column_name_rank_its_table_first(pooled: Call) -> None:
    # ledger.accounts holds both words in two columns, ledger.statements in one: "billing country" names the latter
    assert (await tables(pooled, "billing country"))[0]["id"] == "ledger.statements"


async def test_a_routed_schema_leaves_room_for_the_best_tables_of_the_runner_up(pooled: Call) -> None:
    # retail matches "customer" and "sales" in a dozen tables; shop's customers must still make the first ten
    ids = [ref["id"] for ref in await tables(pooled, "net sales per customer")]
    assert len(ids) == 10 and ids[0].startswith("retail.")
    assert sum(i.startswith("retail.") for i in ids) <= 8 and "shop.customers" in ids


async def test_two_schemas_tied_for_a_question_share_the_list(pooled: Call) -> None:
    # seven tables of each copy match alike: the runner-up's best five come before the leader's sixth
    ids = [ref["id"] for ref in await tables(pooled, "vessel tonnage")]
    assert len(ids) == 10
    assert sum(i.startswith("east_fleet.") for i in ids) == sum(i.startswith("west_fleet.") for i in ids) == 5


async def test_a_verb_reaches_the_synonyms_of_the_noun_derived_from_it(pooled: Call) -> None:
    # "teaches" -> teacher, a synonym of instructor: the table is matched, not only reached as fill
    refs = await tables(pooled, "who teaches each course")
    instructor = next(ref for ref in refs if ref["id"] == "campus.instructor")
    assert "reached" not in instructor and refs.index(instructor) < 3


async def test_an_irregular_past_form_reaches_what_its_verb_reaches(pooled: Call) -> None:
    # "taught" is teach, so teacher, a synonym of instructor; a "-ies" plural meets an "-ie" singular
    refs = await tables(pooled, "who taught each course")
    instructor = next(ref for ref in refs if ref["id"] == "campus.instructor")
    assert "reached" not in instructor and refs.index(instructor) < 3
    refs = (await pooled('discover.search(query="calories", kinds=["table", "column"])'))["refs"]
    assert [ref["id"] for ref in refs[:2]] == ["diet.dish", "diet.dish.calorie"]


async def test_a_period_says_when_not_what(pooled: Call) -> None:
    # "last year" would match video's last_name, last_update and rental_year and route the question there
    ids = [ref["id"] for ref in await tables(pooled, "which customers ordered the most last year")]
    assert {i.split(".")[1] for i in ids[:2]} == {"customers", "orders"}  # shop's or crm's, both fit
    assert not any(i.startswith("video.") for i in ids[:4])


async def test_a_value_reaches_the_table_that_holds_values_of_its_kind(pooled: Call) -> None:
    # no table is named "french": the language a movie is in is what the question asks about
    refs = await tables(pooled, "movies in French")
    language = next(ref for ref in refs if ref["id"] == "cinema.language")
    assert refs[0]["id"] == "cinema.movie" and refs.index(language) == 1 and "reached" not in language


async def test_british_and_american_spellings_meet(pooled: Call) -> None:
    refs = await tables(pooled, "theaters and their names")
    assert refs[0]["id"] == "cinema.theatre" and "reached" not in refs[0]


async def test_a_view_follows_the_tables_it_restates(pooled: Call) -> None:
    refs = await tables(pooled, "movie title and language name")
    ids = [ref["id"] for ref in refs]
    assert ids[:3] == ["cinema.movie", "cinema.language", "cinema.movie_list"]
    assert "view" in refs[2]["flags"]


# A rental business whose reporting views are named by what they sum, beside a trading company's staff tables.
REPORTING_DDL = """
CREATE SCHEMA rentals;
CREATE TABLE rentals.store (store_id INTEGER PRIMARY KEY, city VARCHAR);
CREATE TABLE rentals.staff (staff_id INTEGER PRIMARY KEY, store_id INTEGER REFERENCES rentals.store (store_id),
                            first_name VARCHAR);
CREATE TABLE rentals.rental (rental_id INTEGER PRIMARY KEY, staff_id INTEGER REFERENCES rentals.staff (staff_id));
CREATE VIEW rentals.sales_by_store AS SELECT s.city AS store, st.first_name AS manager, count(*) AS total_sales
    FROM rentals.store s JOIN rentals.staff st ON st.store_id = s.store_id GROUP BY s.city, st.first_name;
CREATE VIEW rentals.sales_by_staff AS SELECT first_name AS staff, count(*) AS total_sales FROM rentals.staff
    GROUP BY first_name;
CREATE SCHEMA trade;
CREATE TABLE trade.employees (employee_id INTEGER PRIMARY KEY, last_name VARCHAR, title VARCHAR);
CREATE TABLE trade.territories (territory_id VARCHAR PRIMARY KEY, territory_description VARCHAR);
CREATE TABLE trade.employee_territories (employee_id INTEGER REFERENCES trade.employees (employee_id),
                                         territory_id VARCHAR REFERENCES trade.territories (territory_id));
CREATE TABLE trade.orders (order_id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES trade.employees (employee_id));
CREATE SCHEMA records;
CREATE TABLE records.employee (employee_id INTEGER PRIMARY KEY, reports_to INTEGER, title VARCHAR);
CREATE TABLE records.customer (customer_id INTEGER PRIMARY KEY,
                               support_rep_id INTEGER REFERENCES records.employee (employee_id));
CREATE TABLE records.invoice (invoice_id INTEGER PRIMARY KEY,
                              customer_id INTEGER REFERENCES records.customer (customer_id), total DECIMAL);
CREATE TABLE records.region (region_id INTEGER PRIMARY KEY, label VARCHAR);
CREATE SCHEMA weather;
CREATE TABLE weather.region (region_id INTEGER PRIMARY KEY, label VARCHAR);
CREATE TABLE weather.reading (region_id INTEGER REFERENCES weather.region (region_id), rain_mm DECIMAL);
"""


async def test_a_reporting_views_name_routes_weakly(tmp_path: Path) -> None:
    # On realworld-pg, sakila's views sales_by_store and sales_by_film_category took "What sales territories does
    # each employee cover?" from northwind's tables: a view restates the words of the tables it reads, and a
    # word of its name ("sales") labels a sum, not a table; as routing evidence a view counts VIEW_EVIDENCE
    root = tmp_path / "reporting"
    duckdb_project(root, REPORTING_DDL)
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")
        scanned = await dispatch(parse('scan.run(connection="wh")'), ctx)
        assert scanned["results"][0]["ok"], scanned
        found = await dispatch(parse('discover.search(query="What sales territories does each employee cover?", '
                                     'kinds=["table"], limit=10)'), ctx)
    finally:
        await runtime.aclose()
    ids = [ref["id"] for ref in found["results"][0]["result"]["refs"]]
    assert set(ids[:3]) == {"trade.employees", "trade.territories", "trade.employee_territories"}, ids


async def test_a_link_table_no_word_names_joins_the_two_it_links(pooled: Call) -> None:
    refs = await tables(pooled, "students who have a pet older than 3", explain="true")
    ids = [ref["id"] for ref in refs]
    assert set(ids[:3]) == {"pets.student", "pets.pets", "pets.has_pet"}
    bridge = next(ref for ref in refs if ref["id"] == "pets.has_pet")
    assert any(flag.startswith("bridge:") for flag in bridge.get("flags", [])) or bridge.get("reached") == "fill"


async def test_partitions_and_empty_copies_fold_into_their_parent(pooled: Call) -> None:
    refs = await tables(pooled, "payments amount by month")
    ids = [ref["id"] for ref in refs]
    assert ids[0] == "shop.payment"
    assert not any(i.startswith("shop.payment_p") for i in ids)
    assert "3 partitions or copies folded in" in refs[0]["flags"]


async def test_nothing_lexical_returns_nothing_and_fill_never_invents_matches(pooled: Call) -> None:
    assert await tables(pooled, "zyzzyva") == []
    refs = await tables(pooled, "artist names")
    assert refs[0]["id"] == "music.artist" and "reached" not in refs[0]
    assert all(ref.get("reached") in (None, "fill", "bridge") for ref in refs)


async def test_a_question_few_tables_match_is_filled_to_its_limit_nearest_join_first(pooled: Call) -> None:
    refs = await tables(pooled, "authors with the most books", limit=6)
    ids = [ref["id"] for ref in refs]
    assert set(ids[:2]) == {"library.author", "library.book"} and not any("reached" in ref for ref in refs[:2])
    # the edition matches through its book_id; then two joins away, three, four: reached, not matched
    assert ids[2:] == ["library.edition", "library.copy", "library.loan", "library.reminder"]
    assert "reached" not in refs[2] and all(ref.get("reached") == "fill" for ref in refs[3:])
    wider = [ref["id"] for ref in await tables(pooled, "authors with the most books", limit=20)]
    # nothing joins the publisher, its imprints or the opening hours to the books: they are never invented
    assert wider == ids


async def test_scoping_to_a_connection_keeps_the_unscoped_order_of_its_refs(pooled: Call) -> None:
    for query in ("customers and their orders total", "customer visits", "orders by customer segment"):
        everything = [ref["docId"] for ref in await tables(pooled, query, limit=50) if ref["connectionId"] == "crm"]
        scoped = [ref["docId"] for ref in await tables(pooled, query, connection='"crm"', limit=50)]
        assert scoped == everything and scoped


INHERITED_DDL = """
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, email TEXT);
CREATE TABLE payment (payment_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer, amount NUMERIC,
                      payment_date TIMESTAMP);
CREATE TABLE payment_p2007_01 (CHECK (payment_date < '2007-02-01')) INHERITS (payment);
CREATE TABLE payment_p2007_02 (CHECK (payment_date >= '2007-02-01')) INHERITS (payment);
INSERT INTO payment_p2007_01 SELECT i, NULL, 1.5, '2007-01-05' FROM generate_series(1, 40) i;
INSERT INTO payment_p2007_02 SELECT i, NULL, 2.5, '2007-02-05' FROM generate_series(41, 70) i;
ANALYZE;
"""


@pytest.mark.postgres
async def test_postgres_inheritance_children_fold_into_the_parent(tmp_path: Path, pg_database: str) -> None:
    import psycopg

    from khive.bootstrap import open_runtime
    from khive.context import CLI, Context
    from khive.dispatch import dispatch
    from khive.dsl import parse

    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(INHERITED_DDL)
    root = tmp_path / "pg"
    init_project(root, "ann")
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  rentals:\n    driver: postgres\n    url: env:RENTALS_URL\n"))
    runtime = open_runtime(root, {"KHIVE_PACKS": "core,scan,discover", "RENTALS_URL": pg_database})
    try:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")

        async def call(text: str) -> dict[str, Any]:
            (result,) = (await dispatch(parse(text), ctx))["results"]
            assert result["ok"], result
            return dict(result["result"])

        await call('scan.run(connection="rentals")')
        tables = (await call('scan.tables(connection="rentals")'))
        names = {table["name"]: table for table in tables["tables"]}
        assert set(names) == {"customer", "payment"} and names["payment"]["estimatedRows"] == 70
        refs = (await call('discover.search(query="payments in february", kinds=["table"])'))["refs"]
        assert refs[0]["id"] == "public.payment" and len(refs) == 2
    finally:
        await runtime.aclose()
