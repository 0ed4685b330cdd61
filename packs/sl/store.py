"""Source files ``semantic-layer/<connection>/<name>.yaml``: paths, round-trip YAML, structural merges.

Files are read and written with ruamel's round-trip mode, and every edit is a structural merge into
the loaded document, never a re-dump of a model: comments, key order and the untouched parts of a
file survive ``sl.write`` and ``sl.bootstrap``. Items of ``columns``, ``measures`` and ``segments``
are matched by ``name`` and joins by ``to`` and ``role``, so a comment on an item stays with that item.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from khive.project.blockyaml import dump_block
from khive.project.store import FileStore
from khive.project.yamldoc import plain, semantic_layer_yaml
from packs.sl.models import NAME_RE, Source

SL_ROOT = "semantic-layer"
NAMED_LISTS = {"columns": "name", "measures": "name", "segments": "name", "joins": "to"}


def source_path(connection: str, name: str) -> str:
    return f"{SL_ROOT}/{connection}/{name}.yaml"


def split_path(path: str) -> tuple[str, str] | None:
    """``semantic-layer/<connection>/<name>.yaml`` -> (connection, name); None for any other path."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != SL_ROOT or not parts[2].endswith(".yaml"):
        return None
    return parts[1], parts[2][: -len(".yaml")]


def write_key(connection: str, name: str) -> str:
    return f"sl:{connection}/{name}"


def load_yaml(text: str) -> Any:
    """The round-trip document of ``text`` (raises ruamel's MarkedYAMLError on bad syntax)."""
    return semantic_layer_yaml().load(text)


def dump_yaml(data: Any) -> str:
    stream = io.StringIO()
    semantic_layer_yaml().dump(data, stream)
    return stream.getvalue()


def dump_data(data: Mapping[str, Any]) -> str:
    """A new file's text from plain data (see ``dump_new``)."""
    return dump_new(data)[0]


def dump_new(data: Mapping[str, Any]) -> tuple[str, bool]:
    """(a new file's text from plain data, whether it reads back as ``data``): the fast block writer, or ruamel's
    dump for what it does not cover, the same bytes either way (``khive.project.blockyaml``). Only the fast
    writer's text is known to read back as the data (ruamel folds some runs of spaces into one)."""
    text = dump_block(data)
    return (text, True) if text is not None else (dump_yaml(to_commented(data)), False)


def source_data(source: Source) -> dict[str, Any]:
    """A source as a mapping to write: aliases, defaults filled in, no nulls, no empty containers."""
    return _prune(source.model_dump(mode="json", by_alias=True, exclude_none=True))  # type: ignore[no-any-return]


def file_data(source: Source) -> dict[str, Any]:
    """A source as its file holds it: only the keys the file sets (no defaults filled in).

    Writing this back (``sl.write(source=...)``) therefore changes nothing but what the caller edited.
    """
    dumped = source.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return _prune(dumped)  # type: ignore[no-any-return]


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {key: _prune(item) for key, item in value.items()}
        return {key: item for key, item in out.items() if item not in ({}, [], None)}
    if isinstance(value, list):
        return [_prune(item) for item in value]
    return value


def to_commented(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = CommentedMap()
        for key, item in value.items():
            out[key] = to_commented(item)
        return out
    if isinstance(value, list):
        return CommentedSeq(to_commented(item) for item in value)
    return value


def apply(target: CommentedMap, new: Mapping[str, Any], *, prune: bool) -> CommentedMap:
    """Merge ``new`` into ``target`` in place, keeping comments and order of what is unchanged.

    ``prune=True`` makes ``target`` equal to ``new`` (keys and list items missing from ``new`` go);
    ``prune=False`` only adds and replaces (a patch).
    """
    for key, value in new.items():
        current = target.get(key)
        if isinstance(value, Mapping) and isinstance(current, CommentedMap):
            apply(current, value, prune=prune)
        elif isinstance(value, list) and isinstance(current, CommentedSeq) and key in NAMED_LISTS:
            _apply_named(current, value, NAMED_LISTS[key], prune=prune)
        elif isinstance(value, list) and isinstance(current, CommentedSeq) and plain(current) == plain(value):
            continue
        elif key not in target or plain(current) != plain(value):
            target[key] = to_commented(value)
    if prune:
        for key in [k for k in target if k not in new]:
            del target[key]
    return target


def item_key(item: Mapping[str, Any], identity: str) -> str:
    """What identifies a list item: its name, or a join's target and role (a source may join another twice)."""
    key = str(item.get(identity))
    return f"{key} as {item['role']}" if identity == "to" and item.get("role") else key


def _apply_named(current: CommentedSeq, items: list[Any], identity: str, *, prune: bool) -> None:
    existing = {item_key(item, identity): item for item in current if isinstance(item, CommentedMap)}
    ordered: list[Any] = []  # in the order of ``items``
    added: list[Any] = []
    for item in items:
        match = existing.pop(item_key(item, identity), None) if isinstance(item, Mapping) else None
        if match is not None and isinstance(item, Mapping):
            ordered.append(apply(match, item, prune=prune))
        else:
            fresh = to_commented(item)
            ordered.append(fresh)
            added.append(fresh)
    # replace: exactly the new items, in their order; patch: every old item where it was, new ones last
    _replace_items(current, ordered if prune else [*current, *added])


def _replace_items(seq: CommentedSeq, items: list[Any]) -> None:
    """Set the items of ``seq`` keeping the comments attached to the items that stay at their index."""
    if [id(item) for item in seq] == [id(item) for item in items]:
        return
    comments = {id(item): seq.ca.items.get(index) for index, item in enumerate(seq)}
    seq.ca.items.clear()
    del seq[:]
    for index, item in enumerate(items):
        seq.append(item)
        comment = comments.get(id(item))
        if comment is not None:
            seq.ca.items[index] = comment


def list_sources(files: FileStore, connection: str | None = None) -> list[tuple[str, str, str]]:
    """(connection, name, path) of every source file, or of one connection's."""
    prefix = f"{SL_ROOT}/{connection}/" if connection else f"{SL_ROOT}/"
    out = []
    for path in files.list(prefix, suffix=".yaml"):
        parts = split_path(path)
        if parts is not None and NAME_RE.match(parts[1]):
            out.append((parts[0], parts[1], path))
    return out
