"""Helpers for ruamel documents: bounded loaders, the layout of each project file family, where a node
is (for located errors), and plain copies.

Every YAML document khive reads goes through a loader from here (``safe_yaml``, ``round_trip_yaml`` or a
file family's), which refuses a document over the current ``khive.limits`` while composing it, before
anything walks it: too many characters, too deep, too many aliases, or aliases that would expand to
too many nodes (a 400-byte "billion laughs" document is refused after a few hundred nodes instead of
being expanded into millions). The refusal is a ``YamlLimitError``: a ruamel ``MarkedYAMLError`` (so
code that reports invalid YAML reports it, with its line) and a ``LimitExceeded`` (so anywhere else it
reaches the agent as the typed ``limit_exceeded`` error).

Several packs write the same files (the scan and historic_sql write ``_schema`` shards; sl and
historic_sql write semantic-layer sources; wiki and historic_sql write wiki pages), so each family's
dump settings live here, once: a writer with other settings would reformat every line it did not
mean to touch.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer
from ruamel.yaml.emitter import RoundTripEmitter
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent

from khive import limits
from khive.errors import LimitExceeded
from khive.project.plainyaml import load_plain


class YamlLimitError(MarkedYAMLError, LimitExceeded):
    """A YAML document over one of ``khive.limits``: invalid YAML to a validator, ``limit_exceeded`` elsewhere."""

    def __init__(self, text: str, details: dict[str, Any], mark: Any = None):
        MarkedYAMLError.__init__(self, problem=text, problem_mark=mark)
        where = {"line": mark.line + 1} if mark is not None else {}
        LimitExceeded.__init__(self, f"{text} (line {mark.line + 1})" if mark is not None else text,
                               details={**details, **where})

    @classmethod
    def over(cls, name: str, actual: int, what: str, unit: str, mark: Any = None) -> YamlLimitError:
        return cls(limits.message(name, actual, what, unit), limits.details(name, actual), mark)


class _BoundedComposer(Composer):
    """ruamel's composer with the current limits checked at each node, before the node is built."""

    def compose_document(self) -> Any:
        self._limits = limits.current()
        self._aliases = 0
        self._expanded = 0  # nodes the aliases add when a consumer walks the document as a tree
        self._nesting = 0
        self._open: set[Any] = set()  # anchors of the collections being composed: an alias to one recurses
        self._sizes: dict[int, int] = {}
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self._open:
                raise YamlLimitError(f"alias *{event.anchor} refers to a collection that contains it, so it "
                                     "would expand without end; refer to a finished anchor instead",
                                     {"limit": "yaml_alias_nodes", "fix": "remove the recursive alias"},
                                     event.start_mark)
            self._aliases += 1
            if self._aliases > self._limits.yaml_aliases:
                raise YamlLimitError.over("yaml_aliases", self._aliases, "the document", "aliases",
                                          event.start_mark)
            node = super().compose_node(parent, index)
            self._expanded += self._size(node)
            if self._expanded > self._limits.yaml_alias_nodes:
                raise YamlLimitError.over("yaml_alias_nodes", self._expanded, "the document",
                                          "nodes added by expanding its aliases", event.start_mark)
            return node
        if not isinstance(event, MappingStartEvent | SequenceStartEvent):
            return super().compose_node(parent, index)
        self._nesting += 1
        if self._nesting > self._limits.yaml_depth:
            raise YamlLimitError.over("yaml_depth", self._nesting, "the document", "levels of nesting",
                                      event.start_mark)
        if event.anchor is not None:
            self._open.add(event.anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._nesting -= 1
            self._open.discard(event.anchor)

    def _size(self, node: Any) -> int:
        """Nodes of ``node`` as a tree (shared subtrees counted each time), memoised per node."""
        known = self._sizes.get(id(node))
        if known is not None:
            return known
        value = node.value
        if isinstance(value, list):
            size = 1 + sum(self._size(item) if not isinstance(item, tuple) else
                           self._size(item[0]) + self._size(item[1]) for item in value)
        else:
            size = 1
        self._sizes[id(node)] = size
        return size


class _SpacesKeptEmitter(RoundTripEmitter):
    """ruamel folds a plain scalar after a run of spaces when the next word would cross the width, and read back
    the run is one space ("two  spaces" -> "two spaces"): a description or sample value that changes on its
    way through a file. A plain scalar with such a run that does not fit on its line is quoted instead: quoted
    scalars fold at single spaces only. Every other scalar is written as ruamel writes it."""

    def choose_scalar_style(self) -> Any:
        style = super().choose_scalar_style()
        text = self.event.value
        if style != "" or "  " not in text or self.simple_key_context:
            return style
        if self.column + (0 if self.whitespace else 1) + len(text) <= self.best_width:
            return style  # on its line whole: nothing is folded
        if "'" not in text and self.analysis.allow_single_quoted:
            return "'"
        return '"'


class _BoundedYAML(YAML):
    """A ruamel YAML whose loads refuse documents over the current limits (see the module docstring), and whose
    round-trip dumps keep runs of spaces (``_SpacesKeptEmitter``)."""

    def __init__(self, *, typ: str) -> None:
        super().__init__(typ=typ, pure=True)  # pure: the C parser would compose without our checks
        self.Composer = _BoundedComposer
        if typ == "rt":
            self.Emitter = _SpacesKeptEmitter

    def load(self, stream: Any) -> Any:
        return super().load(_checked_text(stream))

    def load_all(self, stream: Any) -> Any:
        return super().load_all(_checked_text(stream))


def _checked_text(stream: Any) -> str:
    if isinstance(stream, Path):
        stream = stream.read_text(encoding="utf-8")
    elif not isinstance(stream, str):
        stream = stream.read()
        if isinstance(stream, bytes):
            stream = stream.decode("utf-8")
    if len(stream) > limits.current().yaml_chars:
        raise YamlLimitError.over("yaml_chars", len(stream), "the YAML document", "characters")
    return str(stream)


def safe_yaml() -> YAML:
    """A loader of plain Python values (dicts, lists, scalars), bounded by the current limits."""
    return _BoundedYAML(typ="safe")


def round_trip_yaml() -> YAML:
    """A round-trip loader and dumper (comments and key order kept), bounded by the current limits."""
    return _BoundedYAML(typ="rt")


def quick_load(text: str) -> Any:
    """Plain data of ``text`` read by libyaml's parser (``ruamel.yaml.clib``; a tenth of the pure loaders' time),
    or None when it cannot be read that way. For a caller that only decides from plain values whether it needs
    the document at all (a round-trip load of 10,000 files takes minutes): whatever it then reads, it reads
    through a bounded loader. Text over the characters limit is refused here too; aliases are not expanded."""
    if len(text) > limits.current().yaml_chars:
        return None
    try:
        return load_plain(text)
    except Exception:  # any failure: the caller reads it the bounded way and reports that
        return None


def schema_shard_yaml() -> YAML:
    """``_schema/<connection>/*.yaml``: block style, 120 columns."""
    yaml = round_trip_yaml()
    yaml.default_flow_style = False
    yaml.width = 120
    return yaml


def semantic_layer_yaml() -> YAML:
    """``semantic-layer/<connection>/*.yaml``: block style, 120 columns, indented sequences, quotes as written."""
    yaml = schema_shard_yaml()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    return yaml


def dump_frontmatter(data: Mapping[str, Any]) -> str:
    """A wiki page's frontmatter block (between the ``---`` fences): block style, ruamel's defaults."""
    yaml = round_trip_yaml()
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(data, stream)
    return stream.getvalue()


def line_of(data: Any, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest node of ``loc`` present in the round-trip document."""
    line = 1
    node = data
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def plain(value: Any) -> Any:
    """Plain dicts and lists of a ruamel document (for comparisons and pydantic)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
