"""Identifier words for relationship inference: tokenize ``CustomerId`` / ``customer_id`` / ``customerID``
alike, and reduce plural table names to one singular form so ``category_id`` meets ``categories``.

Pure string functions; English only, and deliberately small: a wrong singular costs a missed link,
never a wrong one, because both sides of a comparison go through the same function.
"""

from __future__ import annotations

import re

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
