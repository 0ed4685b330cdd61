"""Every value of a PostgreSQL, a DuckDB and a SQLite type matrix reaches the agent as the rule says, over
the CLI (in-process and through the daemon), MCP stdio and MCP Streamable HTTP: ``sql.execute``,
``sl.query`` (a SUM over bigint, which PostgreSQL answers with numeric), scan samples (``scan.entity``,
raw-sources, ``_schema`` shards) and ``sl.dictionary_search``. Expected values come from each
database's own text (value_matrix.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from ruamel.yaml import YAML
from value_matrix import (
    DUCK_NESTED,
    DUCK_SCALARS,
    PG_COLUMNS,
    Matrix,
    duck_expected,
    pg_expected,
    pg_ledger_expected,
    sqlite_expected,
)
from value_transports import TRANSPORTS, ask

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PG_TEXT_LIKE = {"ip", "net", "mac", "uid", "rng", "trng", "pt", "bits", "mood", "pair", "txt"}
DUCK_SAMPLED = {"dec", "dec38", "dec_tiny", "huge", "huge_small", "uhuge", "big_max", "bignum", "ival_mixed",
                "ival_month", "ival_signs", "ival_us", "ival_neg", "uuid_nil", "ttz", "ttz_neg", "tm_ns", "ts_inf",
                "ts_ninf", "tstz", "tstz_inf", "date_ninf", "date_bc", "ts_far", "ts_ns", "dbl_nan", "dbl_inf",
                "dbl_negzero", "f4", "mood", "txt"}


@dataclass
class Expected:
    pg: dict[int, dict[str, Any]]
    duck: dict[str, Any]
    lite: dict[int, list[Any]]
    ledger: dict[str, list[Any]]

    def pg_row(self, label: str) -> dict[str, Any]:
        return next(row for row in self.pg.values() if row["label"] == label)


def same(got: Any, want: Any, where: str) -> None:
    """Equal, of the same JSON type, and -0.0 stays -0.0."""
    assert type(got) is type(want), f"{where}: got {got!r} ({type(got).__name__}), want {want!r}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for key in want:
            same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for index, (item, wanted) in enumerate(zip(got, want, strict=True)):
            same(item, wanted, f"{where}[{index}]")
    elif isinstance(want, float):
        assert got == want and math.copysign(1, got) == math.copysign(1, want), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def same_set(got: list[Any], want: list[Any], where: str) -> None:
    def key(value: Any) -> str:
        return orjson.dumps(value).decode() + (" -0" if isinstance(value, float) and math.copysign(1, value) < 0
                                                else "")

    same(sorted(got, key=key), sorted(want, key=key), where)


@pytest.fixture(scope="module")
def expected(matrix: Matrix) -> Expected:
    def interval_iso(texts: list[str]) -> list[str]:
        """PostgreSQL prints each of DuckDB's interval texts as ISO 8601 (the two share months/days/µs)."""
        with psycopg.connect(matrix.dsn, options="-c intervalstyle=iso_8601") as conn:
            return [str(conn.execute("SELECT %s::interval::text", [text]).fetchone()[0])  # type: ignore[index]
                    for text in texts]

    return Expected(pg_expected(matrix.dsn), duck_expected(matrix.duckdb, interval_iso),
                    sqlite_expected(matrix.sqlite), pg_ledger_expected(matrix.dsn))


def by_name(result: dict[str, Any]) -> list[dict[str, Any]]:
    names = [column["name"] for column in result["columns"]]
    assert len(set(names)) == len(names)
    return [dict(zip(names, row, strict=True)) for row in result["rows"]]


def check_pg_rows(result: dict[str, Any], expected: Expected) -> None:
    rows = by_name(result)
    assert [row["id"] for row in rows] == sorted(expected.pg)
    for row in rows:
        same(row, expected.pg[row["id"]], f"pg row {row['id']} ({row['label']})")
    assert any("'bin'" in note and "65536" in note for note in result["notes"]), result["notes"]


def check_duck_rows(result: dict[str, Any], expected: Expected) -> None:
    first, empty = by_name(result)
    same(first, expected.duck, "duck row 1")
    assert empty["id"] == 2 and all(value is None for name, value in empty.items() if name != "id")
    assert [c["name"] for c in result["columns"]] == ["id", *(n for n, _, _ in DUCK_SCALARS),
                                                       *(n for n, _, _ in DUCK_NESTED)]
    assert any("'list_struct_blob'" in note and "2048" in note for note in result["notes"]), result["notes"]


def check_sqlite_rows(result: dict[str, Any], expected: Expected) -> None:
    same(result["rows"], [expected.lite[key] for key in sorted(expected.lite)], "sqlite rows")


def samples(entity: dict[str, Any]) -> dict[str, list[Any]]:
    return {column["name"]: column["samples"].get("values", []) for column in entity["columns"]
            if isinstance(column.get("samples"), dict) and not column["samples"].get("skipped")}


def check_pg_samples(found: dict[str, list[Any]], expected: Expected) -> None:
    sampled = {column for column, _, _, kind in PG_COLUMNS
               if not kind.startswith("array") and column not in ("bin", "doc", "words")}
    assert set(found) - {"id", "label"} == sampled  # bytea, jsonb, arrays and tsvector are never sampled
    for column in sampled:
        want = [row[column] for row in expected.pg.values() if row[column] is not None]
        same_set(found[column], want, f"pg samples of {column}")


