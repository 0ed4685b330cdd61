"""PostgreSQL values by khive's value rule (khive/values.py), through loaders registered on the connection.

psycopg's own loaders turn ``numeric`` into Decimal, ``inet`` into ipaddress objects (which print
IPv4-mapped IPv6 differently from PostgreSQL), ``interval`` into timedelta (months lost) and refuse
infinity, BC and year-10000 dates. Each such type is read as the text PostgreSQL prints instead
(``SESSION_OPTIONS`` fix DateStyle ISO and IntervalStyle iso_8601) and turned into its JSON value
here. psycopg's array loaders load elements with these loaders, so ``numeric[]`` and ``date[]``
follow; arrays of types psycopg does not know (enums, composites, domains) are parsed by
``array_converter`` once the result's types are looked up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Loader
from psycopg.types.array import ArrayLoader

from khive.values import Converter, Encoder, json_text, stamp_text, time_text

SESSION_OPTIONS = "-c datestyle=ISO -c intervalstyle=iso_8601"
INVALID_OID = 0  # psycopg's fallback loader: types it does not know

# types whose text PostgreSQL prints is already their JSON value
_AS_PRINTED = ("numeric", "inet", "cidr", "uuid", "interval", "record", "int4range", "int8range", "numrange",
               "daterange", "tsrange", "tstzrange", "int4multirange", "int8multirange", "nummultirange",
               "datemultirange", "tsmultirange", "tstzmultirange")
_STAMPS = ("date", "timestamp", "timestamptz")
_TIMES = ("time", "timetz")
_JSON = ("json", "jsonb")
_TEXT = ("text", "varchar", "bpchar", "name", INVALID_OID)  # only replaced on SQL_ASCII databases


class _Text(Loader):
    """The value's text in the connection's encoding; bytes when it is not valid text."""

    def __init__(self, oid: int, context: AdaptContext | None = None):
        super().__init__(oid, context)
        codec = self.connection.info.encoding if self.connection is not None else "utf-8"
        self._codec = "utf-8" if codec == "ascii" else codec  # SQL_ASCII: whatever bytes were stored

    def load(self, data: Buffer) -> str | bytes:
        try:
            return str(data, self._codec)
        except UnicodeDecodeError:
            return bytes(data)


class _Converted(_Text):
    """The text, then ``convert`` (bytes that are not text are left to the value rule)."""

    convert: Callable[[str], Any] = staticmethod(str)

    def load(self, data: Buffer) -> Any:
        text = super().load(data)
        return self.convert(text) if isinstance(text, str) else text


class _Stamp(_Converted):
    convert = staticmethod(stamp_text)


class _Time(_Converted):
    convert = staticmethod(time_text)


class _Json(_Converted):
    convert = staticmethod(json_text)


def register_loaders(conn: psycopg.Connection[Any]) -> None:
    """Make every value this connection loads follow the rule (call once, right after connecting)."""
    adapters = conn.adapters
    for names, loader in ((_AS_PRINTED, _Text), (_STAMPS, _Stamp), (_TIMES, _Time), (_JSON, _Json)):
        for name in names:
            adapters.register_loader(name, loader)
    if conn.info.encoding == "ascii":  # SQL_ASCII: psycopg would hand text over as bytes
        for text_type in _TEXT:
            adapters.register_loader(text_type, _Text)


# ---- result types psycopg does not know ----------------------------------------------------------------------

TYPES_SQL = """
SELECT t.oid, pg_catalog.format_type(t.oid, NULL) AS name,
       CASE WHEN t.typcategory = 'A' THEN COALESCE(NULLIF(e.typbasetype, 0), t.typelem) END AS element,
       e.typdelim AS delimiter
FROM pg_catalog.pg_type AS t LEFT JOIN pg_catalog.pg_type AS e ON e.oid = t.typelem
WHERE t.oid = ANY(%s)
"""


@dataclass(frozen=True)
class PgType:
    name: str
    element: int | None = None  # arrays psycopg has no loader for: the element's (base) type
    delimiter: str = ","


def array_converter(conn: psycopg.Connection[Any], pg_type: PgType) -> Converter | None:
    """For an array of a type psycopg does not know (an enum, a composite, a domain): the array text
    parsed into nested lists, each element by its own loader (text for the unknown ones)."""
    if pg_type.element is None:
        return None
    loader_class = type("ArrayOfUnknownLoader", (ArrayLoader,),
                        {"base_oid": pg_type.element, "delimiter": pg_type.delimiter.encode()})
    loader = loader_class(INVALID_OID, conn)
    codec = conn.info.encoding if conn.info.encoding != "ascii" else "utf-8"

    def convert(value: Any, encoder: Encoder, column: str) -> Any:
        if isinstance(value, str):
            value = loader.load(value.encode(codec))
        return encoder.value(value, column)

    return convert
