"""Input limits: caps on arguments and documents whose cost grows with their size (ADR 0027).

One model holds every number and its default; ``khive.yaml``'s optional ``limits:`` section
overrides them (an operator raises a limit there). The numbers a request runs under travel as a
context variable: ``dispatch`` sets the runtime's limits, anyio carries them into worker threads,
and code with no request (the index warming up) falls back to the defaults or is given them.

A limit is checked before the work it protects, and a request over it fails with the typed error
``limit_exceeded`` (an ``InvalidArgs``) whose message and details name the limit, its value and
how to raise it. Parameter models use the annotated types below; handlers call ``check``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from khive.errors import LimitExceeded

KIB = 1024
MIB = 1024 * KIB


class Limits(BaseModel):
    """Every input limit with its default; ``limits:`` in khive.yaml overrides any of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_chars: int = Field(
        default=4_000, ge=1, le=MIB,
        description="characters of a search query (discover.search, wiki.search, sl.search, "
                    "sl.dictionary_search, sl.list, scan.tables) and of a discover.lookup id")
    query_terms: int = Field(
        default=64, ge=1, le=1_000_000,
        description="distinct words of a search query: each one is a lexical lookup of its own")
    yaml_chars: int = Field(
        default=16 * MIB, ge=KIB, le=1024 * MIB,
        description="characters of a YAML document read from the project (sources, shards, frontmatter)")
    yaml_aliases: int = Field(
        default=1_000, ge=0, le=1_000_000,
        description="alias uses (*name, <<: *name) in one YAML document")
    yaml_alias_nodes: int = Field(
        default=100_000, ge=0, le=100_000_000,
        description="nodes that a YAML document's aliases add when expanded (stops alias bombs)")
    yaml_depth: int = Field(
        default=64, ge=2, le=500,
        description="nesting depth of mappings and sequences in a YAML document")
    sl_source_chars: int = Field(
        default=256 * KIB, ge=KIB, le=64 * MIB,
        description="characters of a semantic-layer source an agent sends to sl.write or sl.validate")
    wiki_body_chars: int = Field(
        default=256 * KIB, ge=KIB, le=64 * MIB,
        description="characters of a wiki page body sent to wiki.write")
    wiki_frontmatter_chars: int = Field(
        default=16 * KIB, ge=KIB, le=16 * MIB,
        description="characters of a wiki page's frontmatter fields sent to wiki.write (title, summary, "
                    "tags, refs, relations)")


DEFAULT_LIMITS = Limits()
_current: ContextVar[Limits] = ContextVar("khive_limits", default=DEFAULT_LIMITS)
_WORD_RE = re.compile(r"\w+")


def current() -> Limits:
    """The limits of the request this code runs for (the defaults outside a request)."""
    return _current.get()


def use(limits: Limits) -> None:
    """Make ``limits`` the current ones for this task and every worker thread or task it starts."""
    _current.set(limits)


@contextmanager
def applied(limits: Limits) -> Iterator[None]:
    """``limits`` are the current ones inside the block (for work that runs outside a request)."""
    token = _current.set(limits)
    try:
        yield
    finally:
        _current.reset(token)


def distinct_words(text: str) -> list[str]:
    """The distinct lower-case words of ``text``, in first-seen order (what a search looks up)."""
    return list(dict.fromkeys(word.lower() for word in _WORD_RE.findall(text)))


def message(name: str, actual: int, what: str, unit: str = "characters") -> str:
    maximum = getattr(current(), name)
    return (f"{what} has {actual:,} {unit}; the limit is {maximum:,} "
            f"(raise limits.{name} in khive.yaml to allow more)")


def details(name: str, actual: int) -> dict[str, Any]:
    return {"limit": name, "max": getattr(current(), name), "actual": actual,
            "fix": f"send less, or raise limits.{name} in khive.yaml"}


def check(name: str, actual: int, what: str, unit: str = "characters") -> None:
    """Raise ``LimitExceeded`` when ``actual`` is over the current ``name`` limit."""
    if actual > getattr(current(), name):
        raise LimitExceeded(message(name, actual, what, unit), details=details(name, actual))


def invalid(name: str, actual: int, what: str, unit: str = "characters") -> PydanticCustomError:
    """The same refusal as a pydantic error, for validators (dispatch reports it as ``limit_exceeded``)."""
    return PydanticCustomError("limit_exceeded", message(name, actual, what, unit), details(name, actual))


def capped(name: str, what: str) -> AfterValidator:
    """A validator refusing a string (or None) longer than the current ``name`` limit."""

    def check_length(value: str | None) -> str | None:
        if value is not None and len(value) > getattr(current(), name):
            raise invalid(name, len(value), what)
        return value

    return AfterValidator(check_length)


def searched(what: str) -> AfterValidator:
    """A validator for text that is looked up word by word: ``limits.query_chars`` and ``limits.query_terms``."""

    def check_search(value: str | None) -> str | None:
        if value is None:
            return None
        limits = current()
        if len(value) > limits.query_chars:  # first: counting the words of a huge text would be the cost itself
            raise invalid("query_chars", len(value), what)
        words = len(distinct_words(value))
        if words > limits.query_terms:
            raise invalid("query_terms", words, what, unit="distinct words")
        return value

    return AfterValidator(check_search)


QueryText = Annotated[str, Field(min_length=1), searched("the query")]
"""A search query: at most ``limits.query_chars`` characters and ``limits.query_terms`` distinct words."""

OptionalQueryText = Annotated[str | None, searched("the query")]
"""An optional search query or filter text, with the same caps."""

BUDGET_TOKENS_MAX = 1_000_000  # a budget this large never sheds anything; larger ones are a mistake
