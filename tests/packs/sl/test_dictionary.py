"""sl.dictionary_search: which column holds a value, from scan samples and sources' values hints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


async def test_exact_value_names_its_column_and_source(bootstrapped: Any) -> None:
    result = await bootstrapped('sl.dictionary_search(query="refunded", connection="shop")')
    first = result["hits"][0]
    assert (first["connectionId"], first["table"], first["column"], first["value"]) == (
        "shop", "main.orders", "status", "refunded")
    assert first["matchedOn"] == "exact" and first["frequency"] > 0 and first["complete"] is True
    assert first["sources"] == ["orders"] and first["origin"] == "scan_samples"
    # prefix, then substring matches rank after the exact one
    assert [(h["column"], h["matchedOn"]) for h in result["hits"][1:]] == [("reason", "prefix"),
                                                                           ("reason", "substring")]
    assert result["hits"][1]["value"] == "refunded to card"
    coverage = result["coverage"]["shop"]
    assert coverage["from"] == "artifacts" and coverage["skipped"] == 1
    assert coverage["skippedReasons"] == {"sensitive-name": 1}
    assert coverage["profiled"] + coverage["skipped"] + coverage["notProfiled"] == coverage["columns"]
    assert "reasons" not in result


async def test_matching_ignores_case_and_finds_prefixes(scanned: Any) -> None:
    result = await scanned('sl.dictionary_search(query="acme")')
    (hit,) = result["hits"]
    assert (hit["table"], hit["column"], hit["value"], hit["matchedOn"]) == ("main.customers", "name", "Acme Corp",
                                                                            "prefix")
    assert hit["sources"] == []  # no source covers the table yet
    exact = await scanned('sl.dictionary_search(query="ACME CORP")')
    assert exact["hits"][0]["matchedOn"] == "exact"


async def test_a_miss_says_why(scanned: Any) -> None:
    result = await scanned('sl.dictionary_search(query="Wayne Enterprises")')
    assert result["hits"] == []
    reasons = {reason["reason"]: reason for reason in result["reasons"]}
    assert set(reasons) == {"not_scanned", "column_not_profiled", "value_not_in_samples"}
    assert reasons["not_scanned"]["connections"] == ["spare"]
    (table,) = reasons["column_not_profiled"]["tables"]
    assert table["table"] == "main.customers" and table["columns"] == [{"column": "email", "why": "sensitive-name"}]
    bounded = reasons["value_not_in_samples"]
    assert "samples are bounded" in bounded["message"] and bounded["maxValues"] >= 1
    assert "main.products.name" in bounded["examples"]  # 30 distinct names, 20 kept: partial
    shop_only = await scanned('sl.dictionary_search(query="Wayne Enterprises", connection="shop")')
    assert "not_scanned" not in {r["reason"] for r in shop_only["reasons"]}


async def test_sources_values_hints_are_searched(bootstrapped: Any) -> None:
    source = {"name": "customers", "columns": [{"name": "segment", "values": ["smb", "enterprise", "strategic"]}]}
    written = await bootstrapped(f'sl.write(connection="shop", source={json.dumps(source)}, merge=true)')
    assert written["changed"]
    result = await bootstrapped('sl.dictionary_search(query="strategic")')
    (hit,) = result["hits"]
    assert (hit["table"], hit["column"], hit["origin"], hit["sources"]) == ("main.customers", "segment", "sl_values",
                                                                           ["customers"])
    both = await bootstrapped('sl.dictionary_search(query="enterprise")')
    assert [(h["column"], h["origin"]) for h in both["hits"]] == [("segment", "scan_samples")]  # one hit per value


async def test_shards_serve_when_raw_sources_are_absent(scanned: Any, project: Path) -> None:
    shutil.rmtree(project / "raw-sources")
    result = await scanned('sl.dictionary_search(query="refunded", connection="shop")')
    assert result["coverage"]["shop"]["from"] == "shards"
    first = result["hits"][0]
    assert (first["table"], first["column"], first["frequency"]) == ("main.orders", "status", None)


async def test_unknown_connection(scanned: Any) -> None:
    result = await scanned('sl.dictionary_search(query="x", connection="nope")')
    assert result["error"]["code"] == "connection_not_found"
