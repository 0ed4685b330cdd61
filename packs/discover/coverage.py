"""Thin coverage said, not hidden: which of the question's terms the best refs answer, a separate "possibly
relevant" tier of documents that only mention the rest in their text, and up to three clarifying questions.

* A term is covered by a ref when one of its forms is in what the ref is about: a page's key, title, summary
  and tags (not its body), a table's name, description and columns, a column's name, description and
  values, a semantic-layer object's name, description and members. Words that say what to compute
  (total, number, average, ...) or how to bucket time (monthly, ...) are not subjects and are not judged.
* Coverage is thin when the first TOP refs cover less than half of the judged terms (or there are none).
* Possibly relevant: ranked documents (pages, patterns, sources) below the list whose text holds a term the
  best refs miss and at least MIN_HITS of the question's terms (all of them for a shorter question), at most
  POSSIBLY_MAX, each marked ``confidence: "low"``.
* Questions name one gap each: the terms nothing in the project mentions; the terms only such documents
  mention; a table name the best refs hold in two connections or schemas; a term that names both a measure
  and a column; two pages that contradict each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from khive.index.morph import key
from packs.discover.forms import Term
from packs.discover.rank import Candidate
from packs.discover.route import OPERATION_WORDS
from packs.discover.text import snippet_around, split_words

TOP = 5
THIN = 0.5
POSSIBLY_MAX = 5
POSSIBLY_DEPTH = 40  # ranked documents below the list that are read for the tier
MIN_HITS = 2
QUESTIONS_MAX = 3
DOCUMENT_KINDS = ("wiki", "pattern", "sl_source")
_HEAD = ("name", "title", "summary", "tags")


# How to bucket time, not what to look at: any time column answers them, so they are not judged either.
TIME_GRAINS = frozenset("hourly daily weekly monthly quarterly yearly annual annually".split())


def judged(terms: Sequence[Term]) -> list[Term]:
    subjects = [term for term in terms if term.word not in OPERATION_WORDS and term.word not in TIME_GRAINS]
    return subjects or list(terms)


def _keys(text: str) -> set[str]:
    return {key(word) for word in split_words(text)}


def about(kind: str, fields: dict[str, str]) -> set[str]:
    """The keys of what a ref is about (a page's body is only mentioned, so it is left out)."""
    names = _HEAD if kind in ("wiki", "pattern") else (*_HEAD, "body", "extra")
    return set().union(*(_keys(fields.get(name, "")) for name in names))


def holds(term: Term, keys: set[str]) -> bool:
    return any(form in keys for form in term.forms)


@dataclass
class Coverage:
    terms: list[Term]
    covered: list[str]
    missing: list[str]

    @property
    def share(self) -> float:
        return round(len(self.covered) / len(self.terms), 4) if self.terms else 1.0

    def report(self, refs: int) -> dict[str, Any]:
        return {"covered": self.covered, "missing": self.missing, "share": self.share,
                "thin": refs == 0 or self.share < THIN}


def measure(terms: Sequence[Term], top: Sequence[Candidate], fields: dict[str, dict[str, str]]) -> Coverage:
    subjects = judged(terms)
    keys: set[str] = set()
    for candidate in top[:TOP]:
        keys |= about(candidate.kind, fields.get(candidate.doc_id, {}))
    covered = [term.word for term in subjects if holds(term, keys)]
    return Coverage(subjects, covered, [term.word for term in subjects if term.word not in covered])


def possibly_relevant(coverage: Coverage, rest: Sequence[Candidate], fields: dict[str, dict[str, str]]
                      ) -> list[tuple[Candidate, list[str], str]]:
    """(document, the question's terms its text holds, the missing term it was kept for), best first."""
    if not coverage.missing:
        return []
    missing = [term for term in coverage.terms if term.word in coverage.missing]
    needed = min(MIN_HITS, len(coverage.terms))
    out = []
    for candidate in rest:
        text = fields.get(candidate.doc_id, {})
        keys = set().union(*(_keys(value) for value in text.values())) if text else set()
        gap = next((term.word for term in missing if holds(term, keys)), None)
        hits = [term.word for term in coverage.terms if holds(term, keys)]
        if gap is not None and len(hits) >= needed:
            out.append((candidate, hits, gap))
    out.sort(key=lambda item: -len(item[1]))  # stable: the ranking breaks ties
    return out[:POSSIBLY_MAX]


def snippet(fields: dict[str, str], word: str) -> str | None:
    return snippet_around(fields.get("body") or fields.get("summary") or "", [word]) or None


def mentions(coverage: Coverage, refs: Sequence[dict[str, Any]], fields: dict[str, dict[str, str]]
             ) -> dict[str, list[str]]:
    """missing term -> ids of the documents (listed or possibly relevant) whose text holds it."""
    out: dict[str, list[str]] = {}
    missing = [term for term in coverage.terms if term.word in coverage.missing]
    for ref in refs:
        if ref["kind"] not in DOCUMENT_KINDS:
            continue
        keys = set().union(*(_keys(value) for value in fields.get(ref["docId"], {}).values()))
        for term in missing:
            if holds(term, keys):
                out.setdefault(term.word, []).append(ref["id"])
    return out


def questions(coverage: Coverage, uncovered: Sequence[str], mentioned: dict[str, list[str]],
              refs: Sequence[dict[str, Any]], terms: Sequence[Term], connection: str | None) -> list[dict[str, Any]]:
    """Up to QUESTIONS_MAX questions an agent can put to its user, each naming one gap."""
    out: list[dict[str, Any]] = []
    nowhere = [word for word in coverage.missing if word in uncovered]
    if nowhere:
        what = "is it" if len(nowhere) == 1 else "are they"
        out.append({"question": f"Nothing in this project mentions {_words(nowhere)}: what {what} (a table, a "
                                "measure, another word for something here)?",
                    "about": nowhere, "why": "uncovered", "options": []})
    weak = [word for word in coverage.missing if word not in nowhere]
    if weak:
        where = list(dict.fromkeys(page for word in weak for page in mentioned.get(word, [])))
        verb = "mentions" if len(where) == 1 else "mention"
        tail = f" (only {', '.join(where[:3])} {verb} {'it' if len(weak) == 1 else 'them'} in passing)" \
            if where else ""
        out.append({"question": f"None of the best matches is about {_words(weak)}{tail}: which table, measure or "
                                f"page defines {'it' if len(weak) == 1 else 'them'}?",
                    "about": weak, "why": "weakly_covered", "options": where})
    if connection is None:
        out += _same_name(refs, terms)
    out += _measure_or_column(refs, terms)
    out += _contradictions(refs)
    return out[:QUESTIONS_MAX]


def _words(words: Sequence[str]) -> str:
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _same_name(refs: Sequence[dict[str, Any]], terms: Sequence[Term]) -> list[dict[str, Any]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for ref in refs:
        if ref["kind"] == "table":
            by_name.setdefault(str(ref["tableRef"]["name"]).lower(), []).append(ref)
    out = []
    for name, found in by_name.items():
        places = {(ref.get("connectionId"), ref["tableRef"].get("db")) for ref in found}
        if len(places) < 2 or not any(holds(term, _keys(name)) for term in terms):
            continue
        options = [f"{ref['id']} in {ref['connectionId']}" for ref in found]
        out.append({"question": f"'{name}' is a table in {len(places)} places ({'; '.join(options)}): which one "
                                "do you mean?", "about": [name], "why": "same_name",
                    "options": [ref["docId"] for ref in found]})
    return out


def _measure_or_column(refs: Sequence[dict[str, Any]], terms: Sequence[Term]) -> list[dict[str, Any]]:
    out = []
    for term in terms:
        if term.word in OPERATION_WORDS:
            continue
        measures = [r for r in refs if r["kind"] == "sl_measure" and holds(term, _keys(r["id"].rsplit(".", 1)[-1]))]
        columns = [r for r in refs if r["kind"] in ("column", "sl_dimension")
                   and holds(term, _keys(r["id"].rsplit(".", 1)[-1]))]
        if measures and columns:
            measure, column = measures[0], columns[0]
            what = column["kind"].replace("sl_", "")
            out.append({"question": f"'{term.word}' is the measure {measure['id']} and the {what} {column['id']}: "
                                    "the defined measure, or the raw values?",
                        "about": [term.word], "why": "measure_or_column",
                        "options": [measure["docId"], column["docId"]]})
    return out


def _contradictions(refs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out, seen = [], set()
    for ref in refs:
        for flag in ref.get("flags") or []:
            if not flag.startswith("contradicts:"):
                continue
            other = flag.split(":", 1)[1]
            pair = frozenset((ref["id"], other))
            if pair in seen:
                continue
            seen.add(pair)
            out.append({"question": f"The pages {ref['id']} and {other} contradict each other: which one holds?",
                        "about": sorted(pair), "why": "contradiction",
                        "options": [ref["docId"], next((r["docId"] for r in refs if r["id"] == other), other)]})
    return out
