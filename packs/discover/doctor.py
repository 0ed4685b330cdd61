"""``discover.doctor``: what retrieval can see, measured (``health.py``), as a score out of 100 and a grade.

Points: reachability 15, connectivity 15 and the measured hit@3 10 (the reference design's weights), and
the other 60 for the project's state: every connection scanned 20, references that resolve 20, tables
described 10, query history ingested where enabled 10. A dimension scores its share of its points; one
with nothing to measure scores them all (and says so); a benchmark not measured scores nothing.

A needs a score of 90 or more and all three measured gates: reachability 100%, connectivity >= 80% and a
measured hit@3 >= 80%. A score of 90 that misses a gate is a B; below that B >= 75, C >= 50, else D. The
summary names the dimensions that kept it from an A. Findings are ordered most severe first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from packs.discover import health
from packs.discover.health import CONNECTIVITY_GOAL, HIT_GOAL, Search, finding

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

SEVERITY = ("high", "medium", "low", "info")
POINTS = {"reachability": 15, "connectivity": 15, "benchmark": 10, "scanned": 20, "links": 20, "described": 10,
          "history": 10}
A_SCORE, B_SCORE, C_SCORE = 90, 75, 50


def _value(name: str, result: dict[str, Any]) -> float | None:
    value = result["hitAt3"] if name == "benchmark" else result["value"]
    return None if value is None else float(value)


def points(name: str, result: dict[str, Any]) -> float:
    value = _value(name, result)
    if value is None:
        return 0.0 if name == "benchmark" else float(POINTS[name])
    return round(POINTS[name] * value, 2)


def gates(results: Mapping[str, dict[str, Any]]) -> list[str]:
    """Why each measured gate of an A is missed (empty: all met)."""
    missed = []
    reach = results["reachability"]["value"]
    if reach is not None and reach < 1.0:
        missed.append(f"reachability is {reach:.0%} (an A needs 100%)")
    conn = results["connectivity"]["value"]
    if conn is not None and conn < CONNECTIVITY_GOAL:
        missed.append(f"connectivity is {conn:.0%} (an A needs {CONNECTIVITY_GOAL:.0%})")
    bench = results["benchmark"]
    if bench["hitAt3"] is None:
        missed.append(f"benchmark: hit@3 is {bench['status']} (an A needs a measured {HIT_GOAL:.0%}; "
                      f"add {health.SUITE})")
    elif bench["hitAt3"] < HIT_GOAL:
        missed.append(f"benchmark: hit@3 is {bench['hitAt3']:.0%} (an A needs {HIT_GOAL:.0%})")
    return missed


def grade(score: float, missed: list[str]) -> str:
    if score >= A_SCORE and not missed:
        return "A"
    return "B" if score >= B_SCORE else "C" if score >= C_SCORE else "D"


def summary(letter: str, score: float, scores: Mapping[str, float], missed: list[str]) -> str:
    head = f"grade {letter} ({score:g}/100)"
    if letter == "A":
        return head
    reasons = list(missed)
    if score < A_SCORE:
        lost = sorted(((POINTS[n] - s, n) for n, s in scores.items() if s < POINTS[n]), reverse=True)
        reasons.append("the score is under 90: " + ", ".join(f"{name} lost {gap:g}" for gap, name in lost))
    return f"{head}: kept from an A by " + "; ".join(reasons)


def run(index: RetrievalIndex, search: Search, connections: Mapping[str, Any]) -> dict[str, Any]:
    index.refresh()
    measured = {"reachability": health.reachability(index), "connectivity": health.connectivity(index),
                "benchmark": health.benchmark(index.project, search, connections),
                "scanned": health.scanned(index, connections), "links": health.links(index),
                "described": health.described(index), "history": health.history(index, connections)}
    results = {name: result for name, (result, _) in measured.items()}
    scores = {name: points(name, result) for name, result in results.items()}
    for name, result in results.items():
        result["points"], result["of"] = scores[name], POINTS[name]
        if _value(name, result) is None and name != "benchmark":
            result["status"] = "not-applicable"
    score = round(sum(scores.values()), 1)
    missed = gates(results)
    letter = grade(score, missed)
    text = summary(letter, score, scores, missed)
    findings = [item for _, found in measured.values() for item in found]
    findings.append(finding("info", "grade", f"grade {letter}", text, category="grade", score=score,
                            scores=scores))
    findings.sort(key=lambda f: (SEVERITY.index(f["severity"]), f["code"], f["location"] or ""))
    return {"grade": letter, "score": score, "summary": text, **results, "findings": findings,
            "ok": not any(f["severity"] == "high" for f in findings)}
