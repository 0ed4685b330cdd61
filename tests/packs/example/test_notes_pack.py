"""The example pack of docs/packs.md, registered in a test and driven through dispatch, as clients drive it.

Copy these tests with the pack: a round trip through a chain, the typed error, and the result contract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import notes_pack
import pytest

from khive.bootstrap import open_runtime
from khive.context import CLI, MCP_STDIO, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.runtime import Runtime
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    project = tmp_path / "proj"
    assert "notes/" in init_project(project, "ann", packs=["wiki"], extra_plugins=[notes_pack])
    runtime = open_runtime(project, {"KHIVE_PACKS": "core"}, extra_plugins=[notes_pack])
    yield runtime
    await runtime.aclose()


async def request(runtime: Runtime, text: str, transport: str = MCP_STDIO) -> dict[str, Any]:
    return await dispatch(parse(text), Context(runtime, "agent:ann", transport, presentation="verbose"))


async def test_a_note_is_written_then_read_back_through_a_chain(runtime: Runtime) -> None:
    envelope = await request(runtime, 'notes.add(topic="refunds", text="Refunds count in the month\n paid.") '
                                      '| notes.add(topic=$prev.topic, text="Partial refunds too.") '
                                      '| notes.read(topic=$prev.topic)')
    assert envelope["status"] == "success", envelope
    first, second, listed = (entry["result"] for entry in envelope["results"])
    assert first == {"topic": "refunds", "path": "notes/refunds.md", "noteCount": 1, "commitError": None}
    assert second["noteCount"] == 2
    assert listed == {"topic": "refunds", "notes": ["Refunds count in the month paid.", "Partial refunds too."]}
    assert (runtime.project / "notes/refunds.md").read_text() == \
        "- Refunds count in the month paid.\n- Partial refunds too.\n"


async def test_a_missing_topic_is_a_typed_error_naming_what_exists(runtime: Runtime) -> None:
    await request(runtime, 'notes.add(topic="churn", text="x")')
    (entry,) = (await request(runtime, 'notes.read(topic="refunds")'))["results"]
    assert entry["error"]["code"] == "note_not_found"
    assert entry["error"]["details"]["topics"] == ["churn"]


async def test_bad_arguments_name_the_field(runtime: Runtime) -> None:
    (entry,) = (await request(runtime, 'notes.add(topic="Not A Topic", text="x")'))["results"]
    assert entry["error"]["code"] == "invalid_args"
    assert [problem["field"] for problem in entry["error"]["details"]["errors"]] == ["topic"]


async def test_the_verbs_are_listed_with_their_result_schema(runtime: Runtime) -> None:
    (entry,) = (await request(runtime, "notes.add(help=true)", transport=CLI))["results"]
    assert entry["result"]["writeKeys"] == "notes:<topic>"
    assert set(entry["result"]["result"]["properties"]) == {"topic", "path", "noteCount", "commitError"}


async def test_a_result_that_breaks_its_model_fails_the_op(runtime: Runtime) -> None:
    """The test suite checks every result strictly (tests/conftest.py): a pack's drift is caught here."""
    verb = runtime.registry.resolve("notes.read")
    runtime.registry.verbs["notes.read"] = dataclasses.replace(
        verb, handler=lambda params, ctx: {"topic": params.topic, "note_list": []})
    (entry,) = (await request(runtime, 'notes.read(topic="refunds")'))["results"]
    assert entry["error"]["code"] == "internal_error"
    assert entry["error"]["details"]["stage"] == "result_contract"
