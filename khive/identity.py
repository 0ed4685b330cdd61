"""Who is asking, as the operating system says (ADR 0032): never what a client calls itself.

On the local transports the principal is the user who owns the process: ``operator:<user>`` for the
khive CLI, ``agent:<user>`` for ``khive mcp`` (stdio), and the daemon derives the same from its
peer's uid (SO_PEERCRED). Over HTTP the principal comes from the bearer token only. A client's
self-declared name (MCP ``clientInfo.name``) is recorded in the audit as ``client``, for information.
"""

from __future__ import annotations

import os
import pwd

OPERATOR, AGENT = "operator", "agent"
MAX_CLIENT_CHARS = 200


def os_user(uid: int | None = None) -> str:
    """The login name of ``uid`` (default: this process's real uid); ``uid<N>`` when it has none."""
    number = os.getuid() if uid is None else uid
    try:
        return pwd.getpwuid(number).pw_name
    except KeyError:  # a container running an arbitrary uid
        return f"uid{number}"


def operator_principal(uid: int | None = None) -> str:
    return f"{OPERATOR}:{os_user(uid)}"


def agent_principal(uid: int | None = None) -> str:
    return f"{AGENT}:{os_user(uid)}"


def client_label(name: object) -> str:
    """A client's self-declared name as the audit keeps it: text, one line, bounded; never an identity."""
    if not isinstance(name, str):
        return ""
    flat = " ".join(name.split())
    return flat[:MAX_CLIENT_CHARS]
