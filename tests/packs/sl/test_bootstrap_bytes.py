"""sl.bootstrap writes the bytes ruamel's dump would, whichever writer ran (ADR 0054).

A DuckDB warehouse whose names and comments are hostile to YAML (reserved words, numbers as strings, quotes,
colons, unicode, leading spaces, runs of spaces, multi-line text, text longer than a line) is scanned once and
bootstrapped twice from copies: once as shipped, once with the fast writer switched off (every file through
ruamel). The two semantic layers are the same bytes, the reports the same, and every source is valid.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sl_shop import configure, run_ops

from khive.project import blockyaml
from khive.project.yamldoc import round_trip_yaml
from packs.sl import store

LONG = ("One row per shipment leg of an order, from the warehouse dock to the carrier's hub, "
        "with the amounts in the order currency and the weights in kilograms as the carrier reported them")
COMMENTS = {
    "orders": LONG,
    "yes": "yes",
    "null": "null: not a value",
    "x 1": " leading space",
    "ünïcode": "Ünïcode 日本語 — dash: colon",
}
SPACED = "net  of  tax  and  discounts  " * 8 + "end"  # folded anywhere, a fold lands on a run of spaces
COLUMN_COMMENTS = ["123", "on", "it's: quoted", "'single'", '"double"', "multi\nline comment", "a  b  " * 30,
                   "tab\tinside", "#hash", "- dash", LONG + " " + LONG, "~", "1e3", "true", SPACED,
                   SPACED.replace("net", "it's")]


def _warehouse(path: Path) -> None:
    db = duckdb.connect(str(path))
    for table, comment in COMMENTS.items():
        columns = ", ".join(f'"c{i} {w}" VARCHAR' for i, w in enumerate(["id", "no", "null", "x"]))
        db.execute(f'CREATE TABLE "{table}" (id INTEGER PRIMARY KEY, amount DECIMAL(12,2), {columns})')
        db.execute(f"COMMENT ON TABLE \"{table}\" IS '{comment.replace(chr(39), chr(39) * 2)}'")
        for i, text in enumerate(["123", "on", "~", "[x]: y"]):
            db.execute(f"COMMENT ON COLUMN \"{table}\".\"c{i} {['id', 'no', 'null', 'x'][i]}\" IS "
                       f"'{text.replace(chr(39), chr(39) * 2)}'")
    db.execute('CREATE TABLE notes (id INTEGER PRIMARY KEY, ' + ", ".join(
        f"n{i} VARCHAR" for i in range(len(COLUMN_COMMENTS))) + ")")
    for i, text in enumerate(COLUMN_COMMENTS):
        db.execute(f"COMMENT ON COLUMN notes.n{i} IS '{text.replace(chr(39), chr(39) * 2)}'")
    db.close()


def test_fast_and_ruamel_writers_leave_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    configure(root, "  wh:\n    driver: duckdb\n    path: wh.duckdb\n")
    _warehouse(root / "wh.duckdb")
    run_ops(root, {}, 'scan.run(connection="wh")')
    shutil.copytree(root, tmp_path / "ruamel")
    answered: list[bool] = []

    def counted(data: Mapping[str, Any]) -> str | None:
        text = blockyaml.dump_block(data)
        answered.append(text is not None)
        return text

    monkeypatch.setattr(store, "dump_block", counted)
    (fast,) = run_ops(root, {}, 'sl.bootstrap(connection="wh")')
    assert len(answered) == len(COMMENTS) + 1 and sum(answered) >= 4  # the fast writer wrote some of them
    monkeypatch.setattr(store, "dump_block", lambda data: None)  # every file through ruamel
    (slow,) = run_ops(tmp_path / "ruamel", {}, 'sl.bootstrap(connection="wh")')
    assert fast == slow and fast["errors"] == [] and len(fast["created"]) == len(COMMENTS) + 1
    written = {p.name: p.read_bytes() for p in (root / "semantic-layer" / "wh").glob("*.yaml")}
    assert written == {p.name: p.read_bytes() for p in (tmp_path / "ruamel" / "semantic-layer" / "wh").glob("*.yaml")}
    (listed,) = run_ops(root, {}, 'sl.list(connection="wh")')
    assert listed["count"] == len(COMMENTS) + 1 and listed["errors"] == {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []


def test_runs_of_spaces_survive_the_files(tmp_path: Path) -> None:
    """ruamel folds a long plain scalar after a run of spaces, which then reads back as one space: such text is
    quoted instead, in the shards and in the sources, so a comment reads back as the database holds it."""
    root = tmp_path / "proj"
    configure(root, "  wh:\n    driver: duckdb\n    path: wh.duckdb\n")
    _warehouse(root / "wh.duckdb")
    run_ops(root, {}, 'scan.run(connection="wh")', 'sl.bootstrap(connection="wh")')
    for folder in ("_schema/wh", "semantic-layer/wh"):
        (written,) = [path for path in (root / folder).glob("*.yaml") if "notes" in path.read_text()
                      and "discounts" in path.read_text()]
        texts = " | ".join(_strings(round_trip_yaml().load(written.read_text())))
        assert SPACED in texts and SPACED.replace("net", "it's") in texts, folder


def test_the_index_holds_what_a_rebuild_reads(tmp_path: Path) -> None:
    """The bootstrap hands the index the models of the files it wrote; a rebuild reads the files themselves."""
    root = tmp_path / "proj"
    configure(root, "  wh:\n    driver: duckdb\n    path: wh.duckdb\n")
    _warehouse(root / "wh.duckdb")
    queries = ['sl.search(query="shipment amount", limit=20)', 'sl.search(query="yes null notes", limit=20)']
    _, *handed = run_ops(root, {}, 'scan.run(connection="wh")', 'sl.bootstrap(connection="wh")', *queries)
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (root / ".khive" / name).unlink(missing_ok=True)
    rebuilt = run_ops(root, {}, *queries)
    assert handed[1:] == rebuilt and all(result["hits"] for result in rebuilt)
