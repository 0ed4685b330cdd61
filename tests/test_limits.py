"""Input limits (khive/limits.py, ADR 0027) through the dispatcher: a request over a limit fails with the
typed error ``limit_exceeded`` naming the limit, its value and how to raise it, before the expensive
work; raising the limit in khive.yaml lets the same request through."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.errors import ConfigError
from khive.limits import DEFAULT_LIMITS, Limits
from khive.project.config import load_config
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio
README = Path(__file__).resolve().parents[1] / "README.md"
Call = Callable[[str], Awaitable[dict[str, Any]]]

LONG_QUERY = "revenue " * 600  # 4,800 characters, one distinct word
WIDE_QUERY = " ".join(f"word{i}" for i in range(100))  # 100 distinct words in 790 characters
QUERY_VERBS = {"discover.search": "", "wiki.search": "", "sl.search": "", "sl.dictionary_search": "", "sl.list": "",
               "scan.tables": ', connection="shop"'}


def alias_bomb(levels: int, width: int = 9) -> str:
    lines = ["name: bomb", "table: t", "a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def text(value: str) -> str:
    """A DSL string literal."""
    return orjson.dumps(value).decode()


def make_project(root: Path, limits: str = "") -> Path:
    init_project(root, "ann")
    sqlite3.connect(root / "shop.sqlite").close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", "connections:\n  shop: {driver: sqlite, "
                                                 "path: shop.sqlite}\n") + limits)
    return root


async def caller(root: Path) -> AsyncIterator[Call]:
    runtime = open_runtime(root, {})

    async def call(ops: str) -> dict[str, Any]:
        envelope = await dispatch(parse(ops), Context(runtime, "operator:ann", CLI, presentation="verbose"))
        (result,) = envelope["results"]
        return dict(result["result"]) if result["ok"] else {"error": result["error"]}

    try:
        yield call
    finally:
        await runtime.aclose()


@pytest.fixture
async def call(tmp_path: Path) -> AsyncIterator[Call]:
    async for made in caller(make_project(tmp_path / "default")):
        yield made


@pytest.fixture
async def raised(tmp_path: Path) -> AsyncIterator[Call]:
    limits = ("limits:\n  query_chars: 6000\n  query_terms: 200\n  yaml_aliases: 5000\n  sl_source_chars: 400000\n"
              "  wiki_body_chars: 400000\n  wiki_frontmatter_chars: 40000\n")
    async for made in caller(make_project(tmp_path / "raised", limits)):
        yield made


def refused(answer: dict[str, Any], limit: str) -> dict[str, Any]:
    """The limit's entry of a ``limit_exceeded`` error, after checking the error names the limit and the fix."""
    error = answer.get("error")
    assert error is not None and error["code"] == "limit_exceeded", answer
    assert f"limits.{limit} in khive.yaml" in error["message"], error["message"]
    details = error["details"]
    found = next(item for item in details.get("errors", [details]) if item.get("limit") == limit)
    assert found["max"] == getattr(DEFAULT_LIMITS, limit) < found["actual"]
    assert f"raise limits.{limit} in khive.yaml" in found["fix"]
    return dict(found)


@pytest.mark.parametrize("verb", list(QUERY_VERBS))
async def test_search_queries_are_capped_in_characters_and_distinct_words(call: Call, verb: str) -> None:
    extra = QUERY_VERBS[verb]
    assert refused(await call(f'{verb}(query="{LONG_QUERY}"{extra})'), "query_chars")["actual"] == len(LONG_QUERY)
    assert refused(await call(f'{verb}(query="{WIDE_QUERY}"{extra})'), "query_terms")["actual"] == 100


async def test_a_lookup_id_is_capped_like_a_query(call: Call) -> None:
    """An id nothing is known as is searched for word by word, so it has the query's caps."""
    assert refused(await call(f'discover.lookup(id="{WIDE_QUERY}")'), "query_terms")["actual"] == 100
    unknown = await call('discover.lookup(id="no such thing")')
    assert unknown["error"]["code"] == "entity_not_found"


@pytest.mark.parametrize("verb", [verb for verb, extra in QUERY_VERBS.items() if not extra])
async def test_raised_query_limits_let_the_same_queries_through(raised: Call, verb: str) -> None:
    for query in (LONG_QUERY, WIDE_QUERY):
        assert "error" not in await raised(f'{verb}(query="{query}")')


async def test_an_alias_bomb_is_refused_while_composing_never_expanded(call: Call) -> None:
    # Twelve levels of nine: 9**12 nodes if anything walked it. The test finishing at all is the proof.
    found = refused(await call(f'sl.validate(connection="shop", yaml={text(alias_bomb(12))})'), "yaml_alias_nodes")
    assert found["line"] <= 12


