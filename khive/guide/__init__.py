"""The agent guide generated from the project (``.claude/skills/khive/SKILL.md``).

    facts.py     what the examples are made of: this project's names, learnt through public verbs
    examples.py  the candidate examples, written with those names
    verify.py    every example run as an agent would run it; budgets computed from the measured sizes
    render.py    the markdown, its generated part between markers (a person's text outside survives)

Nothing here reads files or the environment: a composition root hands in ``call``, which dispatches
one request as an agent over MCP would (same gate, same audit) and returns its envelope.
"""

from __future__ import annotations

from dataclasses import dataclass

from khive.guide.examples import plan_examples
from khive.guide.facts import Call, gather
from khive.guide.render import merge_guide, render_generated
from khive.guide.verify import Checked, verify_all


@dataclass(frozen=True, slots=True)
class Guide:
    text: str  # the whole file: the existing one with its generated part replaced
    checked: tuple[Checked, ...]  # every candidate example, ok or not (a failure says why it was left out)


async def generate_guide(call: Call, existing: str | None) -> Guide:
    """Learn the project's names, run every candidate example, and write the guide around the ones that ran."""
    facts = await gather(call)
    checked = tuple(await verify_all(call, plan_examples(facts)))
    return Guide(merge_guide(existing, render_generated(facts, [c for c in checked if c.ok])), checked)


__all__ = ["Call", "Checked", "Guide", "generate_guide"]
