"""Relationship inference over synthetic snapshots: recall on the usual naming styles, precision on the
columns that only look like keys, tiers, evidence and a stable order."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from khive.connections.catalog import CatalogSnapshot, Column, ColumnSample, ForeignKey, NormalizedType, Table
from packs.scan.naming import singular, words
from packs.scan.relationships import InferredRelationship, infer_relationships

NATIVE: dict[str, str] = {"integer": "integer", "string": "text", "number": "numeric(12,2)", "uuid": "uuid",
                          "timestamp": "timestamp", "date": "date", "boolean": "boolean"}


def col(name: str, type_: NormalizedType = "integer", *, pk: bool = False, default: str | None = None,
        comment: str | None = None) -> Column:
    return Column(name=name, ordinal=0, native_type=NATIVE.get(type_, type_), normalized_type=type_,
                  dimension_type="identifier" if pk else "other", primary_key=pk, default=default,
                  comment=comment)


def table(name: str, *columns: Column, db: str = "public", fks: Sequence[ForeignKey] = (),
          rows: int | None = None) -> Table:
    numbered = tuple(c.model_copy(update={"ordinal": i + 1}) for i, c in enumerate(columns))
    return Table(db=db, name=name, columns=numbered, foreign_keys=tuple(fks), estimated_rows=rows)


def sample(tbl: str, column: str, values: Sequence[int | str], *, distinct: int | None = None,
           db: str = "public") -> ColumnSample:
    return ColumnSample(db=db, table=tbl, column=column, values=tuple(values),
                        distinct=len(set(values)) if distinct is None else distinct, sampled_rows=1000)


def snap(*tables: Table, samples: Sequence[ColumnSample] = ()) -> CatalogSnapshot:
    return CatalogSnapshot(connection="test", driver="postgres", tables=tables, samples=tuple(samples))


def links(found: Sequence[InferredRelationship], tier: str | None = None) -> set[str]:
    return {f"{r.from_table}.{','.join(r.from_columns)}->{r.to_table}.{','.join(r.to_columns)}"
            for r in found if tier is None or r.tier == tier}


def shop(*, declared: bool = False) -> list[Table]:
    customer_fk = [ForeignKey(columns=("customer_id",), ref_db="public", ref_table="customers",
                              ref_columns=("id",))] if declared else []
    return [
        table("customers", col("id", pk=True), col("name", "string"), col("email", "string"),
              col("status", "string"), col("created_at", "timestamp")),
        table("orders", col("id", pk=True), col("customer_id"), col("status", "string"),
              col("total", "number"), col("created_at", "timestamp"), col("updated_at", "timestamp"),
              fks=customer_fk),
        table("order_items", col("order_id", pk=True), col("product_id", pk=True), col("quantity")),
        table("products", col("id", pk=True), col("name", "string"), col("category_id"), col("code", "string")),
        table("categories", col("id", pk=True), col("name", "string"), col("type", "string")),
        table("employees", col("employee_id", pk=True), col("name", "string"), col("reports_to")),
    ]


def shop_samples() -> list[ColumnSample]:
    return [
        sample("customers", "id", list(range(1, 21)), distinct=500),
        sample("orders", "customer_id", [3, 7, 9, 12, 15]),
        sample("order_items", "order_id", [1, 2, 3, 4]),
        sample("orders", "id", list(range(1, 21)), distinct=2000),
        sample("order_items", "product_id", [1, 2, 5]),
        sample("products", "id", list(range(1, 21)), distinct=40),
        sample("products", "category_id", [1, 2, 3, 4, 5]),
        sample("categories", "id", [1, 2, 3, 4, 5, 6]),
        sample("employees", "employee_id", list(range(1, 10))),
        sample("employees", "reports_to", [2, 5]),
    ]


SHOP_LINKS = {
    "orders.customer_id->customers.id",
    "order_items.order_id->orders.id",
    "order_items.product_id->products.id",
    "products.category_id->categories.id",
}


def test_shop_schema_only_finds_the_named_keys_and_accepts_them() -> None:
    found = infer_relationships(snap(*shop()))
    assert links(found, "accepted") == SHOP_LINKS
    assert links(found) == SHOP_LINKS  # reports_to needs values: a role name alone is not enough


def test_shop_with_samples_adds_the_role_named_self_reference() -> None:
    found = infer_relationships(snap(*shop(), samples=shop_samples()))
    assert links(found, "accepted") == SHOP_LINKS | {"employees.reports_to->employees.employee_id"}
    manager = next(r for r in found if r.from_columns == ("reports_to",))
    kinds = {e.kind for e in manager.evidence}
    assert {"role_name", "value_overlap", "type_compatible"} <= kinds


def test_declared_foreign_keys_are_not_inferred_again() -> None:
    found = infer_relationships(snap(*shop(declared=True)))
    assert "orders.customer_id->customers.id" not in links(found)
    assert links(found) == SHOP_LINKS - {"orders.customer_id->customers.id"}


def test_precision_no_links_from_status_timestamps_or_generic_names() -> None:
    found = infer_relationships(snap(*shop(), samples=shop_samples()))
    sources = {(r.from_table, c) for r in found for c in r.from_columns}
    for column in ("status", "created_at", "updated_at", "name", "code", "type", "total", "quantity", "id"):
        assert all(c != column for _, c in sources), column
    assert all(r.to_columns != ("status",) for r in found)


def test_types_must_be_compatible() -> None:
    tables = [
        table("regions", col("region_id", "string", pk=True), col("name", "string")),
        table("stores", col("store_id", pk=True), col("region_id"), col("opened_id", "date")),
        table("accounts", col("account_id", "uuid", pk=True)),
        table("invoices", col("invoice_id", pk=True), col("account_id")),
        table("openeds", col("opened_id", pk=True)),
    ]
    assert infer_relationships(snap(*tables)) == []


def test_northwind_and_chinook_camel_case() -> None:
    tables = [
        table("Customer", col("CustomerId", pk=True), col("FirstName", "string"), col("SupportRepId")),
        table("Employee", col("EmployeeId", pk=True), col("LastName", "string"), col("ReportsTo")),
        table("Invoice", col("InvoiceId", pk=True), col("CustomerId"), col("BillingPostalCode", "string")),
        table("InvoiceLine", col("InvoiceLineId", pk=True), col("InvoiceId"), col("TrackId")),
        table("Track", col("TrackId", pk=True), col("AlbumId"), col("MediaTypeId"), col("GenreId")),
        table("MediaType", col("MediaTypeId", pk=True)),
        table("Genre", col("GenreId", pk=True)),
        table("Album", col("AlbumId", pk=True), col("ArtistId")),
        table("Artist", col("ArtistId", pk=True)),
        table("Customers", col("customerID", "string", pk=True), db="nw"),
        table("Orders", col("orderID", pk=True), col("customerID", "string"), db="nw"),
    ]
    expected = {"Invoice.CustomerId->Customer.CustomerId", "InvoiceLine.InvoiceId->Invoice.InvoiceId",
                "InvoiceLine.TrackId->Track.TrackId", "Track.AlbumId->Album.AlbumId",
                "Track.MediaTypeId->MediaType.MediaTypeId", "Track.GenreId->Genre.GenreId",
                "Album.ArtistId->Artist.ArtistId", "Orders.customerID->Customers.customerID"}
    assert links(infer_relationships(snap(*tables)), "accepted") == expected
    samples = [sample("Employee", "EmployeeId", list(range(1, 9))), sample("Employee", "ReportsTo", [1, 2, 6]),
               sample("Customer", "SupportRepId", [3, 4, 5]),
               sample("Customer", "CustomerId", list(range(1, 21)), distinct=59)]
    with_values = links(infer_relationships(snap(*tables, samples=samples)), "accepted")
    assert with_values == expected | {"Customer.SupportRepId->Employee.EmployeeId",
                                      "Employee.ReportsTo->Employee.EmployeeId"}


def test_sakila_style_same_name_keys_role_prefixes_and_partitions() -> None:
    seq = "nextval('payment_payment_id_seq'::regclass)"
    payment_columns = (col("payment_id", pk=True, default=seq), col("customer_id"), col("amount", "number"))
    tables = [
        table("actor", col("actor_id", pk=True), col("first_name", "string")),
        table("film", col("film_id", pk=True), col("language_id"), col("original_language_id")),
        table("language", col("language_id", pk=True), col("name", "string")),
        table("film_actor", col("actor_id", pk=True), col("film_id", pk=True), col("last_update", "timestamp")),
        table("customer", col("customer_id", pk=True)),
        table("payment", *payment_columns),
        table("payment_p2007_01", *(c.model_copy(update={"primary_key": False}) for c in payment_columns)),
        table("staff", col("staff_id", pk=True), col("store_id")),
        table("store", col("store_id", pk=True), col("manager_staff_id")),
    ]
    found = infer_relationships(snap(*tables))
    assert links(found, "accepted") == {
        "film_actor.actor_id->actor.actor_id", "film_actor.film_id->film.film_id",
        "film.language_id->language.language_id", "film.original_language_id->language.language_id",
        "payment.customer_id->customer.customer_id", "payment_p2007_01.customer_id->customer.customer_id",
        "staff.store_id->store.store_id", "store.manager_staff_id->staff.staff_id",
    }
    # a partition repeats its parent's sequence-filled key: that is identity, not a reference
    assert not any(r.from_table == "payment_p2007_01" and r.to_table == "payment" for r in found)


def test_schema_qualified_tables_prefer_the_same_schema() -> None:
    tables = [
        table("customers", col("id", pk=True), db="sales"),
        table("customers", col("id", pk=True), db="crm"),
        table("orders", col("id", pk=True), col("customer_id"), db="sales"),
        table("tickets", col("id", pk=True), col("customer_id"), db="support"),
    ]
    found = infer_relationships(snap(*tables))
    order = [r for r in found if r.from_table == "orders"]
    assert [(r.to_db, r.tier) for r in order] == [("sales", "accepted")]
    # no customers in its own schema: two equal parents share the confidence (about half each)
    assert not [r for r in found if r.from_table == "tickets"]
    ticket = [r for r in infer_relationships(snap(*tables), review=0.4) if r.from_table == "tickets"]
    assert {r.to_db for r in ticket} == {"crm", "sales"}
    assert all(r.tier == "review" and any(e.kind == "ambiguous" for e in r.evidence) for r in ticket)


def test_plural_and_suffix_variants() -> None:
    tables = [
        table("categories", col("id", pk=True)),
        table("boxes", col("box_key", "string", pk=True)),
        table("people", col("id", pk=True)),
        table("countries", col("country_code", "string", pk=True)),
        table("items", col("id", pk=True), col("fk_category_id"), col("boxkey", "string"), col("personid"),
              col("country_code", "string"), col("CategoryID")),
    ]
    assert links(infer_relationships(snap(*tables)), "accepted") == {
        "items.fk_category_id->categories.id", "items.boxkey->boxes.box_key", "items.personid->people.id",
        "items.country_code->countries.country_code", "items.CategoryID->categories.id"}


def test_value_overlap_against_a_complete_domain_rejects_a_name_match() -> None:
    tables = [table("currencies", col("currency_code", "string", pk=True)),
              table("prices", col("price_id", pk=True), col("currency_code", "string"))]
    good = [sample("currencies", "currency_code", ["EUR", "USD", "GBP"]),
            sample("prices", "currency_code", ["EUR", "USD"])]
    bad = [good[0], sample("prices", "currency_code", ["tier-1", "tier-2", "tier-3"])]
    assert links(infer_relationships(snap(*tables, samples=good)), "accepted") == {
        "prices.currency_code->currencies.currency_code"}
    assert infer_relationships(snap(*tables, samples=bad)) == []
    # a bounded sample of a big parent proves nothing by missing values
    partial = [sample("currencies", "currency_code", ["AAA", "BBB"], distinct=170), bad[1]]
    kept = infer_relationships(snap(*tables, samples=partial))
    assert [r.tier for r in kept] == ["accepted"]
    assert any(e.kind == "value_overlap" and e.weight == 0 for e in kept[0].evidence)


def test_low_cardinality_flags_are_penalised() -> None:
    tables = [table("promos", col("promo_id", pk=True)),
              table("orders", col("order_id", pk=True), col("promo_id"))]
    samples = [sample("orders", "promo_id", [0, 1]), sample("promos", "promo_id", list(range(1, 21)), distinct=300)]
    [found] = infer_relationships(snap(*tables, samples=samples))
    assert found.tier == "review" and any(e.kind == "low_cardinality" for e in found.evidence)


def test_self_reference_needs_a_role_name() -> None:
    tables = [table("nodes", col("node_id", pk=True), col("parent_node_id"), col("other_node_id"))]
    samples = [sample("nodes", "node_id", list(range(1, 11))), sample("nodes", "parent_node_id", [1, 2, 3]),
               sample("nodes", "other_node_id", [1, 2, 3])]
    assert links(infer_relationships(snap(*tables, samples=samples))) == {"nodes.parent_node_id->nodes.node_id"}


def test_cardinality_one_to_one_when_the_child_column_is_its_key() -> None:
    tables = [table("customers", col("customer_id", pk=True)),
              table("customer_profiles", col("customer_id", pk=True), col("bio", "string")),
              table("orders", col("order_id", pk=True), col("customer_id"))]
    found = {r.from_table: r for r in infer_relationships(snap(*tables))}
    assert found["customer_profiles"].cardinality == "one_to_one"
    assert found["orders"].cardinality == "many_to_one"
    assert all(any(e.kind == "cardinality" for e in r.evidence) for r in found.values())


def test_shared_key_names_resolve_by_the_child_table_name() -> None:
    key = "businessentityid"
    tables = [table("businessentity", col(key, pk=True), col("modifieddate", "timestamp")),
              table("person", col(key, pk=True), col("firstname", "string")),
              table("employee", col(key, pk=True), col("jobtitle", "string")),
              table("personphone", col(key, pk=True), col("phonenumber", "string", pk=True)),
              table("employeepayhistory", col(key, pk=True), col("ratechangedate", "timestamp", pk=True))]
    found = {r.from_table: r for r in infer_relationships(snap(*tables)) if r.tier == "accepted"}
    assert {t: r.to_table for t, r in found.items()} == {
        "person": "businessentity", "employee": "businessentity",  # shared primary keys: one_to_one
        "personphone": "person", "employeepayhistory": "employee"}  # detail tables named after their master
    assert found["person"].cardinality == "one_to_one"


def test_short_key_names_shared_by_exactly_one_table() -> None:
    tables = [table("author", col("aid", pk=True), col("name", "string")),
              table("publication", col("pid", pk=True), col("title", "string")),
              table("writes", col("aid", pk=True), col("pid", pk=True))]
    assert links(infer_relationships(snap(*tables)), "accepted") == {"writes.aid->author.aid",
                                                                      "writes.pid->publication.pid"}


def test_composite_keys_are_matched_for_review() -> None:
    tables = [table("specialofferproduct", col("specialofferid", pk=True), col("productid", pk=True),
                    col("modifieddate", "timestamp")),
              table("salesorderdetail", col("salesorderdetailid", pk=True), col("specialofferid"),
                    col("productid"), col("modifieddate", "timestamp"))]
    [found] = infer_relationships(snap(*tables))
    assert (found.from_columns, found.to_table, found.tier) == (("specialofferid", "productid"),
                                                                "specialofferproduct", "review")


def test_comment_names_the_parent() -> None:
    tables = [table("person", col("businessentityid", pk=True)),
              table("businessentity", col("businessentityid", pk=True)),
              table("emailaddress", col("emailaddressid", pk=True), col("businessentityid", comment=(
                  "Person associated with this email address. Foreign key to Person.BusinessEntityID")))]
    found = infer_relationships(snap(*tables))
    email = [r for r in found if r.from_table == "emailaddress"]
    assert [(r.to_table, r.tier) for r in email] == [("person", "accepted")]


def test_tiers_confidence_and_evidence_are_consistent() -> None:
    found = infer_relationships(snap(*shop(), samples=shop_samples()), accept=0.9, review=0.5)
    assert found
    for rel in found:
        assert 0.0 <= rel.confidence <= 1.0
        assert rel.tier == ("accepted" if rel.confidence >= 0.9 else "review") and rel.confidence >= 0.5
        assert {"type_compatible", "cardinality"} <= {e.kind for e in rel.evidence}
        assert all(e.detail for e in rel.evidence)


def test_deterministic_whatever_the_input_order() -> None:
    tables, samples = shop(), shop_samples()
    first = infer_relationships(snap(*tables, samples=samples))
    rng = random.Random(7)
    for _ in range(5):
        rng.shuffle(tables)
        rng.shuffle(samples)
        assert infer_relationships(snap(*tables, samples=samples)) == first


def test_views_are_skipped_unless_asked() -> None:
    tables = [*shop(), Table(db="public", name="order_totals", kind="view",
                             columns=(col("customer_id").model_copy(update={"ordinal": 1}),))]
    assert "order_totals.customer_id->customers.id" not in links(infer_relationships(snap(*tables)))
    assert "order_totals.customer_id->customers.id" in links(infer_relationships(snap(*tables), include_views=True))


@pytest.mark.parametrize(("plural", "single"), [
    ("categories", "category"), ("customers", "customer"), ("addresses", "address"), ("statuses", "status"),
    ("boxes", "box"), ("people", "person"), ("salespeople", "salesperson"), ("courses", "course"),
    ("purchases", "purchase"), ("status", "status"), ("news", "news"), ("movies", "movie"), ("sizes", "size"),
])
def test_singular(plural: str, single: str) -> None:
    assert singular(plural) == single


@pytest.mark.parametrize(("name", "expected"), [
    ("CustomerId", ("customer", "id")), ("customerID", ("customer", "id")), ("customer_id", ("customer", "id")),
    ("SupportRepId", ("support", "rep", "id")), ("HTTPCode", ("http", "code")), ("customerid", ("customerid",)),
])
def test_words(name: str, expected: tuple[str, ...]) -> None:
    assert words(name) == expected
