"""Run every candidate example as an agent would; compute each budget from the answer's measured size.

A budgeted example is first run with ``budget_tokens=1``: its report names the undroppable core and
what each section costs. The recommended budget is the core plus the section shed last (the one most
worth keeping), with ``HEADROOM`` for the project growing a little, rounded up to a hundred. The
example is then run again with that budget and kept only when it answers ``fits: true``. An example
that fails is left out of the guide, and the reason is reported to the person running setup-agents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from khive.guide.examples import BUDGET, Example
from khive.guide.facts import Call

HEADROOM = 1.15
ROUND_TO = 100


@dataclass(frozen=True, slots=True)
class BudgetFigures:
    core: int  # tokens never shed (ids, paths, hashes)
    full: int  # about what the whole answer costs
    budget: int  # what the guide recommends
    kept: tuple[str, ...]  # the sections that budget keeps on this project
    dropped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Checked:
    example: Example
    text: str  # as printed in the guide (the budget filled in)
    ok: bool
    error: str = ""
    budget: BudgetFigures | None = None


async def verify_all(call: Call, examples: Sequence[Example]) -> list[Checked]:
    return [await check(call, example) for example in examples]


async def check(call: Call, example: Example) -> Checked:
    if not example.budgeted:
        failure = _failure(await call(example.text, "agent"))
        return Checked(example, example.text, failure is None, failure or "")
    probe = await call(example.text.replace(BUDGET, "1"), "agent")
    failure = _failure(probe)
    report = _report(probe)
    if failure or report is None:
        return Checked(example, example.text, False, failure or "the answer carries no budget report")
    tokens = report["tokens"]
    sections: Mapping[str, int] = tokens.get("sections") or {}
    last = next((name for name in reversed(report.get("order") or []) if name in sections), None)
    wanted = tokens["core"] + (sections[last] if last else 0)
    budget = math.ceil(wanted * HEADROOM / ROUND_TO) * ROUND_TO
    text = example.text.replace(BUDGET, str(budget))
    answer = await call(text, "agent")
    failure, report = _failure(answer), _report(answer)
    if failure or report is None:
        return Checked(example, text, False, failure or "the answer carries no budget report")
    if not report["fits"]:
        return Checked(example, text, False, f"budget_tokens={budget} does not fit (core {tokens['core']} tokens)")
    figures = BudgetFigures(core=int(tokens["core"]), full=int(tokens["core"] + sum(sections.values())),
                            budget=budget, kept=tuple(report.get("kept") or ()),
                            dropped=tuple(report.get("dropped") or ()))
    return Checked(example, text, True, budget=figures)


def _failure(envelope: Mapping[str, Any]) -> str | None:
    """None when every op succeeded, else the first error as ``verb: code: message``."""
    if envelope.get("status") == "success":
        return None
    for result in envelope.get("results") or []:
        if not result.get("ok"):
            error = result.get("error") or {"code": "aborted", "message": "an earlier op of the chain failed"}
            return f"{result.get('verb')}: {error.get('code')}: {error.get('message')}"
    return f"status {envelope.get('status')}"


def _report(envelope: Mapping[str, Any]) -> dict[str, Any] | None:
    results = envelope.get("results") or []
    found = (results[0].get("result") or {}).get("budget") if results and results[0].get("ok") else None
    return found if isinstance(found, dict) else None