def check_duck_samples(found: dict[str, list[Any]], expected: Expected) -> None:
    assert set(found) >= DUCK_SAMPLED
    for column in DUCK_SAMPLED:
        same(found[column], [expected.duck[column]], f"duck samples of {column}")


def check_sqlite_samples(found: dict[str, list[Any]], expected: Expected) -> None:
    assert {"i", "r", "t", "n"} <= set(found)
    for index, column in ((2, "i"), (3, "r"), (4, "t"), (6, "n")):
        want = [row[index] for row in expected.lite.values() if row[index] is not None]
        same_set(found[column], want, f"sqlite samples of {column}")


def dictionary_queries(expected: Expected) -> list[tuple[str, str, str, str]]:
    """(query, connection, table, column): values the dictionary must find, as the rule writes them."""
    return [
        (expected.pg_row("numeric trailing zeros")["num"], "pg", "public.matrix", "num"),
        (expected.pg_row("bigint max")["big"], "pg", "public.matrix", "big"),
        (expected.pg_row("interval mixed units")["span"], "pg", "public.matrix", "span"),
        (expected.pg_row("timestamptz BC")["ts"], "pg", "public.matrix", "ts"),
        (expected.duck["huge"], "duck", "main.matrix", "huge"),
        (expected.duck["ival_month"], "duck", "main.matrix", "ival_month"),
    ]


def batch(expected: Expected) -> str:
    ops = ['sql.execute(connection="pg", sql="SELECT * FROM public.matrix ORDER BY id", limit=500)',
           'sql.execute(connection="duck", sql="SELECT * FROM matrix ORDER BY id")',
           'sql.execute(connection="lite", sql="SELECT * FROM matrix ORDER BY id")',
           'sl.query(connection="pg", measures=["ledger.total", "ledger.entries"], dimensions=["ledger.kind"])',
           'scan.entity(connection="pg", table="public.matrix")',
           'scan.entity(connection="duck", table="main.matrix")',
           'scan.entity(connection="lite", table="main.matrix")']
    ops += [f"sl.dictionary_search(query={orjson.dumps(query).decode()}, connection={orjson.dumps(conn).decode()})"
            for query, conn, _, _ in dictionary_queries(expected)]
    return "[" + ", ".join(ops) + "]"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_value_reaches_the_agent_as_the_rule_says(matrix: Matrix, expected: Expected, transport: str,
                                                              tmp_path: Path) -> None:
    envelope = await ask(matrix.site, transport, batch(expected), tmp_path)
    results = envelope["results"]
    assert envelope["status"] == "success", [r.get("error", {}).get("message") for r in results if not r["ok"]][:1]
    pg, duck, lite, ledger, pg_entity, duck_entity, lite_entity, *hits = (r["result"] for r in results)

    check_pg_rows(pg, expected)
    check_duck_rows(duck, expected)
    check_sqlite_rows(lite, expected)
    assert [c["name"] for c in ledger["columns"]] == ["kind", "total", "entries"]
    assert {row[0]: row[1:] for row in ledger["rows"]} == expected.ledger
    assert isinstance(expected.ledger["small"][0], str)  # numeric, even when small: type-stable per column
    check_pg_samples(samples(pg_entity), expected)
    check_duck_samples(samples(duck_entity), expected)
    check_sqlite_samples(samples(lite_entity), expected)
    for (query, connection, table, column), found in zip(dictionary_queries(expected), hits, strict=True):
        matched = [hit for hit in found["hits"] if (hit["connectionId"], hit["table"], hit["column"]) ==
                   (connection, table, column)]
        assert matched, f"{query!r} not found in {connection}.{table}.{column}: {found}"
        same(matched[0]["value"], query, f"dictionary hit for {query!r}")
        assert matched[0]["matchedOn"] == "exact"
    if transport != "cli":
        assert matrix.site.daemon_pid() is not None  # the daemon answered and is still up


def test_scan_files_hold_samples_by_the_rule(matrix: Matrix, expected: Expected) -> None:
    """What scan wrote: raw-sources tables.json and the _schema shard (the 10 most frequent samples of each column)."""
    root = matrix.site.project
    (run,) = sorted((root / "raw-sources" / "pg" / "live-database").iterdir())
    tables = orjson.loads((run / "tables.json").read_bytes())["tables"]
    table = next(t for t in tables if (t["db"], t["name"]) == ("public", "matrix"))
    check_pg_samples(samples(table), expected)
    shard_path = next((root / "_schema" / "pg").glob("*.public.yaml"))
    shard = YAML(typ="safe").load(shard_path.read_text())
    shard_samples = {c["name"]: c["samples"] for c in shard["tables"]["matrix"]["columns"] if "samples" in c}
    assert set(shard_samples) == set(samples(table))
    for column, values in shard_samples.items():  # ten of them, sorted by value (ADR 0033): the same values
        same_set(values, samples(table)[column][:10], f"shard samples of {column}")
    assert "1.5000" in shard_samples["num"] and "9223372036854775807" in shard_samples["big"]