async def test_yaml_depth_and_alias_count_are_capped_and_can_be_raised(call: Call, raised: Call) -> None:
    deep = "name: deep\ntable: t\nx: " + "[" * 70 + "]" * 70 + "\n"
    refused(await call(f'sl.validate(connection="shop", yaml={text(deep)})'), "yaml_depth")
    aliased = "name: aliased\ntable: t\nx: &x 1\ny: [" + ", ".join(["*x"] * 1500) + "]\n"
    refused(await call(f'sl.validate(connection="shop", yaml={text(aliased)})'), "yaml_aliases")
    checked = await raised(f'sl.validate(connection="shop", yaml={text(aliased)})')
    assert "error" not in checked and checked["name"] == "aliased"


async def test_source_and_page_sizes_are_capped_and_can_be_raised(call: Call, raised: Call) -> None:
    source = f"name: orders\ntable: orders\ndescriptions:\n  user: {'x' * 300_000}\n"
    write_source = f'sl.write(connection="shop", yaml={text(source)})'
    refused(await call(write_source), "sl_source_chars")
    assert (await raised(write_source))["created"] is True
    write_page = f'wiki.write(key="big", body="{"y" * 300_000}")'
    refused(await call(write_page), "wiki_body_chars")
    assert (await raised(write_page))["changed"] is True
    tags = ", ".join(f'"tag-{i:05d}"' for i in range(2000))
    refused(await call(f'wiki.write(key="tagged", tags=[{tags}])'), "wiki_frontmatter_chars")
    assert "error" not in await raised(f'wiki.write(key="tagged", tags=[{tags}])')


async def test_a_bomb_in_a_project_file_is_reported_with_its_limit_and_spares_the_rest(call: Call,
                                                                                         tmp_path: Path) -> None:
    root = tmp_path / "default"
    assert "error" not in await call('wiki.write(key="fine", summary="a fine page", body="orders")')
    bomb = "---\n" + alias_bomb(12).replace("name: bomb\ntable: t\n", "summary: boom\n") + "---\nbody\n"
    (root / "wiki" / "global" / "bomb.md").write_text(bomb)
    read = await call('wiki.read(key="bomb")')
    assert read["error"]["code"] == "invalid_page" and "limits.yaml_alias_nodes" in read["error"]["message"]
    listed = await call("wiki.list()")
    assert [page["key"] for page in listed["pages"]] == ["fine"]
    assert "limits.yaml_alias_nodes" in listed["errors"]["wiki/global/bomb.md"]
    assert [hit["key"] for hit in (await call('wiki.search(query="orders")'))["hits"]] == ["fine"]


async def test_sl_write_claims_a_yaml_sources_name_from_its_top_level_line(call: Call) -> None:
    flow = await call(f'sl.write(connection="shop", yaml={text("{name: orders, table: orders}")})')
    assert flow["error"]["code"] == "invalid_args" and "start the YAML with `name: orders`" in \
        flow["error"]["details"]["fix"]
    block = await call(f'sl.write(connection="shop", yaml={text("name: orders  # ours" + chr(10) + "table: o")})')
    assert block["created"] is True and block["name"] == "orders"


async def test_budget_tokens_has_an_upper_bound(call: Call) -> None:
    answer = await call('discover.search(query="orders", budget_tokens=5000000)')
    assert answer["error"]["code"] == "invalid_args" and "budget_tokens" in answer["error"]["message"]


def test_limits_in_khive_yaml_are_validated_and_named(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", "limits:\n  query_chars: 0\n")
    with pytest.raises(ConfigError) as zero:
        load_config(root / "khive.yaml")
    assert "limits.query_chars" in zero.value.message and zero.value.details["line"] > 1
    (root / "khive.yaml").write_text((root / "khive.yaml").read_text().replace("query_chars: 0", "querychars: 10"))
    with pytest.raises(ConfigError) as typo:
        load_config(root / "khive.yaml")
    assert "limits.querychars" in typo.value.message and "query_chars" in typo.value.details["fix"]


def test_the_readme_documents_every_limit_with_its_default() -> None:
    table = dict(re.findall(r"^\| `limits\.(\w+)` \| ([\d,]+) \|", README.read_text(encoding="utf-8"), re.MULTILINE))
    assert set(table) == set(Limits.model_fields)
    assert {name: int(value.replace(",", "")) for name, value in table.items()} == DEFAULT_LIMITS.model_dump()
