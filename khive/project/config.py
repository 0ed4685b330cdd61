"""``khive.yaml``: pydantic models plus a loader that reports errors with file, line and fix.

Secrets never live in project files: anything secret is an ``env:VAR`` reference, resolved by
the composition root that reads the environment.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError

from khive.connections.config import ConnectionConfig
from khive.envref import is_reference, require_reference, variable_of
from khive.errors import ConfigError
from khive.limits import Limits
from khive.project.locate import CONFIG_NAME, STATE_DIR, find_project  # noqa: F401  (re-exported)
from khive.project.yamldoc import line_of, plain
from khive.redact import check_pattern
from khive.textcheck import decode_error


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _env_ref(value: str) -> str:
    return require_reference(value, "secrets are never written into project files", "env:KHIVE_TOKEN")


class AuthRuleConfig(_Section):
    effect: Literal["allow", "deny"]
    principal: str = "*"
    transport: str = "*"
    verb: str = "*"
    visibility: Literal["*", "public", "operator"] = "*"
    reason: str = ""


class AuthConfig(_Section):
    default: Literal["allow", "deny"] = "allow"
    rules: list[AuthRuleConfig] = Field(default_factory=list)


class AuditConfig(_Section):
    store: Literal["sqlite", "postgres"] = "sqlite"
    path: str | None = None  # sqlite: relative to the project, default .khive/audit.sqlite
    url: str | None = None  # postgres: env:VAR holding the connection string
    table: str = "khive_audit_events"

    @field_validator("url")
    @classmethod
    def _url_is_env(cls, value: str | None) -> str | None:
        return None if value is None else _env_ref(value)

    @field_validator("table")
    @classmethod
    def _table_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError("must be a plain SQL identifier such as khive_audit_events")
        return value


class TokenConfig(_Section):
    token: str
    principal: str

    @field_validator("token")
    @classmethod
    def _token_is_env(cls, value: str) -> str:
        return _env_ref(value)


class ServerConfig(_Section):
    tokens: list[TokenConfig] = Field(default_factory=list)
    # At most 200: orjson writes no value nested deeper than 254, and the envelope and an MCP answer add levels.
    max_result_depth: int = Field(default=128, ge=8, le=200)
    max_parallel_ops: int = Field(default=4, ge=1, le=100,
                                  description="ops of one request that run at once (a batch queues the rest)")
    max_http_sessions: int = Field(default=10_000, ge=1, le=1_000_000,
                                   description="MCP sessions open at once over HTTP, all tokens together")
    max_http_sessions_per_token: int = Field(default=100, ge=1, le=1_000_000,
                                             description="MCP sessions one bearer token may hold open; at the cap its "
                                                         "oldest idle session is closed for a new one")


class IndexConfig(_Section):
    vector: bool = True  # the embedding lane; off leaves lexical search only
    embedder: str = "hash-fnv1a-256"  # a name registered through khive_register_embedders
    watch: bool = True  # inotify in warm processes; off means a stat-walk per refresh
    # a build from nothing (the first search after a scan) writes through a second process while this one makes the
    # rows, when its files are at least this many MB in all and a second core is free (ADR 0056); off: in process
    build_process: bool = True
    build_process_min_mb: float = Field(default=4.0, ge=0)
    build_process_max_load: float | None = None  # ... and the 1-minute load is at most this (None: CPUs - 0.5)


class WikiConfig(_Section):
    git_commit: bool = False  # commit every page write when the project is a git repository


class RunsConfig(_Section):
    """How many runs under ``raw-sources/<connection>/<kind>/`` are kept (a re-run that changed nothing writes none)."""

    keep_last: int = Field(default=5, ge=1, le=10_000, description="the newest runs kept of each connection and kind")
    keep_schema_changes: bool = Field(default=True, description="also keep every scan run that changed the schema")


def _redaction_pattern(value: str) -> str:
    return check_pattern(value)  # the core service's check: compiles, cannot match empty, no nested repeats


class RedactionConfig(_Section):
    patterns: list[Annotated[str, AfterValidator(_redaction_pattern)]] = Field(
        default_factory=list, description="regexes (case-insensitive) redacted wherever text leaves the warehouse, "
                                          "on top of the built-in credential rules (khive/redact.py)")


class KhiveConfig(_Section):
    version: Literal[1] = 1
    name: str | None = None
    packs: list[str] | None = None
    auth: AuthConfig = Field(default_factory=AuthConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    connections: dict[str, ConnectionConfig] = Field(default_factory=dict)
    index: IndexConfig = Field(default_factory=IndexConfig)
    wiki: WikiConfig = Field(default_factory=WikiConfig)
    limits: Limits = Field(default_factory=Limits)  # input caps (khive/limits.py); raise one here
    runs: RunsConfig = Field(default_factory=RunsConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)  # more secrets to redact (ADR 0035)


def load_config(path: Path) -> KhiveConfig:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}", details={"file": str(path)}) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{line}: {decode_error(exc).describe()}; save khive.yaml as UTF-8",
                          details={"file": str(path), "line": line, "fix": "save the file as UTF-8"}) from None
    return parse_config(text, path)


def parse_config(text: str, path: Path) -> KhiveConfig:
    yaml = YAML(typ="rt")
    try:
        data = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError(f"{path}:{line}: invalid YAML: {exc.problem}",
                          details={"file": str(path), "line": line, "fix": "fix the YAML syntax"}) from None
    if data is None:
        data = CommentedMap()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}:1: khive.yaml must be a mapping of sections",
                          details={"file": str(path), "line": 1})
    try:
        config = KhiveConfig.model_validate(plain(data))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = tuple(first["loc"])
        line = line_of(data, loc)
        where = ".".join(str(part) for part in loc) or "(top level)"
        fix = _fix(first, loc)
        message = f"{path}:{line}: {where}: {first['msg']}"
        if fix:
            message += f"; fix: {fix}"
        raise ConfigError(message, details={"file": str(path), "line": line, "field": where, "fix": fix,
                                            "errors": len(exc.errors())}) from None
    _check_pools(config, data, path)
    return config


def _check_pools(config: KhiveConfig, data: Any, path: Path) -> None:
    """A pool must outsize one request's parallel ops, so no single request can hold every driver."""
    cap = config.server.max_parallel_ops
    for name, connection in config.connections.items():
        if connection.pool_size is not None and connection.pool_size <= cap:
            where = f"connections.{name}.pool_size"
            line = line_of(data, ("connections", name, "pool_size"))
            fix = f"set {where} above {cap}, or lower server.max_parallel_ops"
            raise ConfigError(f"{path}:{line}: {where} ({connection.pool_size}) must be larger than "
                              f"server.max_parallel_ops ({cap}), so one request cannot take every driver; fix: {fix}",
                              details={"file": str(path), "line": line, "field": where, "fix": fix})


