"""Verb declarations and the registry that resolves names to them.

A pack declares each verb as a frozen ``Verb``: its parameter model (pydantic), a handler
``(params, ctx) -> result``, the model of that result (``khive.results``), a visibility, and optionally
a write-key rule. Handlers know nothing
of DSL text, envelopes, MCP or audit.

The threading rule (ADR 0027): one daemon serves every agent from one event loop, so a handler
never blocks that loop. A handler is either

- a plain ``def`` (the default, and what almost every verb is): it may block freely (files, git,
  SQLite, the index, YAML, SQL parsing, ranking); the dispatcher always runs it, and the depth
  guard, dump and presentation of its result, in a worker thread; or
- an ``async def`` that only awaits: an orchestrator that needs the loop itself (progress
  callbacks, MCP sampling, the async audit store, cancellable database waits). Every blocking
  step goes through ``await ctx.run_blocking(fn, ...)``; nothing else in it may touch a file,
  the index, a database or a parser. Async handlers are few and reviewed: a meta-test fails when
  one is not on its allow-list (tests/meta/test_threading_rule.py).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from khive.errors import PackLoadError, UnknownVerb, quoted
from khive.results import result_schema


class Visibility(StrEnum):
    PUBLIC = "public"
    OPERATOR = "operator"  # subhandler: blocked at the MCP wire, for the CLI / local operator


class Params(BaseModel):
    """Base for verb parameter models: unknown arguments are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParams(Params):
    pass


# (params, khive.context.Context) -> result: a plain function, or an async one (an orchestrator). Context is
# not named here because khive.context sits above this module (services -> registry -> verbs).
Handler = Callable[[Any, Any], Any]
WriteKeys = Callable[[Any], Sequence[str]]


@dataclass(frozen=True, slots=True)
class Verb:
    name: str
    params: type[BaseModel]
    handler: Handler
    doc: str
    visibility: Visibility = Visibility.PUBLIC
    write_keys: WriteKeys | None = None
    write_key_rule: str = ""  # human description of write_keys, shown by help=true
    read_only: bool = True  # safe to resend after a lost response (daemon)
    always_verbose: bool = False  # presentation transforms never apply
    pack: str = ""
    result: Any = None  # the result model (khive.results): docs/verbs.md, $prev paths, the dispatcher's check

    @property
    def runs_on_loop(self) -> bool:
        """An ``async def`` handler (it runs on the event loop); a plain ``def`` one runs in a worker thread."""
        return inspect.iscoroutinefunction(self.handler)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else ""

    def help(self) -> dict[str, Any]:
        return {
            "verb": self.name,
            "pack": self.pack,
            "doc": self.doc.strip(),
            "visibility": self.visibility.value,
            "readOnly": self.read_only,
            "writeKeys": self.write_key_rule or ("none" if self.write_keys is None else "declared"),
            "params": self.params.model_json_schema(),
            "result": result_schema(self.result),
        }


@dataclass(slots=True)
class VerbRegistry:
    verbs: dict[str, Verb] = field(default_factory=dict)

    def add(self, verb: Verb) -> None:
        if verb.name in self.verbs:
            other = self.verbs[verb.name]
            raise PackLoadError(f"verb {verb.name!r} is declared by both {other.pack!r} and {verb.pack!r}")
        self.verbs[verb.name] = verb

    def extend(self, verbs: Iterable[Verb]) -> None:
        for verb in verbs:
            self.add(verb)

    def resolve(self, name: str) -> Verb:
        verb = self.verbs.get(name)
        if verb is not None:
            return verb
        close = difflib.get_close_matches(name, list(self.verbs), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; call verbs() to list them"
        raise UnknownVerb(f"unknown verb {quoted(name)}{hint}", details={"verb": name, "closest": close})

    def catalogue(self, *, include_operator: bool = True) -> list[dict[str, str]]:
        return [
            {"verb": verb.name, "doc": verb.summary, "visibility": verb.visibility.value}
            for name, verb in sorted(self.verbs.items())
            if include_operator or verb.visibility is Visibility.PUBLIC
        ]
