"""A source's ``table:`` as SQL: what sl.bootstrap writes for a scanned table, and which scanned table a
written ``table:`` names (ADR 0058, eighth session).

The compiler reads ``table:`` as a table reference in the connection's dialect, so people write
``sales.orders``. A catalog name that would not read back as itself is written quoted: mixed case where the
dialect folds unquoted names (PostgreSQL to lower case, Snowflake to upper case: ``public.CamelT`` would
read the table ``camelt``), and dots, quotes or spaces inside a part.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

_FOLDS_TO = {"postgres": str.lower, "snowflake": str.upper}


def folds(name: str, dialect: str) -> bool:
    """Whether ``dialect`` reads ``name`` unquoted as another name (it folds the case of unquoted names)."""
    fold = _FOLDS_TO.get(dialect)
    return fold is not None and fold(name) != name


def parse_table(table: str, dialect: str) -> exp.Table | None:
    """``table`` read as a table reference in ``dialect``, or None when it is not one."""
    try:
        return exp.to_table(table, dialect=dialect)
    except (SqlglotError, ValueError):  # sqlglot raises ValueError for some dotted texts it cannot split
        return None


def table_sql(db: str, name: str, dialect: str) -> str:
    """The ``table:`` that reads back as the catalog's ``db``.``name``: ``db.name`` when it does, else quoted."""
    plain = f"{db}.{name}"
    read = parse_table(plain, dialect)
    if read is not None and (read.catalog, read.db, read.name) == ("", db, name) \
            and not folds(db, dialect) and not folds(name, dialect):
        return plain
    return exp.table_(name, db=db, quoted=True).sql(dialect=dialect)


def table_key(table: str, dialect: str = "") -> str:
    """``[catalog.]db.name`` of a ``table:``, without its quotes, as scans name tables (the text itself when
    it does not read as a table reference: a source written before quoting, which the compiler refuses)."""
    read = parse_table(table, dialect)
    if read is None or not read.name:
        return table
    return ".".join(part for part in (read.catalog, read.db, read.name) if part)
