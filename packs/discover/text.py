"""Query words, a light stemmer, and snippets cut around the first match (at most 200 characters)."""

from __future__ import annotations

import re
from functools import lru_cache

SNIPPET_MAX = 200
_WORD_RE = re.compile(r"[A-Za-z0-9]+")
# An identifier's words in one pass: a run of capitals and what follows it in lower case or digits
# (``HTMLParser`` stays whole, ``customerId`` -> customer, Id), else a run of lower case and digits.
_IDENTIFIER_WORD_RE = re.compile(r"[A-Z]+[a-z0-9]*|[a-z0-9]+")
# Words that carry no subject in a question; kept out of the lexical query so they cannot match
# descriptions ("Unique identifier for each author") by themselves.
STOPWORDS = frozenset("""
a about above after all also an and any are as at be been being between both but by can could did do does
doing each either for from get give had has have having he her here hers him his how i if in into is it its
list many me more most much my no nor not of off on once only or other our out over own per please same she
should show so some such tell than that the their theirs them then there these they this those through to
too under until up very was we were what when where which while who whom whose why will with would you your
""".split())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A conservative suffix strip: ``orders`` ~ ``order``, ``cities`` ~ ``city``, ``booking`` ~ ``book``."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 4 and w.endswith("ed") and not w.endswith("eed"):
        return w[:-2]
    return w


def split_words(text: str) -> list[str]:
    """Lower-case words of ``text``; identifiers split (``customer_id``, ``customerId`` -> customer, id)."""
    words = _IDENTIFIER_WORD_RE.findall(text)
    return " ".join(words).lower().split() if words else []  # ASCII words: one lower() for all of them


def query_terms(query: str) -> list[str]:
    """The distinct content words of a query, in order (stopwords and one-letter words dropped)."""
    out: list[str] = []
    for word in split_words(query):
        if word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        if word not in out:
            out.append(word)
    return out or list(dict.fromkeys(split_words(query)))


def stems(text: str) -> set[str]:
    return {stem(word) for word in split_words(text)}


def matched_terms(terms: list[str], text: str) -> list[str]:
    present = stems(text)
    return [term for term in terms if stem(term) in present]


@lru_cache(maxsize=65536)
def name_stems(name: str) -> frozenset[str]:
    """``stems`` of an identifier (a column name): the same few thousand recur in every search."""
    return frozenset(stems(name))


def cap(text: str, limit: int = SNIPPET_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def snippet_around(text: str, terms: list[str], limit: int = SNIPPET_MAX) -> str:
    """At most ``limit`` characters of ``text`` around the first word matching one of ``terms``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    wanted = {stem(term) for term in terms}
    position = next((m.start() for m in _WORD_RE.finditer(text) if stem(m.group()) in wanted), 0)
    start = max(0, position - limit // 4)
    end = min(len(text), start + limit - 2)
    start = max(0, end - (limit - 2))
    piece = text[start:end].strip()
    prefix, suffix = ("…" if start > 0 else ""), ("…" if end < len(text) else "")
    return (prefix + piece + suffix)[:limit]
