"""The MCP server: exactly one tool, ``request``, over stdio or Streamable HTTP.

Protocol errors are raised only for malformed calls (a DSL syntax error is ``invalid_params``
with ``data.reason = "parse_error"``); everything an agent can act on comes back inside the
envelope, which is the tool's structured content.

Identity (ADR 0032): over stdio the principal is ``agent:<the OS user running khive mcp>``; over
HTTP it is what the bearer token names. What the client calls itself (``clientInfo.name``) is kept
as ``client`` in the audit and never decides anything. HTTP sessions are capped per token as well
as in total (``khive.http_sessions``).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import orjson
import pydantic
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from khive import __version__
from khive.abandon import Abandon, use_abandon
from khive.agent_brief import server_instructions, tool_description
from khive.audit.trail import audit_parse_error
from khive.bearer import match_token
from khive.context import MCP_HTTP, MCP_STDIO, PRESENTATIONS, Context
from khive.dispatch import dispatch
from khive.dsl.nodes import Request
from khive.envelope import envelope_schema, is_failure
from khive.errors import DslSyntaxError
from khive.execution import parse_request
from khive.failure import unexpected_failure
from khive.http_sessions import TOKEN_SCOPE_KEY, SessionCap, token_id
from khive.identity import agent_principal, client_label
from khive.mcp_sampling import Sampler
from khive.runtime import Runtime
from khive.textcheck import not_utf8

if TYPE_CHECKING:
    from khive.daemon.paths import DaemonSettings

log = logging.getLogger(__name__)

TOOL_NAME = "request"
INVALID_PARAMS = -32602
PRINCIPAL_SCOPE_KEY = "khive.principal"

# Dispatch function: the local dispatcher, or a daemon forwarder with the same signature.
# (the request text, the request parsed once at the edge, context) -> envelope. The text travels on for
# forwarding to the daemon and for the audit; nothing downstream parses it again.
Dispatcher = Callable[[Request, Context], Awaitable[dict[str, Any]]]  # the request parsed once, here (ADR 0044)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ops": {"type": "string", "description": "The request: DSL text or its JSON form."},
        "presentation": {"type": "string", "enum": list(PRESENTATIONS), "default": "agent",
                         "description": "agent (compact, default), verbose (canonical), human"},
        "request_id": {"type": "string", "description": "Optional id echoed in the envelope and audit."},
    },
    "required": ["ops"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = envelope_schema()  # structuredContent's contract (khive/envelope.py)


def parse_error_data(exc: DslSyntaxError) -> dict[str, Any]:
    return {"reason": "parse_error", "code": exc.reason, "message": exc.message, "line": exc.line,
            "column": exc.column, "excerpt": exc.excerpt, "hint": exc.hint}


async def local_dispatch(request: Request, ctx: Context) -> dict[str, Any]:
    """``dispatch`` in this process. A call the client cancels runs on as in the daemon (what it started finishes
    and is audited), but its ``Abandon`` is set, so statements only its answer needed stop (ADR 0058): a
    statement in a worker thread does not see the handler's cancellation, which would wait for it."""
    abandon = Abandon()
    outcome: list[dict[str, Any] | Exception] = []
    done = anyio.Event()

    async def run() -> None:
        use_abandon(abandon)
        with anyio.CancelScope(shield=True):
            try:
                outcome.append(await dispatch(request, ctx))
            except Exception as exc:  # raised as it is below, not inside the task group's exception group
                outcome.append(exc)
        done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            abandon.set()
            raise
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def forwarding_dispatcher(project: Path, env: Mapping[str, str], settings: DaemonSettings,
                          note: Callable[[str], None] | None = None) -> Dispatcher:
    """Forward each call through the warm daemon (``khive.daemon.client``); dispatch locally when it says so."""
    import anyio.from_thread
    import anyio.to_thread

    from khive.daemon.client import Call, Forwarded, forward_or_spawn

    async def dispatcher(request: Request, ctx: Context) -> dict[str, Any]:
        sampler = ctx.sampler

        def progress(done: float, total: float | None, message: str | None) -> None:
            async def report() -> None:
                await ctx.progress(done, total, message)

            anyio.from_thread.run(report)

        def sample(key: str, system: str, prompt: str, max_tokens: int) -> str | None:
            async def ask() -> str | None:
                assert sampler is not None  # only handed to the client when there is one
                text: str | None = await sampler(key, system=system, prompt=prompt, max_tokens=max_tokens)
                return text

            return anyio.from_thread.run(ask)

        abandon = Abandon()
        call = Call(request, ctx.principal, ctx.transport, ctx.presentation, ctx.request_id, ctx.user,
                    sampler=sampler, on_sample=sample if sampler is not None else None, client=ctx.client,
                    abandon=abandon)
        try:
            outcome = await anyio.to_thread.run_sync(
                lambda: forward_or_spawn(call, project=project, env=env, settings=settings, on_progress=progress),
                abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            abandon.set()  # the client cancelled or left: the daemon stops the statements only its answer needed
            raise
        if isinstance(outcome, Forwarded):
            return outcome.envelope
        if note is not None:
            note(f"dispatching locally: {outcome.reason}")
        return await local_dispatch(request, ctx)

    return dispatcher


def build_server(runtime: Runtime, *, transport: str = MCP_STDIO,
                 dispatcher: Dispatcher = local_dispatch, user: str = "") -> Server[Any]:
    """A low-level MCP server exposing the one ``request`` tool; over stdio its callers are
    ``agent:<the OS user of this process>``."""
    instructions = server_instructions(runtime)  # names this project's connections (khive.agent_brief)
    local_agent = agent_principal()

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name=TOOL_NAME, description=tool_description(runtime, instructions), input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
        )])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != TOOL_NAME:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; khive has one tool: {TOOL_NAME}")
        arguments = params.arguments or {}
        text, presentation, request_id = _tool_arguments(arguments)
        principal = _http_principal(ctx) if transport == MCP_HTTP else local_agent
        try:
            request = await parse_request(text)  # a syntax error is a protocol error and never reaches the dispatcher
        except DslSyntaxError as exc:
            await audit_parse_error(runtime.audit, exc, text, request_id=request_id,
                                    principal=principal, transport=transport, user=user, client=_client_name(ctx))
            raise MCPError(INVALID_PARAMS, f"DSL syntax error: {exc.message}", parse_error_data(exc)) from None
        request_id = request_id or uuid.uuid4().hex  # known here, so even a failure below can name it

        async def progress(done: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(done, total, message)

        sampler = Sampler(ctx, params)  # MCP sampling for handlers that want the client's LLM
        request_ctx = Context(runtime, principal, transport, presentation=presentation,
                              request_id=request_id, progress=progress, sampler=sampler,
                              user=user, client=_client_name(ctx))
        try:
            envelope = await dispatcher(request, request_ctx)
            asked = sampler.input_required()  # 2026-07-28: samples travel in a second round of the same call
            if asked is not None:
                return asked
            shown = orjson.dumps(envelope).decode()
        except Exception as exc:  # a bug outside any op: still an envelope, never a JSON-RPC error
            log.exception("request %s failed outside any op", request_id)
            envelope = unexpected_failure([op.verb for op in request.ops], request_id, "mcp_server", exc)
            shown = orjson.dumps(envelope).decode()
        return types.CallToolResult(content=[types.TextContent(type="text", text=shown)],
                                    structured_content=envelope, is_error=is_failure(envelope))

    return Server("khive", version=__version__, instructions=instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def _tool_arguments(arguments: Mapping[str, Any]) -> tuple[str, str, str]:
    unknown = set(arguments) - {"ops", "presentation", "request_id"}
    if unknown:
        raise MCPError(INVALID_PARAMS, f"unknown argument(s) {sorted(unknown)}; request takes ops, "
                                       "presentation, request_id")
    text = arguments.get("ops")
    if not isinstance(text, str):
        raise MCPError(INVALID_PARAMS, "argument 'ops' is required and must be a string of DSL or JSON")
    presentation = arguments.get("presentation") or "agent"
    if presentation not in PRESENTATIONS:
        raise MCPError(INVALID_PARAMS, f"presentation must be one of {', '.join(PRESENTATIONS)}")
    request_id = arguments.get("request_id", "")
    if not isinstance(request_id, str) or not_utf8(request_id) is not None:
        raise MCPError(INVALID_PARAMS, "request_id must be a string of Unicode text")
    return text, str(presentation), request_id


def _http_principal(ctx: ServerRequestContext[Any]) -> str:
    """What the bearer token names (the auth middleware put it in the scope); never the client's own word."""
    scope = getattr(ctx.request, "scope", None) or {}
    return str(scope.get(PRINCIPAL_SCOPE_KEY, "agent:http"))


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    """What the client calls itself (``clientInfo.name``): for the audit only."""
    client = (ctx.meta or {}).get("io.modelcontextprotocol/clientInfo") if isinstance(ctx.meta, Mapping) else None
    name = client.get("name") if isinstance(client, Mapping) else None
    if name is None:
        info = getattr(getattr(ctx.session, "client_params", None), "client_info", None)
        name = getattr(info, "name", None)
    return client_label(name)


class BearerAuth:
    """ASGI middleware: requests must carry ``Authorization: Bearer <token>``; the token names the principal."""

    def __init__(self, app: Any, tokens: Mapping[str, str]):
        self.app = app
        self.tokens = dict(tokens)  # token -> principal

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websocket routes exist; refuse rather than skip the check
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, presented = header.partition(" ")
        found = match_token(presented, self.tokens) if scheme.lower() == "bearer" else None
        if found is None:
            body = orjson.dumps({"error": "unauthorized", "message": "missing or invalid bearer token"})
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="khive"'),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        principal, matched = found
        scope[PRINCIPAL_SCOPE_KEY] = principal
        scope[TOKEN_SCOPE_KEY] = token_id(matched)  # sessions are capped per token, never by its text
        await self.app(scope, receive, send)


class AnonymousPrincipal:
    """ASGI middleware for ``--no-auth`` on loopback: every caller is the same local agent."""

    def __init__(self, app: Any, principal: str = "agent:http-local"):
        self.app = app
        self.principal = principal

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope[PRINCIPAL_SCOPE_KEY] = self.principal
            scope[TOKEN_SCOPE_KEY] = "anonymous"
        await self.app(scope, receive, send)


def http_app(runtime: Runtime, *, tokens: Mapping[str, str] | None, host: str = "127.0.0.1",
             dispatcher: Dispatcher = local_dispatch) -> Any:
    """The Streamable HTTP ASGI app; ``tokens=None`` means no auth (loopback only, checked by the caller)."""
    server = build_server(runtime, transport=MCP_HTTP, dispatcher=dispatcher)
    limits = runtime.config.server
    app = SessionCap(server.streamable_http_app(host=host, max_sessions=limits.max_http_sessions),
                     per_token=limits.max_http_sessions_per_token)
    return AnonymousPrincipal(app) if tokens is None else BearerAuth(app, tokens)


async def run_stdio(runtime: Runtime, dispatcher: Dispatcher = local_dispatch, *, user: str = "") -> None:
    """Serve over stdio; ``user`` is the local person the agent works for (their wiki tier)."""
    from mcp.server.stdio import stdio_server

    server = build_server(runtime, transport=MCP_STDIO, dispatcher=dispatcher, user=user)
    async with stdio_server() as (read_stream, write_stream):
        relay, relayed = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def reread() -> None:  # the lines the SDK's JSON parser refuses but JSON allows (see _reread)
            async with relay:
                async for item in read_stream:
                    await relay.send(_reread(item))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reread)
            await server.run(relayed, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()


def _reread(item: SessionMessage | Exception) -> SessionMessage | Exception:
    """A line the SDK could not read, read again with the standard JSON parser.

    ``json.dumps`` writes a lone surrogate as ``"\\ud800"``: valid JSON, which pydantic's parser refuses; the
    SDK then drops the line without an answer, so the client waits forever and the audit never sees it.
    Read this way the request reaches ``call_tool``, whose DSL refuses the surrogate: a typed, audited
    ``parse_error``. Anything else the SDK refused stays its exception.
    """
    if not isinstance(item, pydantic.ValidationError):
        return item
    errors = item.errors()
    raw = errors[0].get("input") if errors else None
    if not isinstance(raw, str | bytes):
        return item
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(raw), by_name=False))
    except (ValueError, pydantic.ValidationError):
        return item
