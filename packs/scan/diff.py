"""What changed between two scans: tables and columns added, modified, deleted, unchanged.

Only structure counts (kind, comments, columns, keys); row estimates and samples move on every
scan and would drown the signal.
"""

from __future__ import annotations

from typing import Any

_COLUMN_KEYS = ("nativeType", "normalizedType", "nullable", "default", "primaryKey", "comment")


def _column_shape(column: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(column.get(key) for key in _COLUMN_KEYS)


def _table_shape(table: dict[str, Any]) -> tuple[Any, ...]:
    columns = tuple((c["name"], _column_shape(c)) for c in table.get("columns", []))
    keys = tuple(sorted(str(sorted(fk.items())) for fk in table.get("foreignKeys", [])))
    return table.get("kind"), table.get("comment"), columns, keys


def _same_shape(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whole columns and keys equal (most tables of a re-scan, compared in C) imply equal shapes;
    otherwise compare the shapes, which leave samples and descriptions out."""
    if (old.get("columns") == new.get("columns") and old.get("foreignKeys", []) == new.get("foreignKeys", [])
            and old.get("kind") == new.get("kind") and old.get("comment") == new.get("comment")):
        return True
    return _table_shape(old) == _table_shape(new)


def diff_runs(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> dict[str, Any]:
    tables: dict[str, Any] = {"added": [], "modified": [], "deleted": [], "unchanged": 0}
    columns: dict[str, Any] = {"added": [], "modified": [], "deleted": [], "unchanged": 0}
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old is None and new is not None:
            tables["added"].append(name)
            columns["added"].extend(f"{name}.{c['name']}" for c in new.get("columns", []))
            continue
        if new is None and old is not None:
            tables["deleted"].append(name)
            columns["deleted"].extend(f"{name}.{c['name']}" for c in old.get("columns", []))
            continue
        assert old is not None and new is not None
        if _same_shape(old, new):
            tables["unchanged"] += 1
            columns["unchanged"] += len(new.get("columns", []))
            continue
        tables["modified"].append(name)
        old_columns = {c["name"]: c for c in old.get("columns", [])}
        new_columns = {c["name"]: c for c in new.get("columns", [])}
        for column in sorted(old_columns.keys() | new_columns.keys()):
            if column not in old_columns:
                columns["added"].append(f"{name}.{column}")
            elif column not in new_columns:
                columns["deleted"].append(f"{name}.{column}")
            elif _column_shape(old_columns[column]) != _column_shape(new_columns[column]):
                columns["modified"].append(f"{name}.{column}")
            else:
                columns["unchanged"] += 1
    return {"tables": tables, "columns": columns}
