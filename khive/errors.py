"""One exception root for khive; every error carries a stable machine-readable ``code``.

    KhiveError (code)
    ├── DslSyntaxError          parse_error: line, column, excerpt with caret, reason (lone-surrogate,
    │                           number-out-of-range, ... see docs/dsl.md)
    ├── ConfigError             config_error: file, line, fix
    ├── PackLoadError           pack_load_error: unknown pack, missing requirement
    ├── DaemonError             daemon_error; narrower codes: daemon_unavailable, daemon_connection_lost,
    │                           daemon_refused, daemon_running, daemon_stopping, frame_too_large, bad_frame
    ├── (shared services)       KhiveError(code=...) from khive/connections and khive/project:
    │                           connection_failed, query_failed, statement_timeout, read_only_violation,
    │                           invalid_path, invalid_encoding (a project file that is not UTF-8)
    ├── SqlRefused              sql_refused: the read-only SQL gate said no (details.gate_code)
    ├── PoolTimeout             pool_timeout: every driver of the connection stayed busy for the op's timeout
    ├── PoolClosed              pool_closed: the runtime is shutting down; the query did not start
    └── OpError                 raised inside an op; becomes that op's error envelope
        ├── InvalidArgs         invalid_args
        │   └── LimitExceeded   limit_exceeded: an input over a limit of khive.limits (names it and the fix)
        ├── UnknownVerb         unknown_verb
        ├── PermissionDenied    permission_denied
        ├── WriteConflict       write_conflict
        ├── RefError            ref_error ($prev path that does not exist)
        ├── ResultTooDeep       result_too_deep
        ├── NotFound            not_found (packs may use narrower codes)
        └── internal_error      OpError(code="internal_error"): a genuine bug, never bad input

Packs raise ``OpError`` (or a subclass, or ``OpError(code=...)``) and never let a bare
exception cross the dispatcher: anything else is reported as ``internal_error`` (the message names
the exception, never a traceback). A failure outside any op (the dispatcher, the daemon client, the
MCP server, the daemon's request path, the CLI) also becomes an envelope in which every op failed
with ``internal_error`` and ``details.stage`` (khive/failure.py), never a crash or a protocol error.

An error never carries a caller's value whole (ADR 0058, eighth session): raise sites quote values with
``quoted`` (a bounded repr that says the value's length), and every error's message and the text in its
details are bounded here, cut in the middle, so a message quoting a 100 KB argument still starts with what
it is about and ends with the fix.
"""

from __future__ import annotations

import re
from typing import Any

# Codes renamed to the one spelling (lower_snake), old spelling -> current. Audit trails written before a
# rename keep the old spelling; audit queries match both (ADR 0039).
LEGACY_CODES = {"parse-error": "parse_error"}


_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+\Z")


def wire_name(key: str) -> str:
    """``timeout_s`` -> ``timeoutS``: a snake_case name in camelCase; any other key (data, already camel) as is."""
    return re.sub(r"_([a-z0-9])", lambda match: match.group(1).upper(), key) if _SNAKE.match(key) else key


def spellings(code: str) -> tuple[str, ...]:
    """``code`` and every older spelling of it, for matching records written before a rename."""
    return (code, *(old for old, new in LEGACY_CODES.items() if new == code))


QUOTED_CHARS = 120  # of a caller's value quoted in a message
MESSAGE_CHARS = 2_000  # of an error's message; longer ones lose their middle
DETAIL_CHARS = 2_000  # of each text in an error's details


def quoted(value: object, limit: int = QUOTED_CHARS) -> str:
    """``repr(value)`` for an error message, at most ``limit`` characters and the value's length past that."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(value) if isinstance(value, str) else len(text):,} characters)"


def bounded(text: str, limit: int) -> str:
    """``text``, or its start and end with the middle left out when it is longer than ``limit``: the start says
    what the error is about, the end usually says the fix."""
    if len(text) <= limit:
        return text
    keep = max(1, (limit - 48) // 2)
    return f"{text[:keep]} ...({len(text) - 2 * keep:,} characters left out)... {text[-keep:]}"


def _bounded_details(value: Any) -> Any:
    if isinstance(value, str):
        return bounded(value, DETAIL_CHARS)
    if isinstance(value, dict):
        return {key: _bounded_details(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded_details(item) for item in value]
    return value


class KhiveError(Exception):
    code: str = "khive_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        message = bounded(message, MESSAGE_CHARS)
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The error as envelopes and the CLI show it: detail names in camelCase, like every key on the wire
        (ADR 0039); raise sites name them in Python's snake_case."""
        return {"code": self.code, "message": bounded(self.message, MESSAGE_CHARS),
                "details": {wire_name(key): _bounded_details(value) for key, value in self.details.items()}}


class DslSyntaxError(KhiveError):
    """A request text that is not valid DSL (or JSON form). Never raised for a valid request."""

    code = "parse_error"

    def __init__(self, message: str, *, reason: str, line: int, column: int, excerpt: str, hint: str = ""):
        details = {"reason": reason, "line": line, "column": column, "excerpt": excerpt}
        if hint:
            details["hint"] = hint
        super().__init__(message, details=details)
        self.reason = reason
        self.line = line
        self.column = column
        self.excerpt = excerpt
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.message} (line {self.line}, column {self.column}) [{self.reason}]\n{self.excerpt}"
        return f"{text}\nhint: {self.hint}" if self.hint else text


class ConfigError(KhiveError):
    code = "config_error"


class PackLoadError(KhiveError):
    code = "pack_load_error"


class DaemonError(KhiveError):
    """The warm daemon or its wire: not reachable, refused, lost a response, or got a bad frame."""

    code = "daemon_error"


class OpError(KhiveError):
    code = "op_error"


class InvalidArgs(OpError):
    code = "invalid_args"


class LimitExceeded(InvalidArgs):
    """An argument or document over one of ``khive.limits``; details say which limit and how to raise it."""

    code = "limit_exceeded"


class UnknownVerb(OpError):
    code = "unknown_verb"


class PermissionDenied(OpError):
    code = "permission_denied"


class WriteConflict(OpError):
    code = "write_conflict"


class RefError(OpError):
    code = "ref_error"


class ResultTooDeep(OpError):
    code = "result_too_deep"


class NotFound(OpError):
    code = "not_found"
