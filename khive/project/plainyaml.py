"""Plain data of a YAML text read by libyaml, with the per-scalar Python work cut down (ADR 0054).

``YAML(typ="safe")`` with ``ruamel.yaml.clib`` parses and composes in C, but resolves every scalar's tag through
ruamel's versioned resolver and builds every value through its constructor, both in Python: at 10,000 tables
that is most of the time a bootstrap spends reading shards and sources. Here the resolver's answers are memoised
(a scalar's tag depends only on its kind, its text and how it was written, for a document without a ``%YAML``
directive) and strings, mappings and sequences are built straight from the composed nodes; every other scalar
(numbers, booleans, nulls, timestamps) still goes through ruamel's constructor. A document with anything else
(merge keys, non-string or duplicate keys, sets, aliases of collections, a directive) is read by ruamel's safe
loader as before, so the data is the same whichever path ran (a test compares both).
"""

from __future__ import annotations

import threading
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.resolver import VersionedResolver

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MEMO_LIMIT = 200_000
_MEMO: dict[tuple[Any, str, Any], Any] = {}  # (node kind, text, implicit) -> tag, shared by every load
_LOADERS = threading.local()


class _Different(Exception):
    """Not a document of plain mappings, sequences and scalars with string keys: ruamel's loader reads it."""


class _MemoResolver(VersionedResolver):
    """ruamel's resolver with its scalar answers memoised (the version is the default: no directive)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if not isinstance(value, str):
            return super().resolve(kind, value, implicit)
        key = (kind, value, implicit)
        tag = _MEMO.get(key)
        if tag is None:
            if len(_MEMO) > _MEMO_LIMIT:
                _MEMO.clear()
            tag = _MEMO[key] = super().resolve(kind, value, implicit)
        return tag


def load_plain(text: str) -> Any:
    """Plain dicts, lists and scalars of ``text`` (libyaml's parser; raises what ruamel's safe loader raises)."""
    if "%YAML" in text:
        return YAML(typ="safe").load(text)
    yaml = getattr(_LOADERS, "yaml", None)
    if yaml is None:  # one per thread: making one looks for plug-ins on disk, and a load is not thread-safe
        yaml = _LOADERS.yaml = YAML(typ="safe")
        yaml.Resolver = _MemoResolver
    node = yaml.compose(text)
    if node is None:
        return None
    try:
        return _build(node, yaml.constructor, set())
    except _Different:
        return YAML(typ="safe").load(text)


def _build(node: Any, constructor: Any, seen: set[int]) -> Any:
    tag = node.ctag.suffix
    if tag == _STR:
        return node.value
    if tag not in (_MAP, _SEQ):
        if isinstance(node.value, list):
            raise _Different  # a set, an omap, pairs: built in stages by ruamel's constructor
        return constructor.construct_object(node)
    if id(node) in seen:
        raise _Different  # an alias to a collection: ruamel shares the object (a copy could be huge, or endless)
    seen.add(id(node))
    if tag == _SEQ:
        return [_build(item, constructor, seen) for item in node.value]
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if key_node.ctag.suffix != _STR or key_node.value in out:
            raise _Different  # a merge key, a non-string key, or a duplicate (ruamel refuses it)
        out[key_node.value] = _build(value_node, constructor, seen)
    return out
