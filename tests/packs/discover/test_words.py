"""How discover reads the words of a question or an identifier (one regex pass, identifiers split)."""

from __future__ import annotations

import pytest

from packs.discover.text import split_words


@pytest.mark.parametrize(("text", "words"), [
    ("customer_id", ["customer", "id"]),
    ("customerId", ["customer", "id"]),
    ("NumTstTakr", ["num", "tst", "takr"]),
    ("AvgScrRead2", ["avg", "scr", "read2"]),
    ("HTMLParser", ["htmlparser"]),  # a run of capitals is not split inside
    ("order2Date", ["order2", "date"]),
    ("B2B_sales", ["b2", "b", "sales"]),  # a digit then a capital starts a word
    ("café Über", ["caf", "ber"]),  # ASCII words only: other letters separate words
    ("", []),
    ("  __ -- ", []),
    ("Which customers ORDERED the most?", ["which", "customers", "ordered", "the", "most"]),
])
def test_words_of_identifiers_and_questions(text: str, words: list[str]) -> None:
    assert split_words(text) == words
