"""Every verb declares its result; the names khive chooses on the wire are camelCase (ADR 0039)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from khive.envelope import envelope_schema
from khive.errors import OpError
from khive.plugins import build_plugin_manager, collect_verbs
from khive.results import CAMEL_RE, HelpResult, adapter, example, result_schema
from khive.verbs import Verb


def all_verbs() -> dict[str, Verb]:
    pm, _ = build_plugin_manager()
    return collect_verbs(pm).verbs


VERBS = all_verbs()


def property_names(schema: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(path, name) of every property an object schema names, in the schema and its $defs. Keys under
    ``additionalProperties`` are data (a table, a file), not names: they are not listed."""
    if isinstance(schema, dict):
        for name in schema.get("properties", {}):
            yield where, name
        for key, value in schema.items():
            yield from property_names(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from property_names(item, f"{where}/{index}")


def test_every_verb_declares_its_result() -> None:
    assert [name for name, verb in sorted(VERBS.items()) if verb.result is None] == []


@pytest.mark.parametrize("name", sorted(VERBS))
def test_result_keys_are_camel_case(name: str) -> None:
    schema = result_schema(VERBS[name].result)
    wrong = sorted({f"{where}: {key}" for where, key in property_names(schema) if not CAMEL_RE.match(key)})
    assert wrong == [], f"{name}: result keys must be camelCase (fields are snake_case, Result spells them)"


@pytest.mark.parametrize("name", sorted(VERBS))
def test_the_documented_example_is_a_valid_result(name: str) -> None:
    """docs/verbs.md shows this example: it must be something the verb may return, read as JSON."""
    declared = VERBS[name].result
    adapter(declared).validate_json(orjson.dumps(example(declared)), strict=True)


@pytest.mark.parametrize("schema", [envelope_schema(), result_schema(HelpResult)], ids=["envelope", "help"])
def test_envelope_and_help_keys_are_camel_case(schema: dict[str, Any]) -> None:
    wrong = sorted({key for _, key in property_names(schema) if not CAMEL_RE.match(key)})
    assert wrong == []


def test_error_details_are_named_in_camel_case_on_the_wire() -> None:
    error = OpError("x", code="statement_timeout", details={"timeout_s": 1, "gate_code": "ok", "sales.orders": 2})
    assert error.to_dict()["details"] == {"timeoutS": 1, "gateCode": "ok", "sales.orders": 2}
