"""khive.index.morph.key: the forms of one word share one comparison key."""

from __future__ import annotations

import pytest

from khive.index import morph


@pytest.mark.parametrize(("plural", "singular"), [
    ("meetings", "meeting"), ("bookings", "booking"), ("screenings", "screening"), ("buildings", "building"),
    ("categories", "category"), ("invoices", "invoice"), ("things", "thing")])
def test_a_plural_has_the_key_of_its_singular(plural: str, singular: str) -> None:
    assert morph.key(plural) == morph.key(singular)
