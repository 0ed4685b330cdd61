"""A person's note inside a machine-managed block (``usage.ownerNote``) is kept and reported as info: the source
stays valid and searchable, and ``discover.doctor`` grades the project as before (issue #21, section 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from discover_project import Call

pytestmark = pytest.mark.anyio
SOURCE = Path("semantic-layer/shop/orders.yaml")
NOTE = "  ownerNote: ask the billing team before changing the refund logic\n"


def add_owner_note(project: Path) -> None:
    path = project / SOURCE
    text = path.read_text()
    if "\nusage:\n" not in text:
        text += "usage:\n  narrative: orders placed in the shop\n"
    path.write_text(text.replace("\nusage:\n", "\nusage:\n" + NOTE, 1))


async def test_an_unknown_usage_key_is_kept_and_reported_as_info(scanned: Call, project: Path) -> None:
    before = await scanned("discover.doctor()")
    add_owner_note(project)

    found = await scanned('discover.search(query="orders", kinds=["sl_source"])')
    assert [(ref["kind"], ref["docId"]) for ref in found["refs"]][:1] == [("sl_source", "sl:orders")], found

    read = await scanned('sl.read(name="orders", connection="shop")')
    notes = [problem for problem in read["problems"] if problem["field"] == "usage.ownerNote"]
    assert [note["severity"] for note in notes] == ["info"], read["problems"]
    assert (project / SOURCE).read_text().splitlines()[notes[0]["line"] - 1] == NOTE.rstrip("\n")

    checked = await scanned(f'sl.validate(connection="shop", yaml={json.dumps((project / SOURCE).read_text())})')
    assert checked["valid"] is True, checked["problems"]

    after = await scanned("discover.doctor()")
    assert (after["grade"], after["score"]) == (before["grade"], before["score"])
