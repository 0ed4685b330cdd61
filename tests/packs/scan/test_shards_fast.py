"""The shard fast path writes byte for byte what the ruamel merge path writes, and steps aside for edited shards."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import CommentedMap

from packs.scan import shards
from packs.scan.artifacts import latest_sync, read_run_tables

TRICKY = ["yes", "no", "true", "True", "null", "~", "", " ", "-", "- a", "a: b", "a:", "#x", "x #y", "123", "1.5",
          "0x1F", "1_000", ".inf", ".nan", "2024-01-02", "2024-01-02 10:00:00+00", "'new'", "it's", 'say "hi"',
          "a\nb", "a  b", "---x", "...x", "?x", ":x", "%x", "@x", "!x", "&x", "*x", "|x", ">x", "[x", "{x", "a,b",
          "x" * 130, "word " * 30, "nextval('orders_id_seq'::regclass)", "e5", "+1", "é", "\x85", "\u2028", "日本",
          "\ufeff", "\x00", "\U0001f600"]
TEXT = st.one_of(st.sampled_from(TRICKY), st.text(max_size=140))
KEY = st.one_of(st.sampled_from([t for t in TRICKY if t]), st.text(min_size=1, max_size=140))
SCALAR = st.one_of(TEXT, st.integers(-10**20, 10**20), st.floats(), st.booleans())
COLUMN = st.fixed_dictionaries(
    {"name": KEY, "type": st.sampled_from(["integer", "string"]), "nativeType": TEXT,
     "dimensionType": st.just("categorical"), "nullable": st.booleans()},
    optional={"default": TEXT, "comment": TEXT, "primaryKey": st.just(True),
              "samples": st.lists(SCALAR, min_size=1, max_size=10)})
RELATION = st.fixed_dictionaries(
    {"fromDb": KEY, "fromTable": KEY, "fromColumns": st.lists(KEY, min_size=1, max_size=2), "toDb": KEY,
     "toTable": KEY, "toColumns": st.lists(KEY, min_size=1, max_size=2), "confidence": st.floats(0, 1),
     "tier": st.just("accepted"),
     "evidence": st.lists(st.fixed_dictionaries({"kind": TEXT, "detail": TEXT, "weight": st.floats(-9, 9)}),
                          min_size=1, max_size=2)})
ENTRY = st.fixed_dictionaries(
    {"kind": st.just("table"),
     "columns": st.lists(COLUMN, min_size=1, max_size=3)},
    optional={"comment": TEXT, "estimatedRows": st.integers(0, 10**12),
              "foreignKeys": st.lists(st.fixed_dictionaries(
                  {"columns": st.lists(KEY, min_size=1, max_size=2), "refDb": KEY, "refTable": KEY,
                   "refColumns": st.lists(KEY, min_size=1, max_size=2)}), min_size=1, max_size=2),
              "inferredRelationships": st.lists(RELATION, min_size=1, max_size=2)})
HEADER = st.fixed_dictionaries({"connection": KEY, "catalog": st.one_of(st.none(), KEY), "schema": KEY})


def merged(header: dict[str, Any], entries: dict[str, dict[str, Any]], text: str | None = None) -> str:
    return shards.dump(shards.merge(shards.load(text), header, entries, "sync"))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(HEADER, st.dictionaries(KEY, ENTRY, min_size=1, max_size=3))
def test_render_writes_what_ruamel_writes(header: dict[str, Any], entries: dict[str, dict[str, Any]]) -> None:
    assert shards.render(header, entries) == merged(header, entries)


def test_render_writes_repeated_columns_as_ruamel_does() -> None:
    """A column repeated across tables is written once per render and copied; values Python holds equal but
    YAML writes differently (True, 1, 1.0) are never taken for one another."""
    same = {"name": "id", "type": "integer", "nativeType": "bigint", "dimensionType": "identifier", "nullable": False}
    entries = {f"t{i}": {"kind": "table", "columns": [dict(same), {**same, "name": "flag", "default": value}]}
               for i, value in enumerate([True, 1, 1.0, "1", True, 1, ["a"], ["a"]])}
    header = {"connection": "wh", "catalog": None, "schema": "s"}
    text = shards.render(header, entries)
    assert text == merged(header, entries)
    assert "default: true" in text and "default: 1\n" in text and "default: 1.0" in text


LINK_ITEM = st.sampled_from(["id", "1", 1, True, 1.0, "customer_id", "yes"])
LINK = st.fixed_dictionaries({"columns": st.lists(LINK_ITEM, min_size=1, max_size=2),
                              "refDb": st.sampled_from(["s", "t"]), "refTable": st.sampled_from(["a", "b"]),
                              "refColumns": st.lists(LINK_ITEM, min_size=1, max_size=2)})


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(HEADER, st.lists(LINK, min_size=1, max_size=4), st.data())
def test_foreign_keys_repeated_across_tables_render_as_ruamel_does(header: dict[str, Any],
                                                                   pool: list[dict[str, Any]],
                                                                   data: st.DataObject) -> None:
    """Many tables name the same foreign keys and relationships (equal dicts, not one object): their lines are
    made once per render, and lists Python holds equal but YAML writes differently ([1], [True], [1.0]) are
    never taken for one another."""
    column = {"name": "id", "type": "integer", "nativeType": "bigint", "dimensionType": "identifier",
              "nullable": False}
    entries = {f"t{i}": {"kind": "table", "columns": [column],
                         "foreignKeys": [dict(link) for link in data.draw(st.lists(st.sampled_from(pool), min_size=1,
                                                                                   max_size=3))]}
               for i in range(5)}
    assert shards.render(header, entries) == merged(header, fresh(entries))


def test_foreign_key_lists_of_equal_values_and_other_types_are_written_apart() -> None:
    link = {"columns": ["code"], "refDb": "s", "refTable": "a"}
    entries = {f"t{i}": {"kind": "table", "columns": [{"name": "code", "type": "string", "nativeType": "text",
                                                       "dimensionType": "identifier", "nullable": False}],
                         "foreignKeys": [{**link, "refColumns": [value]}]}
               for i, value in enumerate([1, True, 1.0, "1", 1])}
    header = {"connection": "wh", "catalog": None, "schema": "s"}
    text = shards.render(header, entries)
    assert text == merged(header, fresh(entries))
    lines = text.splitlines()
    assert [lines[at + 1].strip() for at, line in enumerate(lines) if line.strip() == "refColumns:"] == \
        ["- 1", "- true", "- 1.0", "- '1'", "- 1"]


def _entries(project: Path, connection: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    sync = latest_sync(project, connection)
    assert sync is not None
    tables = read_run_tables(project, connection, sync)
    entries = {t["name"]: shards.scan_entry(t) for t in tables.values()}
    return {"connection": connection, "catalog": "shop", "schema": "main"}, entries


@pytest.mark.anyio
async def test_a_pristine_rescan_writes_what_the_merge_path_writes(call: Any, project: Path) -> None:
    shard = project / "_schema/shop/shop.main.yaml"
    await call('scan.run(connection="shop")')
    first = shard.read_text()
    assert first == merged(*_entries(project, "shop"))
    await call('scan.run(connection="shop")')
    assert shard.read_text() == merged(*_entries(project, "shop"), text=first)


@pytest.mark.anyio
async def test_an_edited_shard_takes_the_merge_path(call: Any, project: Path) -> None:
    shard = project / "_schema/shop/shop.main.yaml"
    await call('scan.run(connection="shop")')
    shard.write_text(shard.read_text().replace("  orders:\n", "  orders:  # the checkout table\n    notes: hot\n"))
    await call('scan.run(connection="shop")')
    text = shard.read_text()
    assert "  orders:  # the checkout table\n" in text and "    notes: hot\n" in text
    await call('scan.run(connection="shop")')  # still not the scan's own text: the merge path again
    assert "  orders:  # the checkout table\n" in shard.read_text()


def test_render_falls_back_to_ruamel_for_an_empty_schema() -> None:
    header = {"connection": "c", "catalog": None, "schema": "s"}
    assert shards.render(header, {}) == shards.dump(shards.merge(CommentedMap(), header, {}, "sync"))


_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


def _unjudgeable(value: Any) -> bool:
    """NaN != NaN, and ruamel itself reads NEL / LS / PS back as other whitespace (the shard text is
    ruamel's either way): equality cannot judge such an example."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return any(mark in value for mark in _YAML_BREAKS)
    if isinstance(value, dict):
        return any(_unjudgeable(k) or _unjudgeable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unjudgeable(v) for v in value)
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(HEADER, st.dictionaries(KEY, ENTRY, min_size=1, max_size=3))
def test_parsing_a_rendered_shard_gives_back_its_entries(header: dict[str, Any],
                                                         entries: dict[str, dict[str, Any]]) -> None:
    """What lets scan.tables / scan.entity take an untouched shard's entries from the run instead of parsing."""
    from ruamel.yaml import YAML

    assume(not _unjudgeable(entries) and not _unjudgeable(header))
    assert YAML(typ="safe").load(shards.render(header, entries)) == {**header, "tables": entries}


ARTIFACT_COLUMN = st.fixed_dictionaries(
    {"name": st.sampled_from(["id", "code", "flag"]), "normalizedType": st.sampled_from(["integer", "string"]),
     "nativeType": st.sampled_from(["bigint", "text"]), "dimensionType": st.just("categorical"),
     "nullable": st.sampled_from([True, False, 1, 0]), "ordinal": st.integers(1, 3)},
    optional={"default": st.sampled_from([None, True, 1, 1.0, "1", "x"]), "comment": st.sampled_from(["", "the key"]),
              "primaryKey": st.booleans(),
              "samples": st.fixed_dictionaries({"examples": st.lists(st.one_of(SCALAR, st.lists(st.integers(),
                                                                                                  max_size=1)),
                                                                      max_size=3)})})


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(HEADER, st.lists(ARTIFACT_COLUMN, min_size=1, max_size=6), st.data())
def test_shared_column_entries_render_as_unshared_ones(header: dict[str, Any], pool: list[dict[str, Any]],
                                                       data: st.DataObject) -> None:
    """A scan shares equal columns' artifacts between tables (the same object, or an equal one elsewhere); the
    entries and the shard made from them are those of the same tables made one column at a time, and no
    object met twice becomes a YAML anchor."""
    tables: list[dict[str, Any]] = [{"db": "s", "name": f"t{i}", "kind": "table",
                                      "columns": data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))}
                                     for i in range(4)]
    made = shards.ColumnEntries()
    shared = {str(t["name"]): shards.scan_entry(t, made) for t in tables}
    plain = {str(t["name"]): shards.scan_entry(t) for t in tables}
    assert shared == plain
    assert [[type(v) for c in e["columns"] for v in c.values()] for e in shared.values()] == \
        [[type(v) for c in e["columns"] for v in c.values()] for e in plain.values()]
    assert shards.render(header, shared) == merged(header, fresh(plain))


def fresh(value: Any) -> Any:
    """``value`` rebuilt with no object in two places (what a scan made column by column holds)."""
    if isinstance(value, dict):
        return {key: fresh(item) for key, item in value.items()}
    return [fresh(item) for item in value] if isinstance(value, list) else value