def _fix(error: Mapping[str, Any], loc: tuple[Any, ...]) -> str:
    if error["type"] == "extra_forbidden":
        parent = _model_at(loc[:-1])
        known = sorted(parent.model_fields)
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        return f"remove {loc[-1]!r}{guess} or use one of: {', '.join(known)}"
    if error["type"] == "literal_error":
        return f"use one of {error.get('ctx', {}).get('expected', '')}"
    return ""


def _model_at(path: tuple[Any, ...]) -> type[BaseModel]:
    """The model that holds the key at ``path``, through nested models, ``dict[str, Model]`` (e.g. a
    connection by name) and ``list[Model]``: a typo under ``connections.<name>`` lists a connection's keys."""
    model: type[BaseModel] = KhiveConfig
    pending: Any = None  # a dict/list annotation whose key or index is the next part
    for part in path:
        annotation = pending if pending is not None else getattr(model.model_fields.get(str(part)), "annotation", None)
        pending = None
        for candidate in (annotation, *get_args(annotation)):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                model = candidate
                break
            if get_origin(candidate) in (dict, list):
                pending = get_args(candidate)[-1]  # the value type, reached by the next part
                break
    return model


def referenced_variables(config: KhiveConfig) -> tuple[str, ...]:
    """The environment variables a server needs to answer requests, sorted: every ``env:VAR`` inside a
    connection (its url and any pack block, e.g. ``historicSql.url``) and ``audit.url``. The HTTP
    server's tokens are left out: ``khive serve`` reads them, an agent's ``khive mcp`` never does."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and is_reference(value):
            found.add(variable_of(value))
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for connection in config.connections.values():
        walk(connection.model_dump())
    walk(config.audit.url)
    return tuple(sorted(found))
