"""Snowflake through snowflake-connector-python (the optional extra ``khive[snowflake]``).

The connection's ``url: env:VAR`` holds ``snowflake://USER[:PASSWORD]@ACCOUNT[/DATABASE[/SCHEMA]]`` with
optional query parameters (``warehouse``, ``role``, ``authenticator``, ``private_key_file``, ...; see
``_PARAMETERS``). The session is opened with ``autocommit`` off (every statement's transaction is
rolled back), ``MULTI_STATEMENT_COUNT = 1`` (the service refuses a second statement), a ``QUERY_TAG``
of ``khive`` and ``STATEMENT_TIMEOUT_IN_SECONDS`` set to the statement's timeout, so Snowflake cancels
a statement that runs too long (error 630).

Values by the value rule: NUMBER with a scale arrives as Decimal (a string), VARIANT/OBJECT/ARRAY as
the JSON text the service sends (parsed here, numbers kept exact), BINARY as bytes, timestamps as
datetimes with their offset (``TIMESTAMP_NTZ`` without one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import snowflake.connector
from snowflake.connector import errors as sf_errors

from khive.connections.config import ConnectionConfig
from khive.connections.warehouse import Fetched
from khive.errors import ConfigError, KhiveError
from khive.values import Converter, Encoder, json_text

# query parameters of the url -> the connector's keyword (all strings; port is a number)
_PARAMETERS = {"warehouse": "warehouse", "role": "role", "schema": "schema", "database": "database",
               "authenticator": "authenticator", "private_key_file": "private_key_file",
               "private_key_file_pwd": "private_key_password", "private_key_password": "private_key_password",
               "token": "token", "host": "host", "port": "port", "protocol": "protocol",
               "application": "application"}
_JSON_TYPES = frozenset({5, 9, 10, 17})  # VARIANT, OBJECT, ARRAY, MAP: JSON text on the wire
_TYPE_NAMES = {0: "NUMBER", 1: "FLOAT", 2: "VARCHAR", 3: "DATE", 4: "TIMESTAMP", 5: "VARIANT", 6: "TIMESTAMP_LTZ",
               7: "TIMESTAMP_TZ", 8: "TIMESTAMP_NTZ", 9: "OBJECT", 10: "ARRAY", 11: "BINARY", 12: "TIME",
               13: "BOOLEAN", 14: "GEOGRAPHY", 15: "GEOMETRY", 16: "VECTOR", 17: "MAP"}
_TIMEOUT_ERRNO = 630  # "Statement reached its statement or warehouse timeout"
_ACCESS_ERRNOS = frozenset({3001, 3003, 3041})  # insufficient privileges (42501)
_URL_FIX = "snowflake://USER:PASSWORD@ACCOUNT/DATABASE?warehouse=WAREHOUSE&role=ROLE"


def _json(value: Any, _encoder: Encoder, _column: str) -> Any:
    return json_text(value) if isinstance(value, str) else _encoder.value(value, _column)


def connect_arguments(connection: str, url: str) -> dict[str, Any]:
    """The connector's keyword arguments from the connection's url (never echoes the password)."""
    parts = urlsplit(url)
    if parts.scheme != "snowflake" or not parts.hostname or not parts.username:
        raise ConfigError(f"connection {connection!r}: the url is not of the form {_URL_FIX}",
                          details={"field": f"connections.{connection}.url", "fix": _URL_FIX})
    arguments: dict[str, Any] = {"account": unquote(parts.hostname), "user": unquote(parts.username)}
    if parts.password:
        arguments["password"] = unquote(parts.password)
    path = [unquote(part) for part in parts.path.split("/") if part]
    for key, value in zip(("database", "schema"), path, strict=False):
        arguments[key] = value
    for key, value in parse_qsl(parts.query):
        target = _PARAMETERS.get(key.lower())
        if target is None:
            raise ConfigError(f"connection {connection!r}: the url's parameter {key!r} is not one khive passes on; "
                              f"known: {', '.join(sorted(_PARAMETERS))}",
                              details={"field": f"connections.{connection}.url", "fix": _URL_FIX})
        arguments[target] = int(value) if target == "port" and value.isdigit() else value
    return arguments


def _seconds(timeout_s: float) -> int:
    return max(1, math.ceil(timeout_s))


class SnowflakeSession:
    def __init__(self, connection: str, config: ConnectionConfig, secrets: Mapping[str, str]):
        self.connection = connection
        url = secrets.get("url")
        if not url:
            raise ConfigError(f"connection {connection!r}: a snowflake connection needs url: env:VAR ({_URL_FIX})",
                              details={"field": f"connections.{connection}.url", "fix": _URL_FIX})
        arguments = connect_arguments(connection, url)
        if config.database:
            arguments["database"] = config.database
        self.account = arguments["account"]
        self._timeout = _seconds(config.statement_timeout_s)
        try:
            self.conn = snowflake.connector.connect(
                **arguments, autocommit=False, login_timeout=30, request_timeout=max(60, self._timeout + 30),
                application="khive", client_session_keep_alive=False,
                enable_server_session_keep_alive_auto_detection=False,
                session_parameters={"QUERY_TAG": "khive", "MULTI_STATEMENT_COUNT": 1,
                                    "STATEMENT_TIMEOUT_IN_SECONDS": self._timeout})
        except sf_errors.Error as exc:
            reason = " ".join(str(exc.msg or exc).split())
            if arguments.get("password"):
                reason = reason.replace(arguments["password"], "***")
            raise KhiveError(f"connection {connection!r}: cannot log in to Snowflake account {self.account}: {reason}",
                             code="connection_failed",
                             details={"connection": connection, "account": self.account, "errno": exc.errno,
                                      "fix": "check the user, the password or key, and the account identifier "
                                             "(ORGNAME-ACCOUNTNAME) in the url"}) from None

    def _execute(self, sql: str, timeout_s: float, cursor: Any) -> None:
        seconds = _seconds(timeout_s)
        try:
            if seconds != self._timeout:  # a session parameter: set once, kept for the next statements
                cursor.execute(f"ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {seconds}")
                self._timeout = seconds
            cursor.execute(sql)
        except sf_errors.Error as exc:
            raise self._error(exc, timeout_s) from None

    def rows(self, sql: str, timeout_s: float) -> list[dict[str, Any]]:
        cursor = self.conn.cursor(snowflake.connector.DictCursor)
        try:
            self._execute(sql, timeout_s, cursor)
            found: list[dict[str, Any]] = list(cursor.fetchall())
            return found
        finally:
            self._end(cursor)

    def fetch(self, sql: str, *, limit: int, timeout_s: float) -> Fetched:
        cursor = self.conn.cursor()
        try:
            self._execute(sql, timeout_s, cursor)
            description = list(cursor.description or [])
            rows = list(cursor.fetchmany(limit + 1)) if description else []
        finally:
            self._end(cursor)
        converters: list[Converter | None] = [_json if item.type_code in _JSON_TYPES else None
                                              for item in description]
        columns = [{"name": item.name, "type": _TYPE_NAMES.get(item.type_code, str(item.type_code))}
                   for item in description]
        return Fetched(columns=columns, rows=rows, converters=converters)

    def _end(self, cursor: Any) -> None:
        try:
            cursor.close()
            self.conn.rollback()  # autocommit is off: nothing a statement did outlives it
        except sf_errors.Error:
            pass  # the connection is gone; the next statement reports it

    def close(self) -> None:
        try:
            self.conn.close()
        except sf_errors.Error:
            pass

    def _error(self, exc: sf_errors.Error, timeout_s: float) -> KhiveError:
        message = " ".join(str(exc.msg or exc).split())
        details = {"connection": self.connection, "errno": exc.errno, "sqlstate": exc.sqlstate}
        if exc.errno == _TIMEOUT_ERRNO:
            return KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r}): {message}",
                              code="statement_timeout", details={**details, "timeout_s": timeout_s})
        if exc.errno in _ACCESS_ERRNOS or exc.sqlstate == "42501":
            return KhiveError(f"connection {self.connection!r}: Snowflake denied access: {message}",
                              code="permission_denied", details=details)
        if isinstance(exc, sf_errors.OperationalError) or exc.sqlstate in ("08001", "08003", "08006"):
            return KhiveError(f"connection {self.connection!r} lost: {message}", code="connection_failed",
                              details=details)
        return KhiveError(f"connection {self.connection!r}: {message}", code="query_failed", details=details)
