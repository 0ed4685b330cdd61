"""The authorization gate: one decision, with its reason, before every op.

Rules come from ``khive.yaml`` (section ``auth``) and match principal, transport and verb with
globs. Any matching deny wins over any allow. Without a matching rule: operator verbs are
denied on the MCP wire (``help=true`` excepted: introspection is answered before the pack
runs), allowed to the local operator; public verbs follow ``auth.default`` (allow unless set).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from khive.transports import WIRE_TRANSPORTS
from khive.verbs import Verb, Visibility

Effect = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class Rule:
    effect: Effect
    principal: str = "*"
    transport: str = "*"
    verb: str = "*"
    visibility: Literal["*", "public", "operator"] = "*"
    reason: str = ""

    def matches(self, principal: str, transport: str, verb: Verb) -> bool:
        return (
            fnmatchcase(principal, self.principal)
            and fnmatchcase(transport, self.transport)
            and fnmatchcase(verb.name, self.verb)
            and (self.visibility == "*" or self.visibility == verb.visibility.value)
        )

    def describe(self) -> str:
        return self.reason or (
            f"rule {self.effect} principal={self.principal} transport={self.transport} verb={self.verb}"
        )


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str


class Gate:
    def __init__(self, rules: tuple[Rule, ...] = (), default: Effect = "allow"):
        self.rules = rules
        self.default = default
        self._cache: dict[tuple[str, str, str, bool], Decision] = {}

    def decide(self, principal: str, transport: str, verb: Verb, *, help_only: bool = False) -> Decision:
        key = (principal, transport, verb.name, help_only)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._decide(principal, transport, verb, help_only)
            if len(self._cache) < 4096:
                self._cache[key] = cached
        return cached

    def _decide(self, principal: str, transport: str, verb: Verb, help_only: bool) -> Decision:
        if help_only:
            return Decision(True, "help introspection is always allowed")
        matching = [rule for rule in self.rules if rule.matches(principal, transport, verb)]
        for rule in matching:
            if rule.effect == "deny":
                return Decision(False, rule.describe())
        for rule in matching:
            return Decision(True, rule.describe())
        if verb.visibility is Visibility.OPERATOR:
            if transport in WIRE_TRANSPORTS:
                return Decision(False, f"{verb.name} is an operator verb, not available over MCP; "
                                       f"run it with the khive CLI")
            return Decision(True, "operator verb from a local transport")
        if self.default == "deny":
            return Decision(False, "no rule allows it (auth.default is deny)")
        return Decision(True, "public verb (auth.default is allow)")
