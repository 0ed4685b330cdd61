"""What each query word may look like in a schema: its comparison key, and the keys it reaches.

For a question word ``w`` (weights are how much a match through that form counts):

* ``w`` itself (1.0), and the words an abbreviation stands for when ``w`` is one (``qty`` -> quantity);
* ``w`` written together with its neighbour (``high schoolers`` -> highschooler; 1.0, credited to both);
* identifier tokens of the catalog that abbreviate ``w`` (``takr``, ``tst``, ``cnty``: ABBREVIATED);
* identifier tokens that are ``w`` plus a derivational ending, or the reverse (pay ~ payment: DERIVED);
* a few synonyms (client ~ customer: SYNONYM);
* for a value, the nouns its holder is named with (French -> language, Europe -> region: VALUE, ``values.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from khive.index.morph import ABBREVIATIONS, abbreviates, derived, identifier_words, key, synonyms
from packs.discover import values
from packs.discover.lexicon import Lexicon
from packs.discover.text import STOPWORDS, split_words

# ABBREVIATED was 0.8 until the abbreviated dev variant (ADR 0031, sixth session): a table named ``cou`` or
# ``busi`` lost its own question ("each course") to tables that only name the word in part (course_offering).
EXACT, DERIVED, ABBREVIATED, SYNONYM = 1.0, 0.85, 0.9, 0.6
VALUE = 0.5  # a value hints where it is kept (below a synonym: it is not the thing itself)
VALUE_NEXT = 0.9  # each further noun of a value's class counts this much of the one before


@dataclass
class Term:
    word: str
    forms: dict[str, float] = field(default_factory=dict)  # key -> weight
    surfaces: list[str] = field(default_factory=list)  # words to hand a lexical engine (FTS) for this term

    def add(self, word: str, weight: float) -> None:
        k = key(word)
        if self.forms.get(k, 0.0) < weight:
            self.forms[k] = weight
        if word not in self.surfaces:
            self.surfaces.append(word)


def raw_words(query: str) -> list[str]:
    return [w for w in split_words(query) if len(w) > 1 or w.isdigit()]


def expand(query: str, terms: Sequence[str], lexicon: Lexicon) -> list[Term]:
    """One ``Term`` per query term, with every form it reaches in this catalog."""
    out = []
    for word in terms:
        term = Term(word)
        term.add(word, EXACT)
        singular = word[:-1] if word.endswith("s") and len(word) > 3 else word  # "emps" -> emp
        for full in ABBREVIATIONS.get(word, ()) or ABBREVIATIONS.get(singular, ()):
            term.add(full, EXACT)
        for token in _catalog_forms(word, lexicon):
            term.add(token[0], token[1])
        for other in synonyms(word):
            if key(other) in lexicon.postings:
                term.add(other, SYNONYM)
        for i, noun in enumerate(values.classes(word)):
            if key(noun) in lexicon.postings:
                term.add(noun, VALUE * VALUE_NEXT ** i)
        out.append(term)
    by_word = {t.word: t for t in out}
    words = raw_words(query)
    for left, right in pairwise(words):  # "high schoolers" -> highschooler
        joined = left + right
        if key(joined) in lexicon.postings:
            for word in (left, right):
                if word in by_word:
                    by_word[word].add(joined, EXACT)
    return out


def _catalog_forms(word: str, lexicon: Lexicon) -> tuple[tuple[str, float], ...]:
    """Catalog tokens that abbreviate ``word`` or derive from it (memoised per lexicon)."""
    cached = lexicon.forms.get(word)
    if cached is not None:
        return cached
    found: list[tuple[str, float]] = []
    if len(word) >= 3 and word not in STOPWORDS and word.isalpha():
        base = key(word)
        for token in lexicon.by_initial.get(word[0], ()):
            if token == word or key(token) == base:
                continue
            if len(token) <= 5 and (abbreviates(token, word) or abbreviates(token, base)):
                found.append((token, ABBREVIATED))
            elif derived(word, token) or derived(base, token) or derived(token, word):
                found.append((token, DERIVED))
    lexicon.forms[word] = out = tuple(sorted(found))
    return out


def surfaces(terms: Sequence[Term]) -> list[str]:
    """The distinct words of every term's forms, for a lexical engine's OR query."""
    return list(dict.fromkeys(word for term in terms for surface in term.surfaces
                              for word in identifier_words(surface)))
