"""Identifier words for relationship inference: tokenize ``CustomerId`` / ``customer_id`` / ``customerID``
alike, reduce plural table names to one singular form so ``category_id`` meets ``categories``, and read
what a column name says it points at (``key_name``, ``role_of``).

Pure string functions; English only, and deliberately small: a wrong singular costs a missed link,
never a wrong one, because both sides of a comparison go through the same function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# camelCase and PascalCase boundaries, acronym runs (``HTTPCode`` -> http, code) and digit runs.
_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SEPARATOR_RE = re.compile(r"[^A-Za-z0-9]+")

_IRREGULAR = {
    "people": "person", "persons": "person", "men": "man", "women": "woman", "children": "child",
    "mice": "mouse", "geese": "goose", "feet": "foot", "teeth": "tooth", "oxen": "ox",
    "criteria": "criterion", "phenomena": "phenomenon", "indices": "index", "matrices": "matrix",
    "vertices": "vertex", "analyses": "analysis", "theses": "thesis", "crises": "crisis", "bases": "base",
    "aliases": "alias", "quizzes": "quiz", "caches": "cache", "leaves": "leaf", "wives": "wife",
    "knives": "knife", "halves": "half", "shelves": "shelf", "wolves": "wolf",
    "movies": "movie", "cookies": "cookie", "zombies": "zombie", "calories": "calorie",
    "shoes": "shoe", "toes": "toe", "canoes": "canoe", "news": "news", "series": "series",
    "species": "species", "data": "data", "media": "media", "metadata": "metadata",
}
# Irregulars that also end compounds ("salespeople", "databases"); the rest only match whole words.
_COMPOUND = ("people", "persons", "children", "women", "analyses", "indices", "matrices", "criteria", "bases")
_NO_PLURAL_ENDINGS = ("ss", "us", "is")


def words(identifier: str) -> tuple[str, ...]:
    """Lower-case words of an identifier: ``SupportRepId`` -> ``("support", "rep", "id")``."""
    found: list[str] = []
    for part in _SEPARATOR_RE.split(identifier):
        found.extend(word.lower() for word in _WORD_RE.findall(part))
    return tuple(found)


def singular(word: str) -> str:
    """One singular form of a lower-case English noun (``categories`` -> ``category``); idempotent enough
    for matching: ``singular(plural(x)) == singular(x)`` for the regular cases."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for plural in _COMPOUND:
        if word.endswith(plural):
            return word[: -len(plural)] + _IRREGULAR[plural]
    if len(word) <= 3 or word.endswith(_NO_PLURAL_ENDINGS):
        return word
    if word.endswith("ies"):
        return word[:-3] + ("ie" if len(word) <= 4 else "y")
    if word.endswith(("sses", "xes", "zzes", "ches", "shes")):
        return word[:-2]
    if word.endswith("ses"):
        stem = word[:-2]  # statuses -> status, buses -> bus; courses -> course
        return stem if stem.endswith(("us", "ss", "is")) else word[:-1]
    if word.endswith("oes"):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def squash(parts: tuple[str, ...] | list[str]) -> str:
    """Words joined without separators, the form in which ``customer_id`` equals ``CustomerID``."""
    return "".join(parts)


def singular_words(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The words with the last one singular: ``order_items`` -> ``("order", "item")``."""
    if not parts:
        return parts
    return (*parts[:-1], singular(parts[-1]))


# ---- what a column name says --------------------------------------------------------------------------

KEY_SUFFIXES = ("id", "key", "code")
GENERIC_NAMES = frozenset({"id", "key", "code", "type", "status", "name", "kind", "value", "no", "num", "number"})
# Words that name a person's role towards a row; such columns point at person-like tables or at their own.
ROLE_WORDS = frozenset({"manager", "supervisor", "boss", "reports", "lead", "rep", "representative", "owner",
                        "mentor", "approver", "assignee", "assigned", "superior", "parent", "head", "coach",
                        "creator", "created", "updated", "modified", "reviewer", "author"})
HIERARCHY_WORDS = frozenset({"manager", "supervisor", "boss", "reports", "superior", "parent", "head", "lead",
                             "mentor"})
ROLE_FILLERS = frozenset({"to", "by", "of"})
ROLE_PHRASES = frozenset({"reportsto", "createdby", "updatedby", "modifiedby", "assignedto", "ownedby",
                          "managedby"})
PERSON_WORDS = frozenset({"employee", "staff", "user", "person", "member", "worker", "agent", "personnel"})
TABLE_PREFIXES = frozenset({"tbl", "tb", "dim"})


@dataclass(frozen=True)
class KeyName:
    """What a column's name says about what it points at."""

    squashed: str  # whole name, lower case, no separators: customer_id -> customerid
    stem_words: tuple[str, ...]  # before the key suffix, last word singular: ("customer",)
    stem: str  # squashed stem: "customer"
    suffix: str | None  # id / key / code, or None
    split_on_word: bool  # the suffix was a separate word (customer_id, CustomerId), not cut off (customerid)


@lru_cache(maxsize=8192)
def key_name(name: str) -> KeyName:
    """What a column name says: ``SupportRepId`` -> stem ``supportrep``, suffix ``id``."""
    parts = words(name)
    if len(parts) > 1 and parts[0] == "fk":
        parts = parts[1:]
    suffix: str | None = None
    split_on_word = True
    stem_parts = parts
    if len(parts) > 1 and parts[-1] in KEY_SUFFIXES:
        suffix, stem_parts = parts[-1], parts[:-1]
    elif parts:
        for candidate in KEY_SUFFIXES:
            last = parts[-1]
            if last.endswith(candidate) and len(last) > len(candidate):
                suffix, split_on_word = candidate, False
                stem_parts = (*parts[:-1], last[: -len(candidate)])
                break
    stem_words = singular_words(stem_parts)
    return KeyName(squashed=squash(parts), stem_words=stem_words, stem=squash(stem_words), suffix=suffix,
                   split_on_word=split_on_word)


@lru_cache(maxsize=8192)
def role_of(name: KeyName) -> str | None:
    """``"hierarchy"`` for manager-like roles (may point at the own table), ``"role"`` for the others."""
    if name.suffix == "code":
        return None
    if name.suffix is None:
        if not (name.squashed in ROLE_PHRASES or (
                any(w in ROLE_WORDS for w in name.stem_words)
                and all(w in ROLE_WORDS or w in ROLE_FILLERS for w in name.stem_words))):
            return None
        found = [w for w in ROLE_WORDS if w in name.squashed]
    elif any(w in ROLE_WORDS for w in name.stem_words):
        found = [w for w in name.stem_words if w in ROLE_WORDS]
    elif len(name.stem_words) == 1:  # managerid, supportrepid: no word boundaries to go by
        found = [w for w in ROLE_WORDS if name.stem.startswith(w) or name.stem.endswith(w)]
    else:
        return None
    if not found:
        return None
    return "hierarchy" if any(w in HIERARCHY_WORDS for w in found) else "role"
