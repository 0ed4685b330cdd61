"""The fast plain reader gives what ruamel's safe loader gives, or raises where it raises (ADR 0054)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from ruamel.yaml import YAML

from khive.project.blockyaml import dump_block
from khive.project.plainyaml import load_plain
from khive.project.yamldoc import quick_load
from packs.sl.store import dump_yaml, to_commented

DOCUMENTS = [
    "a: 1\nb: yes\nc: no\nd: on\ne: null\nf: ~\ng: true\nh: 1.5\ni: 0x1F\nj: 0o17\nk: 1_000\nl: .inf\nm: -.NaN\n",
    "when: 2026-12-02\nat: 2026-12-02 10:00:00\nbin: !!binary aGVsbG8=\ns: !!str 123\nn: !!int '7'\n",
    "base: &b {x: 1, y: [1, 2]}\nother:\n  <<: *b\n  z: 3\n",
    "a: &x [1, 2]\nb: *x\nc: *x\n",
    "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}, {a: 2}]\n",
    "%YAML 1.1\n---\na: yes\nb: on\n",
    "1: one\n2.5: two\nnull: three\ntrue: four\n",
    "- a\n- [b, c]\n- {d: e}\n- - f\n  - g\n",
    "text: |\n  line one\n  line two\nfolded: >\n  one\n  two\n",
    "quoted: 'it''s'\ndouble: \"tab\\there \\u00e9\"\nplain: naïve 日本\n",
    "= : value key\n",
    "",
    "# only a comment\n",
    "just a scalar",
    "[1, 2, 3]",
    "a: 1\na: 2\n",  # a duplicate key: both refuse it
    "a: [1, 2\n",  # bad syntax: both refuse it
    "a: *nowhere\n",
    "? [complex, key]\n: value\n",
]


def _outcome(load: Any, text: str) -> Any:
    try:
        return ("ok", load(text))
    except Exception as exc:  # any failure: its kind is what is compared
        return ("error", type(exc).__name__)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_plain_reader_reads_as_ruamel_does(text: str) -> None:
    assert _outcome(load_plain, text) == _outcome(YAML(typ="safe").load, text)


def test_generated_sources_read_the_same() -> None:
    rng = random.Random("plainyaml")
    words = ["yes", "no", "123", "null", "it's", "a: b", "x", "- y", "#z", "é", "1e3", "on", "~", "true", "2026-12-02"]
    for _ in range(200):
        data = {"name": rng.choice(words), "columns": [{"name": rng.choice(words), "type": rng.choice(words),
                                                        "descriptions": {"db": " ".join(rng.choices(words, k=30))}}
                                                       for _ in range(rng.randint(1, 5))]}
        text = dump_block(data) or dump_yaml(to_commented(data))
        assert load_plain(text) == YAML(typ="safe").load(text) == data


def test_quick_load_answers_none_where_ruamel_refuses() -> None:
    assert quick_load("a: 1\na: 2\n") is None and quick_load("a: [1\n") is None
    assert quick_load("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}
