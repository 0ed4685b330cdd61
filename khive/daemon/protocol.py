"""The daemon wire protocol (ADR 0020): message shapes and the identity a client and a daemon compare.

    client -> daemon                                 daemon -> client
    {"type": "hello", "protocol", "version",         {"type": "hello", "protocol", "version", "config_id",
     "config_id"}                                      "runtime_config_id", "pid", "project", "writes"}
    {"type": "request", "id", "request" | "ops",      {"type": "progress", "done", "total", "message"} ...
     "presentation", "principal", "transport",        {"type": "sample", "seq", "key", "system", "prompt",
     "user", "sampling"?, "client"?}                   "max_tokens"} (MCP sampling, answered by the caller)
    {"type": "sampled", "seq", "text" | "error"}
                                                     {"type": "envelope", "envelope"}
    {"type": "status"}                               {"type": "status", ...}
    {"type": "stop"}                                 {"type": "stopping", "pid"}
                                                     {"type": "error", "code", "message", "details"}

A request carries ``request``, the request its client parsed, in the JSON form's data
(``khive.dsl.jsonform.render``), so the daemon never parses it again (ADR 0044); ``ops``, the
request text, is for raw clients of the socket, and the daemon parses that itself.

``config_id`` on the wire is the identity key below, which a client computes without loading
any pack: the project path, the bytes of khive.yaml, the values of the env: variables it refers
to (hashed; from the environment, else the project's .khive/env), pack selection variables, the
khive version and the installed-packages stamp.
"""

from __future__ import annotations

import hashlib
import os
import re
import site
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from khive import __version__
from khive.dsl import jsonform
from khive.dsl.nodes import Request
from khive.project.envfile import with_env_file
from khive.project.locate import CONFIG_NAME

PROTOCOL = 2  # 2: a request frame carries the parsed request (ADR 0044)
IDENTITY_ENV = ("KHIVE_PACKS", "KHIVE_EXTRA_PACKS", "PYTHONPATH")
_ENV_REF = re.compile(rb"env:([A-Za-z_][A-Za-z0-9_]*)")


def identity_key(project: Path, env: Mapping[str, str]) -> str:
    """What must be equal for a daemon to answer exactly as this process would."""
    digest = hashlib.sha256()

    def part(label: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else value
        digest.update(f"{label}:{len(data)}:".encode() + data)

    config = (project / CONFIG_NAME).read_bytes()
    env = with_env_file(project, env)  # as open_runtime sees it: a changed .khive/env is another configuration
    part("protocol", str(PROTOCOL))
    part("version", __version__)
    part("python", f"{sys.prefix} {sys.version}")  # the environment, however its interpreter was named
    part("project", str(project.resolve()))
    part("config", config)
    for name in IDENTITY_ENV:
        part(f"env:{name}", env.get(name, ""))
    for ref in sorted(_env_refs(config)):
        value = env.get(ref)
        part(f"ref:{ref}", "\0unset" if value is None else hashlib.sha256(value.encode()).hexdigest())
    for directory in _site_dirs():
        try:
            part(f"site:{directory}", str(os.stat(directory).st_mtime_ns))
        except OSError:
            part(f"site:{directory}", "missing")
    return digest.hexdigest()[:16]


def _env_refs(config: bytes) -> set[str]:
    """The env: variables khive.yaml's values name. A ref in a comment is not one: the starter's commented
    ``env:KHIVE_HTTP_TOKEN`` made a daemon spawned by ``khive serve`` (token set) another configuration than
    every ``khive mcp`` and CLI client without the token, which then dispatched locally, each on its own."""
    return {match.decode() for line in config.splitlines() for match in _ENV_REF.findall(_uncommented(line))}


def _uncommented(line: bytes) -> bytes:
    """A YAML line without its comment: ``#`` at the start or after a space, outside quotes."""
    quote = 0
    for index, char in enumerate(line):
        if quote:
            quote = 0 if char == quote else quote
        elif char in b"'\"":
            quote = char
        elif char == ord("#") and (index == 0 or line[index - 1] in b" \t"):
            return line[:index]
    return line


def _site_dirs() -> list[str]:
    # Installing or removing a distribution touches its site-packages directory: a new pack, a
    # new version or an optional extra (an embedder) changes the stamp without importing anything.
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user, str):
        dirs.append(user)
    return sorted(set(dirs))


def hello(config_id: str) -> dict[str, Any]:
    return {"type": "hello", "protocol": PROTOCOL, "version": __version__, "config_id": config_id}


def request(*, request_id: str, presentation: str, principal: str, transport: str, user: str,
            parsed: Request | None = None, ops: str | None = None, sampling: bool | None = None,
            client: str = "") -> dict[str, Any]:
    """Exactly one of ``parsed`` (sent in the JSON form) and ``ops`` (text the daemon parses). ``sampling``:
    None when the caller has no MCP session, else whether its client can sample. ``client``: what the MCP
    client calls itself, for the audit. The daemon decides the principal from the peer's uid (ADR 0032):
    the frame's may narrow it, never widen it."""
    if (parsed is None) == (ops is None):
        raise ValueError("a request frame carries exactly one of parsed and ops")
    frame: dict[str, Any] = {"type": "request", "id": request_id, "presentation": presentation,
                             "principal": principal, "transport": transport, "user": user}
    if parsed is not None:
        frame["request"] = jsonform.render(parsed)
    else:
        frame["ops"] = ops
    if sampling is not None:
        frame["sampling"] = sampling
    if client:
        frame["client"] = client
    return frame


def error(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"type": "error", "code": code, "message": message, "details": details}


REQUEST_FIELDS = {"id": str, "presentation": str, "principal": str, "transport": str, "user": str}


def request_problem(message: Mapping[str, Any], presentations: tuple[str, ...],
                    transports: frozenset[str]) -> str | None:
    """Why a request frame is malformed, naming the field and the fix; None when it is well formed."""
    for name, kind in REQUEST_FIELDS.items():
        if not isinstance(message.get(name), kind):
            return f"request field {name!r} is missing or not a {kind.__name__}"
    if ("request" in message) == ("ops" in message):
        return "a request frame carries exactly one of 'request' (the parsed request) and 'ops' (its text)"
    if "ops" in message and not isinstance(message["ops"], str):
        return "request field 'ops' must be the request text (a string)"
    if message["presentation"] not in presentations:
        return f"request field 'presentation' must be one of {', '.join(presentations)}"
    if message["transport"] not in transports:
        return f"request field 'transport' must be one of {', '.join(sorted(transports))}"
    if "sampling" in message and not isinstance(message["sampling"], bool):
        return "request field 'sampling' must be true or false when present"
    if "client" in message and not isinstance(message["client"], str):
        return "request field 'client' must be a string when present"
    if ":" not in message["principal"]:
        return "request field 'principal' must look like kind:name (e.g. operator:alice, agent:claude)"
    return None
