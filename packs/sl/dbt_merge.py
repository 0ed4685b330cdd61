"""Write imported sources as YAML, merging into files people may have edited.

Merge rule (re-import without ``overwrite``): the file wins. Elements are matched by name (joins by
target and keys); anything only in the file is kept, anything only in dbt is added, and for an
element in both the file's definition stands while dbt fills what the file leaves empty
(descriptions per origin, a measure's description, a column's values, the grain). Where the two
definitions differ the import reports drift instead of overwriting. The merged document is
patched into the loaded round-trip document (``store.apply``), so people's comments and key order
survive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

from khive.project.yamldoc import plain
from packs.sl.models import DESCRIPTION_PRIORITY, Column, Descriptions, Join, Measure, Source
from packs.sl.store import apply, dump_yaml, load_yaml, source_data, to_commented

T = TypeVar("T")


class SourceFileError(Exception):
    """An existing source file that is not valid YAML or not a valid source."""


def render(source: Source, header: str = "") -> str:
    """A new file: ``header`` (comment lines) and the source in the model's key order."""
    return header + dump_yaml(to_commented(_styled(source_data(source))))


def merge_text(existing: str, imported: Source) -> tuple[str, list[str]]:
    """The file's new text (the old text when nothing changed) and the drift between file and dbt."""
    try:
        document = load_yaml(existing)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise SourceFileError(f"invalid YAML{line}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(document, CommentedMap):
        raise SourceFileError("not a mapping of source fields")
    try:
        current = Source.model_validate(plain(document))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise SourceFileError(f"not a valid source: {where}: {first['msg']}") from None
    merged, drift = merge_sources(current, imported)
    if merged == current:
        return existing, drift
    apply(document, _styled(source_data(merged)), prune=False)  # merged holds all of the file: add and replace
    return dump_yaml(document), drift


def merge_sources(current: Source, imported: Source) -> tuple[Source, list[str]]:
    drift: list[str] = []
    if current.name != imported.name:
        drift.append(f"name: the file says {current.name}, dbt {imported.name}")
    if current.sql is not None or not same_table(current.table, imported.table):
        drift.append(f"table: the file reads {current.table or 'sql:'}, dbt {imported.table}")
    if current.grain and current.grain != imported.grain:
        drift.append(f"grain: the file has {current.grain}, dbt {imported.grain}")

    def column(old: Column, new: Column) -> Column:
        if (old.type, old.sql) != (new.type, new.sql):
            drift.append(f"column {old.name}: the file has {old.type} {old.sql}, dbt {new.type} {new.sql}")
        return old.model_copy(update={"descriptions": _descriptions(old.descriptions, new.descriptions),
                                      "values": old.values or new.values})

    def measure(old: Measure, new: Measure) -> Measure:
        if (old.agg, old.expr, old.filter) != (new.agg, new.expr, new.filter):
            drift.append(f"measure {old.name}: the file has {old.agg}({old.expr or ''})"
                         f"{' where ' + old.filter if old.filter else ''}, dbt {new.agg}({new.expr or ''})"
                         f"{' where ' + new.filter if new.filter else ''}")
        return old.model_copy(update={"description": old.description or new.description})

    merged = current.model_copy(update={
        "descriptions": _descriptions(current.descriptions, imported.descriptions),
        "grain": current.grain or imported.grain,
        "columns": _union(current.columns, imported.columns, lambda c: c.name, column),
        "measures": _union(current.measures, imported.measures, lambda m: m.name, measure),
        "joins": _union(current.joins, imported.joins, _join_key, lambda old, _new: old),
    })
    return Source.model_validate(merged.model_dump(by_alias=True)), drift


def same_table(current: str | None, imported: str | None) -> bool:
    """The same table, where dbt's ref('x') without a schema matches any schema's x."""
    if current is None or imported is None:
        return False
    left, right = current.lower(), imported.lower()
    return left == right or ("." not in right and left.rsplit(".", 1)[-1] == right)


def _descriptions(old: Descriptions, new: Descriptions) -> Descriptions:
    return Descriptions(**{origin: getattr(old, origin) or getattr(new, origin) for origin in DESCRIPTION_PRIORITY})


def _join_key(join: Join) -> tuple[str, tuple[tuple[str, str], ...]]:
    return join.to, tuple((key.from_, key.to) for key in join.on)


def _union(old: list[T], new: list[T], key: Callable[[T], Any], both: Callable[[T, T], T]) -> list[T]:
    incoming = {key(item): item for item in new}
    kept = [both(item, incoming[key(item)]) if key(item) in incoming else item for item in old]
    known = {key(item) for item in old}
    return kept + [item for item in new if key(item) not in known]


# -- YAML --

def _styled(value: Any) -> Any:
    """Multi-line strings (descriptions, CASE expressions) as literal blocks."""
    if isinstance(value, Mapping):
        return {key: _styled(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_styled(item) for item in value]
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return value
