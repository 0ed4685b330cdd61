"""The fast block writer writes exactly ruamel's bytes (semantic-layer layout), or declines.

A corpus of generated sources, with hostile strings mixed in (YAML's reserved words, numbers as strings,
indicators, quotes, unicode, control characters, leading and trailing spaces, runs of spaces, words longer
than a line, multi-line text), each dumped by both writers: where the fast writer answers, the bytes are
ruamel's and read back as the data.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from ruamel.yaml import YAML

from khive.project.blockyaml import dump_block
from packs.sl.store import dump_data, dump_yaml, to_commented

HOSTILE = ["yes", "no", "null", "Null", "on", "off", "true", "False", "~", "123", "-7", "0x1F", "1e3", "1_000", "0o17",
           ".inf", ".NaN", "-", "--", "---", "...", "a: b", "#x", "x #y", "it's", "'q'", '"dq"', "é", "naïve", "日本語",
           "emoji😀", "tab\there", "back\\slash", "%p", "@at", "`bt", "!bang", "&amp", "*star", "[x]", "{y}", "a,b",
           "?q", "|pipe", ">gt", "x:y", "x:", "2026-12-02", "12:30", "=", "<<", "colon: space", "trailing ",
           " leading", "two  spaces", "\u2028sep", "nbsp\u00a0x", "bell\x07", "bom\ufeff", "\u0085nel", "multi\nline",
           "end\n", " ", "'", "''", "a'b c: d", "x -y", "- dash", "key?", "%", "a" * 130, "x" * 119, "1.5", "0"]
WORDS = ["order", "customer_id", "Sum", "of", "amount", "(a", "price", "rate:", "averaged)", "never", "summed;",
         "x", "unit_price", "revenue", "1st", "per", "row.", "e.g.", "tax,"]


def text(rng: random.Random, words: int, hostile: float) -> str:
    parts = [rng.choice(HOSTILE) if rng.random() < hostile else rng.choice(WORDS) for _ in range(rng.randint(1, words))]
    return rng.choice([" ", " ", " ", "  ", ": ", ", "]).join(parts)


def source(rng: random.Random, hostile: float) -> dict[str, Any]:
    data: dict[str, Any] = {"name": text(rng, 1, hostile)}
    if rng.random() < 0.8:
        data["descriptions"] = {key: text(rng, 40, hostile) for key in rng.sample(["db", "bootstrap", "user"], 2)}
    data["table"] = text(rng, 3, hostile)
    if rng.random() < 0.5:
        data["grain"] = [text(rng, 2, hostile) for _ in range(rng.randint(1, 3))]
    data["columns"] = [{"name": text(rng, 1, hostile), "type": rng.choice(["number", "string", "time"]),
                        **({"expr": text(rng, 3, hostile)} if rng.random() < 0.3 else {}),
                        **({"descriptions": {"db": text(rng, 30, hostile)}} if rng.random() < 0.5 else {})}
                       for _ in range(rng.randint(1, 6))]
    data["measures"] = [{"name": text(rng, 1, hostile), "agg": "sum", "expr": text(rng, 4, hostile),
                         "description": text(rng, 25, hostile)} for _ in range(rng.randint(1, 4))]
    data["joins"] = [{"to": text(rng, 1, hostile), "on": [{"from": text(rng, 1, hostile), "to": "id"}],
                      "relationship": "many_to_one", **({"role": text(rng, 1, hostile)} if rng.random() < 0.3 else {})}
                     for _ in range(rng.randint(1, 3))]
    return data


@pytest.mark.parametrize("hostile", [0.0, 0.02, 0.3])
def test_the_fast_writer_writes_ruamels_bytes(hostile: float) -> None:
    rng = random.Random(f"blockyaml-{hostile}")
    fast = 0
    for _ in range(400):
        data = source(rng, hostile)
        expected = dump_yaml(to_commented(data))
        written = dump_block(data)
        if written is not None:
            fast += 1
            assert written == expected, data
            assert YAML(typ="safe").load(written) == data  # so the data stands for the text's parse
        assert dump_data(data) == expected
    assert fast >= {0.0: 300, 0.02: 150, 0.3: 5}[hostile]  # the fast writer does take the common cases


@pytest.mark.parametrize("value", HOSTILE)
def test_each_hostile_string_at_every_depth(value: str) -> None:
    long = f"{value} " + " ".join(["word"] * 30) + f" {value} tail {value}"
    for item in (value, long):
        data = {"name": item, "descriptions": {"db": item}, "grain": [item],
                "columns": [{"name": item, "descriptions": {"db": item}}],
                "joins": [{"to": item, "on": [{"from": item, "to": item}]}]}
        written = dump_block(data)
        if written is not None:
            assert written == dump_yaml(to_commented(data))
            assert YAML(typ="safe").load(written) == data


def test_outside_the_subset_it_declines() -> None:
    cases: list[dict[str, Any]] = [{"n": 1}, {"x": True}, {"x": []}, {"x": {}}, {"bad key": "v"},
                                   {"x": [["nested"]]}, {"x": None}, {"x": "a  " + "b" * 120}]
    for data in cases:
        assert dump_block(data) is None
        assert dump_data(data) == dump_yaml(to_commented(data))
