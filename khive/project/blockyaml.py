"""A fast writer of plain data in the semantic-layer layout, byte for byte what ruamel's dump would write.

ruamel's round-trip dump (``semantic_layer_yaml``) walks a representer, a serializer and an event-driven
emitter per node: about 25 ms for a generated source, most of a first ``sl.bootstrap`` of thousands of tables
(ADR 0054). This writer covers the subset generated sources use: non-empty block mappings and sequences,
string keys that are plain identifiers, string values ruamel would write plain or single-quoted. It takes
ruamel's own decisions where they are subtle (``Emitter.analyze_scalar`` and the resolver choose the style,
memoised per string) and replays its line folding at 120 columns (``write_plain``, ``write_single_quoted``).
Anything else (a double-quoted or multi-line string, a number, an empty container) answers None, and the
caller dumps with ruamel: the bytes never depend on which writer ran (tests compare both on a corpus).
So does a plain string that ruamel folds lossily (a word too long for the line after a run of spaces: ruamel
breaks the line after the run, and reading it back gives one space): what this writer answers always reads
back as ``data``, so a caller may take the data for the parse of the text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.nodes import ScalarNode

from khive.project.yamldoc import semantic_layer_yaml

WIDTH = 120  # semantic_layer_yaml: width 120, indent(mapping=2, sequence=4, offset=2)
_STR_TAG = "tag:yaml.org,2002:str"
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_MEMO_LIMIT = 200_000
_RUNS = re.compile(r" +|[^ ]+")  # runs of spaces and the words between them


class _Unsupported(Exception):
    """A value outside the subset, or one ruamel writes lossily: the caller dumps with ruamel."""


class _Styles:
    """ruamel's style choice for a string in block context: "" plain, "'" single-quoted, None anything else."""

    def __init__(self) -> None:
        yaml = semantic_layer_yaml()  # the dumper's own emitter and resolver, so the settings are the same
        _, _, self._emitter = yaml.get_serializer_representer_emitter(io.StringIO(), None)
        self._resolver = yaml.resolver
        self._memo: dict[str, str | None] = {}

    def of(self, text: str) -> str | None:
        style = self._memo.get(text, "?")
        if style != "?":
            return style
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        style = self._memo[text] = self._choose(text)
        return style

    def _choose(self, text: str) -> str | None:
        """``Emitter.choose_scalar_style`` for a str node of an untagged document, outside flow context."""
        if not text:
            return None
        analysis = self._emitter.analyze_scalar(text)
        if analysis.multiline:
            return None
        if self._resolver.resolve(ScalarNode, text, (True, False)) == _STR_TAG and analysis.allow_block_plain:
            return ""
        if analysis.allow_double_quoted and "'" in text:
            return None  # double-quoted
        return "'" if analysis.allow_single_quoted else None


_STYLES: _Styles | None = None


def _styles() -> _Styles:
    global _STYLES
    if _STYLES is None:
        _STYLES = _Styles()
    return _STYLES


def dump_block(data: Mapping[str, Any]) -> str | None:
    """``data`` as ruamel's ``semantic_layer_yaml().dump`` writes it, or None when it is outside the subset."""
    writer = _Writer(_styles())
    try:
        writer.mapping(data, 0, inline=False)
    except _Unsupported:
        return None
    return "".join(writer.out) + "\n"


class _Writer:
    """The emitter state that matters for these documents: the column, and whether the last character
    written was whitespace (ruamel's ``whitespace``)."""

    def __init__(self, styles: _Styles) -> None:
        self.styles = styles
        self.out: list[str] = []
        self.column = 0
        self.whitespace = True

    def mapping(self, data: Mapping[str, Any], indent: int, *, inline: bool) -> None:
        """Keys at column ``indent``; ``inline``: the first key follows a sequence dash on its line."""
        if not data:
            raise _Unsupported
        for position, (key, value) in enumerate(data.items()):
            if not isinstance(key, str) or not _KEY_RE.match(key) or self.styles.of(key) != "":
                raise _Unsupported
            if position or not inline:
                self.newline(indent)
            else:
                self.pad(indent)
            self.write(key + ":")
            self.value(value, indent)

    def value(self, value: Any, indent: int) -> None:
        """A mapping value: a scalar after the colon, a collection on the next lines."""
        if isinstance(value, Mapping):
            self.mapping(value, indent + 2, inline=False)
        elif isinstance(value, list):
            self.sequence(value, indent + 2)
        else:
            self.scalar(value, indent + 2)

    def sequence(self, items: list[Any], dash: int) -> None:
        if not items:
            raise _Unsupported
        for item in items:
            self.newline(dash)
            self.write("-")
            if isinstance(item, Mapping):
                self.mapping(item, dash + 2, inline=True)
            elif isinstance(item, list):
                raise _Unsupported
            else:
                self.scalar(item, dash + 2)

    def scalar(self, value: Any, indent: int) -> None:
        if not isinstance(value, str):
            raise _Unsupported
        style = self.styles.of(value)
        if style is None:
            raise _Unsupported
        text = value if style == "" else "'" + value.replace("'", "''") + "'"
        lead = "" if self.whitespace else " "
        if self.column + len(lead) + len(text) <= WIDTH:  # on this line whole: nothing to fold
            self.write(lead + text)
        elif style == "":
            if "  " in value:  # folded, ruamel would lose the run: yamldoc's emitter quotes it, ruamel writes it
                raise _Unsupported
            self.plain(value, indent)
        else:
            self.single_quoted(value, indent)

    # -- ruamel's emitter, for the cases above --

    def write(self, data: str) -> None:
        self.out.append(data)
        self.column += len(data)
        self.whitespace = False

    def pad(self, indent: int) -> None:
        if self.column < indent:
            self.out.append(" " * (indent - self.column))
            self.column = indent
        self.whitespace = True

    def newline(self, indent: int) -> None:
        """``write_indent`` where a line has content: a line break, then the indentation."""
        if self.out:
            self.out.append("\n")
        self.column = 0
        self.pad(indent)

    def plain(self, text: str, indent: int) -> None:
        """``Emitter.write_plain`` (split): a single space reached at the width breaks the line, and a word that
        would cross the width starts a line of its own (after the space before it, as ruamel does)."""
        if not self.whitespace:
            self.write(" ")
        for run in _RUNS.findall(text):  # single spaces only (``scalar``)
            if run[0] == " ":
                if self.column >= WIDTH:
                    self.newline(indent)
                else:
                    self.write(run)
                continue
            if len(run) + self.column > WIDTH and self.column > indent:
                self.newline(indent)
            self.write(run)

    def single_quoted(self, text: str, indent: int) -> None:
        """``Emitter.write_single_quoted``: a single space between words past the width breaks the line;
        quotes are doubled."""
        self.write(" '" if not self.whitespace else "'")
        runs = _RUNS.findall(text)
        for index, run in enumerate(runs):
            if run[0] == " ":
                if len(run) == 1 and self.column > WIDTH and 0 < index < len(runs) - 1:
                    self.newline(indent)
                else:
                    self.write(run)
            else:
                self.write(run.replace("'", "''"))
        self.write("'")
