"""Validation of a source file: YAML, the model, and every reference, each problem with file, line and fix.

Lines come from ruamel's line/column info (``lc``) of the round-trip document, so a problem points at
the key or list item to change. References are checked against ``Known`` sources (what the other
files of the project declare): join targets and join columns, derived measures' inputs, and the SQL
of filters, segments and expressions, parsed with sqlglot in the connection's dialect.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel, ValidationError
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.reader import ReaderError
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from khive.errors import OpError
from khive.project.plainyaml import load_plain
from khive.project.yamldoc import line_of, plain
from packs.sl.models import Column, Descriptions, Join, JoinKey, Measure, Segment, Source, Usage
from packs.sl.store import load_yaml, split_path

_NESTED: dict[str, type[BaseModel]] = {"descriptions": Descriptions, "columns": Column, "measures": Measure,
                                       "joins": Join, "on": JoinKey, "segments": Segment, "usage": Usage}
_WRAPPERS = {"predicate": "SELECT 1 WHERE ", "expression": "SELECT ", "query": ""}


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    line: int
    field: str
    message: str
    fix: str = ""
    severity: Literal["error", "info"] = "error"  # info: worth knowing, never makes the source invalid

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message, "fix": self.fix,
                "severity": self.severity}

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}: {self.field or '(source)'}: {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix else text


@dataclass(frozen=True, slots=True)
class Known:
    """What another source declares, enough to check references to it."""

    connection: str
    name: str
    columns: frozenset[str]
    measures: frozenset[str]

    @classmethod
    def of(cls, connection: str, source: Source) -> Known:
        return cls(connection, source.name, frozenset(c.name for c in source.columns),
                   frozenset(m.name for m in source.measures))


def invalid_source(problems: list[Problem]) -> OpError:
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return OpError(f"{problems[0]}{more}", code="invalid_source",
                   details={"problems": [p.to_dict() for p in problems]})


# Texts whose model the caller already holds: sl.bootstrap hands the index the sources it just wrote.
_READ: ContextVar[Mapping[str, Source] | None] = ContextVar("sl_sources_read", default=None)


@contextmanager
def sources_read(models: Mapping[str, Source]) -> Iterator[None]:
    """Within: ``parse_source`` of a text in ``models`` (text -> its model) answers that model, unparsed."""
    token = _READ.set(models)
    try:
        yield
    finally:
        _READ.reset(token)


def parse_source(text: str, path: str) -> Source:
    """The source in ``text``, or ValueError naming the first problem (for the index)."""
    known = _READ.get()
    if known is not None and (model := known.get(text)) is not None:
        return model
    source, problems, _ = check_model(text, path)
    if source is None:
        raise ValueError(str(problems[0]))
    return source


def check_model(text: str, path: str) -> tuple[Source | None, list[Problem], Any]:
    """Parse YAML and the model; returns (source or None, problems, the document).

    A valid source is read with the safe loader (libyaml's parser when ruamel.yaml.clib is there: a
    tenth of the round-trip loader's time, which matters for thousands of sources) and the document
    is then plain data; anything else is read again round-trip, so every problem names its line."""
    fast = _safe_load(text)
    if isinstance(fast, dict):
        try:
            return Source.model_validate(fast), [], fast
        except ValidationError:
            pass
    try:
        data = load_yaml(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        return None, [Problem(path, line, "", f"invalid YAML: {exc.problem}", "fix the YAML syntax")], None
    except ReaderError as exc:  # a character YAML does not allow (NUL, other control characters)
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        return None, [Problem(path, line, "", f"invalid YAML: character #x{exc.character:04x} is not allowed in "
                              "YAML", "remove the character or escape it inside a double-quoted string")], None
    if not isinstance(data, CommentedMap):
        return None, [Problem(path, 1, "", "a source file must be a mapping (name:, table:, columns:, ...)",
                              "start from sl.read of an existing source or from sl.bootstrap")], data
    try:
        return Source.model_validate(plain(data)), [], data
    except ValidationError as exc:
        return None, [_model_problem(path, data, error) for error in exc.errors(include_url=False)], data


def check_written(text: str, path: str, data: Mapping[str, Any]) -> tuple[Source | None, list[Problem], Any]:
    """``check_model`` of a text just written from the plain ``data`` (which it reads back as): the model is
    validated from the data, unparsed; only a source with a problem is read, for the problem's line."""
    try:
        return Source.model_validate(data), [], data
    except ValidationError:
        return check_model(text, path)


def check_text(text: str, path: str, *, dialect: str | None, known: Mapping[str, Known],
               parsed: tuple[Source | None, list[Problem], Any] | None = None) -> tuple[Source | None, list[Problem]]:
    """Every problem of a source file's text; ``known`` maps source names of the project to what they declare;
    ``parsed``: what ``check_model`` of this text gave, when the caller has it (not read again)."""
    source, problems, data = parsed if parsed is not None else check_model(text, path)
    if source is None:
        return None, problems
    problems = _references(path, data, source, dialect, known)
    kept = sorted((source.usage.model_extra or {}) if source.usage else {})
    if (problems or kept) and not isinstance(data, CommentedMap):  # read fast: read again for the lines
        data = load_yaml(text)
        problems = _references(path, data, source, dialect, known)
    return source, problems + [_kept_key(path, data, "usage", key) for key in kept]


def errors(problems: list[Problem]) -> list[Problem]:
    """The problems that make a source invalid (infos do not)."""
    return [problem for problem in problems if problem.severity == "error"]


def _kept_key(path: str, data: Any, block: str, key: str) -> Problem:
    return Problem(path, line_of(data, (block, key)), f"{block}.{key}",
                   f"{block}.{key} is not a key khive writes in this machine-managed block; it is kept as written",
                   severity="info")


def _references(path: str, data: Any, source: Source, dialect: str | None, known: Mapping[str, Known]
                ) -> list[Problem]:
    parts = split_path(path)
    checker = _References(path, data, source, parts[0] if parts else "", dialect, known)
    if parts and parts[1] != source.name:
        checker.add(("name",), f"name {source.name!r} differs from the file name {parts[1]}.yaml",
                    f"rename the file to {source.name}.yaml or set name: {parts[1]}")
    checker.run()
    return checker.problems


def _safe_load(text: str) -> Any:
    try:
        return load_plain(text)
    except Exception:  # whatever it is, the round-trip reading says it with a line
        return None


class _Visible(Mapping[str, Known]):
    """The sources one source may refer to: its connection's, itself as it reads now. A view, not a copy: a
    bootstrap checks each of 10,000 sources against all the others."""

    def __init__(self, known: Mapping[str, Known], connection: str, own: Known):
        self._known, self._connection, self._own = known, connection, own

    def __getitem__(self, name: str) -> Known:
        if name == self._own.name:
            return self._own
        found = self._known[name]
        if found.connection != self._connection:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        yield self._own.name
        yield from (name for name, k in self._known.items() if k.connection == self._connection
                    and name != self._own.name)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _References:
    def __init__(self, path: str, data: CommentedMap, source: Source, connection: str, dialect: str | None,
                 known: Mapping[str, Known]):
        self.path, self.data, self.source, self.dialect = path, data, source, dialect
        self.connection = connection
        self.known = _Visible(known, connection, Known.of(connection, source))
        other = known.get(source.name)
        self.elsewhere = {source.name: other.connection} if other and other.connection != connection else {}
        self.problems: list[Problem] = []

    def add(self, loc: tuple[Any, ...], message: str, fix: str = "") -> None:
        self.problems.append(Problem(self.path, line_of(self.data, loc), _field(loc), message, fix))

    def run(self) -> None:
        source = self.source
        for other in self.elsewhere.values():
            self.add(("name",), f"source name {source.name!r} is already used by connection {other!r}; "
                     f"names are unique across the project (the index and wiki links use sl:<name>)",
                     f"rename it, e.g. {self.connection}_{source.name}")
        if source.sql is not None:
            self.sql(("sql",), source.sql, "query")
        for i, column in enumerate(source.columns):
            if column.expr:
                self.sql(("columns", i, "expr"), column.expr, "expression")
        columns = {c.name for c in source.columns}
        for i, measure in enumerate(source.measures):
            if measure.name in columns:
                self.add(("measures", i, "name"), f"measure {measure.name!r} has the name of a column",
                         "give the measure its own name, e.g. " + f"{measure.name}_total")
            if measure.filter:
                self.sql(("measures", i, "filter"), measure.filter, "predicate")
            if measure.agg == "derived" and measure.expr:
                self.derived(i, measure)
            elif measure.expr:
                self.sql(("measures", i, "expr"), measure.expr, "expression")
        for i, segment in enumerate(source.segments):
            self.sql(("segments", i, "filter"), segment.filter, "predicate")
        for i, join in enumerate(source.joins):
            self.join(i, join)
        self.cycles()

    def sql(self, loc: tuple[Any, ...], text: str, kind: str) -> None:
        problem = sql_problem(text, self.dialect, kind)
        if problem:
            self.add(loc, f"{_KIND_WORDS[kind]} does not parse ({self.dialect or 'generic'} SQL): {problem}",
                     "fix the SQL" + (", e.g. status = 'paid'" if kind == "predicate" else ""))

    def join(self, i: int, join: Join) -> None:
        target = self.known.get(join.to)
        if target is None:
            names = sorted(self.known)
            self.add(("joins", i, "to"), f"join to unknown source {join.to!r} in connection {self.connection!r}",
                     _choose(join.to, names, f"create {self.connection}/{join.to}.yaml or join one of"))
        for k, key in enumerate(join.on):
            if self.source.column(key.from_) is None:
                self.add(("joins", i, "on", k, "from"),
                         f"join column {key.from_!r} is not a declared column of {self.source.name!r}",
                         _choose(key.from_, [c.name for c in self.source.columns], "declare it under columns: or use"))
            if target is not None and key.to not in target.columns:
                self.add(("joins", i, "on", k, "to"),
                         f"join column {key.to!r} is not a declared column of {join.to!r}",
                         _choose(key.to, sorted(target.columns), f"declare it under columns: of {join.to} or use"))

    def derived(self, i: int, measure: Measure) -> None:
        assert measure.expr is not None
        try:
            tree = sqlglot.parse_one(measure.expr, read=self.dialect)
        except SqlglotError as exc:
            self.add(("measures", i, "expr"), f"derived expression does not parse: {_first_error(exc, 0)}",
                     "write arithmetic over measure names, e.g. revenue / order_count")
            return
        own = {m.name for m in self.source.measures}
        for ref in tree.find_all(exp.Column):
            owner, name = (ref.table or None), ref.name
            if owner is not None and owner not in self.known:
                self.add(("measures", i, "expr"), f"derived measure {measure.name!r} refers to unknown source "
                         f"{owner!r}", _choose(owner, sorted(self.known), "use one of"))
                continue
            pool = own if owner is None else set(self.known[owner].measures)
            if name not in pool:
                where = owner or self.source.name
                self.add(("measures", i, "expr"), f"derived measure {measure.name!r} refers to unknown measure "
                         f"{name!r} of source {where!r}", _choose(name, sorted(pool - {measure.name}), "use one of"))

    def cycles(self) -> None:
        derived = {m.name: m for m in self.source.measures if m.agg == "derived" and m.expr}
        graph: dict[str, set[str]] = {}
        for name, measure in derived.items():
            try:
                tree = sqlglot.parse_one(measure.expr or "", read=self.dialect)
            except SqlglotError:
                continue
            graph[name] = {c.name for c in tree.find_all(exp.Column) if not c.table and c.name in derived}
        for start in graph:
            if _reaches(graph, start, start):
                index = next(i for i, m in enumerate(self.source.measures) if m.name == start)
                self.add(("measures", index, "expr"), f"derived measure {start!r} depends on itself",
                         "break the cycle: a derived measure may only use other measures")


_KIND_WORDS = {"predicate": "filter", "expression": "expression", "query": "sql"}


def _reaches(graph: Mapping[str, set[str]], start: str, goal: str) -> bool:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


@lru_cache(maxsize=8192)
def sql_problem(text: str, dialect: str | None, kind: str) -> str | None:
    """Why ``text`` is not one SQL predicate / expression / query in ``dialect``; None if it is. Memoised: the
    same expressions (``amount``, ``unit_price * quantity``) recur across thousands of generated sources."""
    wrapper = _WRAPPERS[kind]
    try:
        statements = [s for s in sqlglot.parse(wrapper + text, read=dialect) if s is not None]
    except SqlglotError as exc:
        return _first_error(exc, len(wrapper))
    if len(statements) != 1:
        return f"holds {len(statements)} statements; write one {_KIND_WORDS[kind]}"
    if kind == "query" and not isinstance(statements[0], exp.Query):
        return "is not a SELECT"
    return None


def _first_error(exc: SqlglotError, offset: int) -> str:
    if isinstance(exc, ParseError) and exc.errors:
        error = exc.errors[0]
        column = error.get("col")
        where = f" at column {max(1, int(column) - offset)}" if isinstance(column, int) else ""
        return f"{error.get('description')}{where}"
    return str(exc).splitlines()[0]


def _choose(value: str, options: Iterable[str], lead: str) -> str:
    options = list(options)
    close = difflib.get_close_matches(value, options, n=3, cutoff=0.5)
    shown = close or options[:8]
    if not shown:
        return lead.split(" or ")[0]
    return f"{lead} {', '.join(shown)}" + ("" if close or len(options) <= 8 else ", ...")


def _field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model_problem(path: str, data: CommentedMap, error: Mapping[str, Any]) -> Problem:
    loc = tuple(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    fix = ""
    if not loc:
        loc, fix = _locate(data, message)
    elif error["type"] == "extra_forbidden":
        model: type[BaseModel] = Source
        for part in loc[:-1]:
            if isinstance(part, str) and part in _NESTED:
                model = _NESTED[part]
        known = sorted(f.alias or name for name, f in model.model_fields.items())
        fix = f"remove {loc[-1]!r} or use one of: {', '.join(known)}"
    elif error["type"] == "missing":
        fix = f"add {loc[-1]}:"
    elif error["type"] == "literal_error":
        fix = f"use one of {error.get('ctx', {}).get('expected', '')}"
    elif "needs an expr" in message:
        fix = "add expr: (the SQL to aggregate), or use agg: count"
    elif "; fix: " in message:  # the model said what to do
        message, fix = message.split("; fix: ", 1)
    return Problem(path, line_of(data, loc), _field(loc), message, fix)


def _locate(data: CommentedMap, message: str) -> tuple[tuple[Any, ...], str]:
    """Where a source-level model error points (the model reports it without a location)."""
    grain = re.search(r"grain column\(s\) (.+?) of source", message)
    if grain:
        missing = [name.strip() for name in grain.group(1).split(",")]
        items = [str(item) for item in data.get("grain") or []]
        index = next((i for i, item in enumerate(items) if item in missing), None)
        return (("grain",) if index is None else ("grain", index)), \
            "declare the column(s) under columns: or remove them from grain:"
    if "table: or sql:" in message:
        key = "sql" if "sql" in data and "table" in data else "table"
        return ((key,) if key in data else ()), "keep exactly one of table: (schema.table) and sql: (a SELECT)"
    duplicate = re.search(r"declares (column|measure|segment)\(s\) ([A-Za-z0-9_]+)", message)
    if duplicate:
        key, name = duplicate.group(1) + "s", duplicate.group(2)
        indexes = [i for i, item in enumerate(data.get(key) or []) if isinstance(item, Mapping)
                   and item.get("name") == name]
        return ((key, indexes[-1]) if indexes else (key,)), "rename or remove the duplicate"
    return (), ""
