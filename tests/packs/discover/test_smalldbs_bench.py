"""The many-small-databases retrieval benchmark (bench/smalldbs.py): its warehouse builds, its questions hold."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
import smalldbs  # noqa: E402  (bench/ is on the path just above)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, int], list[dict[str, Any]]]:
    target = tmp_path_factory.mktemp("smalldbs") / "small.duckdb"
    counts = smalldbs.build(target)
    return counts, smalldbs.questions(target)  # raises when a gold SQL does not bind


def test_every_gold_sql_binds_and_names_tables_of_its_own_schema(
        built: tuple[dict[str, int], list[dict[str, Any]]]) -> None:
    counts, questions = built
    assert counts["schemas"] >= 40 and counts["tables"] >= 200 and len(questions) >= 250
    tables = {f"{schema}.{t}".lower() for schema, body in smalldbs.load().items() for t in body["tables"]}
    for q in questions:
        (gold,) = q["gold"]
        assert gold, q["id"]
        assert gold <= tables, q["id"]
        assert {t.split(".")[0] for t in gold} == {q["schema"].lower()}, q["id"]
    assert len({q["id"] for q in questions}) == len(questions)


def test_no_question_names_its_database(built: tuple[dict[str, int], list[dict[str, Any]]]) -> None:
    _, questions = built
    for q in questions:
        words = " ".join(re.findall(r"[a-z0-9]+", q["question"].lower()))
        assert q["schema"].replace("_", " ") not in words, q["id"]


def test_schemas_are_small_and_share_table_names() -> None:
    schemas = smalldbs.load()
    assert all(2 <= len(body["tables"]) <= 8 for body in schemas.values())
    shared = Counter(t.lower() for body in schemas.values() for t in body["tables"])
    assert sum(n >= 3 for n in shared.values()) >= 5  # the setting: the same names in several databases


def test_a_column_spec_declares_keys_and_types() -> None:
    earlier = {"team": smalldbs.parse_table("id*, name", {})}
    columns = smalldbs.parse_table("id*, team_id>team, joined:d, score:i, kit", earlier)
    assert [(c.name, c.type, c.key, c.ref) for c in columns] == [
        ("id", "INTEGER", True, None), ("team_id", "INTEGER", False, ("team", "id")),
        ("joined", "DATE", False, None), ("score", "INTEGER", False, None), ("kit", "VARCHAR", False, None)]
    with pytest.raises(ValueError, match="bad column spec"):
        smalldbs.parse_table("two words", {})


def test_a_miss_is_classified_by_what_came_first() -> None:
    schemas = {"club": {"tables": {"member": smalldbs.parse_table("id*, name", {}),
                                   "fee": smalldbs.parse_table("id*, amount:n", {})}},
               "gym": {"tables": {"member": smalldbs.parse_table("id*, name", {}),
                                  "trainer": smalldbs.parse_table("id*, name", {})}}}
    gold = frozenset({"club.member"})
    assert smalldbs.failure_mode("members", ["club.member"], gold, schemas, 3) is None
    assert smalldbs.failure_mode("members", [], gold, schemas, 3) == "no_match"
    assert smalldbs.failure_mode("members", ["gym.member", "gym.trainer"], gold, schemas, 3) == (
        "routed_elsewhere_same_table_name")
    assert smalldbs.failure_mode("members", ["gym.member", "club.member"], gold, schemas, 1) == (
        "routed_elsewhere_same_table_name")
    both = frozenset({"club.member", "club.fee"})
    assert smalldbs.failure_mode("trainers' fees", ["gym.trainer", "club.fee", "gym.member"], both, schemas, 3) == (
        "interleaved_question_names_its_table")
    assert smalldbs.failure_mode("fees", ["club.fee", "gym.member"], both, schemas, 3) == (
        "fill_lost_to_other_schema")
