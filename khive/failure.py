"""Envelopes for requests that failed as a whole: every op failed with the same typed error.

Used where no per-op outcome exists: the daemon client when the daemon cannot answer, and the
composition roots (CLI, MCP server, daemon) when something outside any op fails, so a caller
always gets an envelope rather than a crash, a traceback or a bare protocol error. Kept free of
heavy imports: the forwarding CLI uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

INTERNAL_ERROR = "internal_error"
_MESSAGE_LIMIT = 300


def failed_envelope(verbs: Sequence[str], request_id: str, code: str, message: str, /,
                    **details: Any) -> dict[str, Any]:
    """Every op failed with the same error, shaped like dispatch's envelope."""
    error = {"code": code, "message": message, "details": details}
    results = [{"ok": False, "verb": verb, "error": error} for verb in verbs]
    return {"results": results, "summary": {"total": len(results), "succeeded": 0, "failed": len(results),
                                            "aborted": 0}, "status": "failed", "requestId": request_id}


STAGES = {"cli": "the khive CLI", "mcp_server": "the MCP server", "daemon": "the daemon"}


def unexpected_failure(verbs: Sequence[str], request_id: str, stage: str, exc: BaseException) -> dict[str, Any]:
    """The envelope for a bug outside any op (``stage``: one of ``STAGES``): it says that ops may have run,
    and where to look, without a traceback."""
    where = STAGES.get(stage, stage)
    from khive.redact import BUILTIN  # here: compiling its rules would slow every forwarding CLI's start

    kind = type(exc).__name__
    text = printable(BUILTIN.text(str(exc)))  # an exception can quote SQL and its literals (ADR 0035)
    shown = f"{kind}: {text}" if text else kind
    look = f"; `khive audit` shows what ran for request {request_id}" if request_id else ""
    return failed_envelope(verbs, request_id, INTERNAL_ERROR,
                           f"the request failed in {where}, outside any op ({shown}); some of its ops may have "
                           f"run{look}", stage=stage, exception=kind)


def printable(text: str) -> str:
    """``text`` shortened and made encodable as UTF-8 (an exception message may quote a lone surrogate)."""
    text = text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
