"""Helpers for ruamel round-trip documents: the layout of each project file family, where a node is (for
located errors), and plain copies.

Several packs write the same files (the scan and historic_sql write ``_schema`` shards; sl and
historic_sql write semantic-layer sources; wiki and historic_sql write wiki pages), so each family's dump settings live here, once: a writer
with other settings would reformat every line it did not mean to touch.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq


def schema_shard_yaml() -> YAML:
    """``_schema/<connection>/*.yaml``: block style, 120 columns."""
    yaml = YAML(typ="rt")
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
    yaml = YAML(typ="rt")
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
