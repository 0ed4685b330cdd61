"""The ``khive`` command line: a composition root (reads config and environment, builds the Runtime).

Exit codes of ``khive request``: 0 every op succeeded, 1 some op failed, 2 the DSL did not parse
(or the project/config is broken).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from khive import __version__
from khive.bootstrap import locate_project, open_runtime, operator_principal, single_threaded_blas
from khive.context import CLI, PRESENTATIONS
from khive.dsl import parse
from khive.errors import ConfigError, DslSyntaxError, KhiveError

if TYPE_CHECKING:  # the forwarding path of `khive request` must not import the runtime (ADR 0019)
    from khive.daemon.client import Forwarded, Local
    from khive.daemon.paths import DaemonSettings
    from khive.dsl.nodes import Request
    from khive.mcp_server import Dispatcher
    from khive.runtime import Runtime

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = _not_utf8_input(argv, os.environ)
    if problem is not None:
        print(f"khive: {problem}; khive reads UTF-8 text only", file=sys.stderr)
        return EXIT_USAGE
    single_threaded_blas(os.environ)
    # `khive request` is what agents and scripts run all day: it gets a parser with only its own
    # command, so no other subcommand's module is imported on the way to the daemon.
    parser = _request_parser() if _command_of(argv) == "request" else _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        result: int = args.handler(args)
        return result
    except (ConfigError, KhiveError) as exc:
        print(f"khive: {exc.message}", file=sys.stderr)
        return EXIT_USAGE


PATH_VARIABLES = ("KHIVE_PROJECT", "KHIVE_HOME", "KHIVE_SOCKET")


def _not_utf8_input(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Which argument or path variable holds bytes that are not UTF-8, naming the byte and its position."""
    from khive.textcheck import not_utf8, shown

    for index, word in enumerate(argv, start=1):
        found = not_utf8(word)
        if found is not None:
            return f"argument {index} ('{shown(word)}'): {found.describe()}"
    for name in PATH_VARIABLES:
        found = not_utf8(env.get(name, ""))
        if found is not None:
            return f"{name} ('{shown(env[name])}'): {found.describe()}"
    return None


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand name: the first word that is neither a global option nor its value."""
    words = iter(argv)
    for word in words:
        if word == "--project":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _global_parser() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(prog="khive", description="khive: a data-context server for AI agents")
    parser.add_argument("--version", action="version", version=f"khive {__version__}")
    parser.add_argument("--project", help="project directory (default: KHIVE_PROJECT or nearest khive.yaml)")
    parser.add_argument("--verbose", action="store_true", help="say more about what happens")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def _request_parser() -> argparse.ArgumentParser:
    parser, commands = _global_parser()
    _add_request_command(commands)
    return parser


def _add_request_command(commands: Any) -> None:
    request = commands.add_parser("request", help="run one request and print its envelope")
    request.add_argument("ops", help='DSL text, e.g. "verbs()", or "-" to read it from stdin')
    request.add_argument("--presentation", choices=PRESENTATIONS, default="agent")
    request.add_argument("--request-id", default="")
    request.set_defaults(handler=_request)


def _parser() -> argparse.ArgumentParser:
    parser, commands = _global_parser()

    init = commands.add_parser("init", help="create a khive project")
    init.add_argument("dir", nargs="?", default=".")
    init.set_defaults(handler=_init)

    _add_request_command(commands)

    verbs = commands.add_parser("verbs", help="list every verb")
    verbs.add_argument("--pack")
    verbs.set_defaults(handler=_verbs)

    mcp = commands.add_parser("mcp", help="serve MCP over stdio (what agents start)")
    mcp.set_defaults(handler=_mcp)

    serve = commands.add_parser("serve", help="serve MCP over Streamable HTTP")
    serve.add_argument("--http", action="store_true", required=True, help="use Streamable HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--no-auth", action="store_true", help="allow unauthenticated access (loopback only)")
    serve.add_argument("--site", action="store_true", help="also serve the site, read-only, at /site/")
    serve.set_defaults(handler=_serve)

    audit = commands.add_parser("audit", help="read the audit trail")
    audit.add_argument("--verb")
    audit.add_argument("--principal")
    audit.add_argument("--outcome", help="ok, an error code, aborted, interrupted, running, parse_error")
    audit.add_argument("--request-id")
    audit.add_argument("--since", type=datetime.fromisoformat)
    audit.add_argument("--until", type=datetime.fromisoformat)
    audit.add_argument("--limit", type=int, default=50)
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(handler=_audit)

    from khive.cli import agents as cli_agents
    from khive.cli import doctor as cli_doctor
    from khive.cli import ingest as cli_ingest
    from khive.cli import scan as cli_scan
    from khive.cli.daemon import add_daemon_commands
    from khive.cli.demo import command as cli_demo

    _add_command(commands, "scan", "scan a connection's live database (scan.run); prints a summary",
                 cli_scan.add_arguments, cli_scan.handler)
    _add_command(commands, "ingest", "read a connection's query history into usage and patterns",
                 cli_ingest.add_arguments, cli_ingest.handler)
    _add_command(commands, "doctor", "what retrieval can see (discover.doctor) and query-history probes",
                 cli_doctor.add_arguments, cli_doctor.doctor)
    add_daemon_commands(commands)
    _add_command(commands, "demo", "build the demo shop project and show requests against it",
                 cli_demo.add_arguments, cli_demo.handler)
    _add_command(commands, "setup-agents", "connect Claude Code, Cursor, Codex to this project over MCP",
                 cli_agents.add_arguments, cli_agents.handler)

    from khive.site.cli import add_site_command

    add_site_command(commands)
    return parser


def _add_command(commands: Any, name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                 handler: Callable[[argparse.Namespace], int]) -> None:
    """A subcommand whose module declares its own arguments and handler."""
    command = commands.add_parser(name, help=help)
    add_arguments(command)
    command.set_defaults(handler=handler)


def _runtime(args: argparse.Namespace) -> Runtime:
    project = locate_project(args.project, os.environ, Path.cwd())
    return open_runtime(project, os.environ)


def _init(args: argparse.Namespace) -> int:
    from khive.scaffold import init_project

    root = Path(args.project or args.dir).resolve()
    created = init_project(root, operator_principal().split(":", 1)[1])
    print(f"khive project at {root}" + (f" (created {', '.join(created)})" if created else " (already there)"))
    return EXIT_OK


def _request(args: argparse.Namespace) -> int:
    from khive.daemon.paths import ensure_private_dir, settings_from_env
    from khive.dsl.tables import cache_tables_in

    if args.ops == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            from khive.textcheck import decode_error

            print(f"khive: stdin: {decode_error(exc).describe()}; khive reads UTF-8 text only", file=sys.stderr)
            return EXIT_USAGE
    else:
        text = args.ops
    settings = settings_from_env(os.environ)
    try:
        ensure_private_dir(settings.home)
        cache_tables_in(settings.home)  # the grammar's tables: most of a short process's start-up
    except OSError:
        pass  # an unwritable home only costs the cache (and the daemon says why when it is needed)
    try:
        request = parse(text)  # a syntax error never reaches the daemon
    except DslSyntaxError as exc:
        _audit_parse_error(args, text, exc)
        sys.stdout.write(orjson.dumps({"error": exc.to_dict()}, option=orjson.OPT_INDENT_2).decode() + "\n")
        print(f"khive: {exc}", file=sys.stderr)
        return EXIT_USAGE
    project = locate_project(args.project, os.environ, Path.cwd())
    try:
        outcome = _forward(args, request, project, settings)
        if isinstance(outcome, dict):
            envelope = outcome
        else:
            if args.verbose:
                print(f"khive: dispatching locally: {outcome.reason}", file=sys.stderr)
            envelope = _dispatch_locally(args, text, project)
        shown = orjson.dumps(envelope, option=orjson.OPT_INDENT_2)
    except KhiveError:
        raise  # configuration and project errors: a message and exit 2, as before the request
    except Exception as exc:  # a bug outside any op: still an envelope, never a traceback
        from khive.failure import unexpected_failure

        if args.verbose:
            traceback.print_exc()
        envelope = unexpected_failure([op.verb for op in request.ops], args.request_id, "cli", exc)
        shown = orjson.dumps(envelope, option=orjson.OPT_INDENT_2)
    sys.stdout.write(shown.decode() + "\n")
    return EXIT_OK if envelope["status"] == "success" else EXIT_FAILED


def _audit_parse_error(args: argparse.Namespace, text: str, exc: DslSyntaxError) -> None:
    """A rejected text goes to the project's audit trail (its digest, never the text); outside a
    project there is no trail, and nothing ran."""
    import anyio

    from khive.audit.config import open_audit_store
    from khive.audit.trail import audit_parse_error
    from khive.project.config import load_config
    from khive.project.locate import CONFIG_NAME

    try:
        project = locate_project(args.project, os.environ, Path.cwd())
        store = open_audit_store(project, load_config(project / CONFIG_NAME), os.environ)
    except KhiveError:
        return

    async def record() -> bool:
        try:
            return await audit_parse_error(store, exc, text, request_id=args.request_id,
                                           principal=operator_principal(), transport=CLI,
                                           user=operator_principal().split(":", 1)[1])
        finally:
            await store.aclose()

    if not anyio.run(record):
        print("khive: the parse error could not be written to the audit trail", file=sys.stderr)


def _forward(args: argparse.Namespace, request: Request, project: Path,
             settings: DaemonSettings) -> dict[str, Any] | Local:
    from khive.daemon.client import Call, Local, forward_or_spawn

    progress_bar: Any = None

    def progress(done: float, total: float | None, message: str | None) -> None:
        nonlocal progress_bar
        if progress_bar is None:
            from khive.cli.progress import RichProgressSink

            progress_bar = RichProgressSink().__enter__()
        progress_bar.update(done, total, message)

    call = Call(request, operator_principal(), CLI, args.presentation, args.request_id,
                operator_principal().split(":", 1)[1])
    try:
        outcome: Forwarded | Local = forward_or_spawn(call, project=project, env=os.environ, settings=settings,
                                                      on_progress=progress)
    finally:
        if progress_bar is not None:
            progress_bar.__exit__(None, None, None)
    if isinstance(outcome, Local):
        return outcome
    if args.verbose:
        print(f"khive: {_daemon_note(outcome)}", file=sys.stderr)
    return outcome.envelope


def _daemon_note(outcome: Forwarded) -> str:
    """What happened with the daemon, truthfully: an envelope this client wrote is not an answer."""
    again = " after one resend" if outcome.resent else ""
    if outcome.answered:
        return f"answered by the daemon (pid {outcome.pid}){again}"
    first = outcome.envelope["results"][0]["error"]["message"] if outcome.envelope["results"] else ""
    who = f"the daemon (pid {outcome.pid})" if outcome.pid else "the daemon"
    return f"NOT answered: {who} did not answer{again}; the envelope below was written by this client: {first}"


def _dispatch_locally(args: argparse.Namespace, text: str, project: Path) -> dict[str, Any]:
    import anyio  # not at module level: the forwarding path never needs an event loop

    from khive.cli.progress import RichProgressSink
    from khive.context import Context
    from khive.dispatch import dispatch

    _log_errors_briefly(args.verbose)
    runtime = open_runtime(project, os.environ)

    async def run() -> dict[str, Any]:
        try:
            with RichProgressSink() as progress:
                ctx = Context(runtime, operator_principal(), CLI, presentation=args.presentation,
                              request_id=args.request_id, progress=progress)
                return await dispatch(parse(text), ctx)
        finally:
            await runtime.aclose()

    envelope: dict[str, Any] = anyio.run(run)
    return envelope


class _BriefErrors(logging.Formatter):
    """A failing op is already in the envelope: its log line names the exception, without the traceback."""

    def formatException(self, ei: Any) -> str:
        kind, value = ei[0], ei[1]
        return f"  ({getattr(kind, '__name__', kind)}: {value}; --verbose shows the traceback)"


def _log_errors_briefly(verbose: bool) -> None:
    root = logging.getLogger()
    if verbose or root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_BriefErrors("khive: %(message)s"))
    root.addHandler(handler)


def _verbs(args: argparse.Namespace) -> int:
    import anyio

    runtime = _runtime(args)
    try:
        for entry in runtime.registry.catalogue():
            if args.pack and runtime.registry.verbs[entry["verb"]].pack != args.pack:
                continue
            marker = "  [operator]" if entry["visibility"] == "operator" else ""
            print(f"{entry['verb']:<28} {entry['doc']}{marker}")
    finally:
        anyio.run(runtime.aclose)
    return EXIT_OK


def _mcp(args: argparse.Namespace) -> int:
    import anyio

    from khive.mcp_server import run_stdio

    runtime = _runtime(args)
    dispatcher = _daemon_dispatcher(args, runtime.project)

    async def run() -> None:
        try:
            await run_stdio(runtime, dispatcher, user=operator_principal().split(":", 1)[1])
        finally:
            await runtime.aclose()

    anyio.run(run)
    return EXIT_OK


def _daemon_dispatcher(args: argparse.Namespace, project: Path) -> Dispatcher:
    from khive.daemon.paths import settings_from_env
    from khive.mcp_server import forwarding_dispatcher

    def note(message: str) -> None:
        if args.verbose:
            print(f"khive: {message}", file=sys.stderr)

    return forwarding_dispatcher(project, os.environ, settings_from_env(os.environ), note)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve(args: argparse.Namespace) -> int:
    from khive.envref import resolve
    from khive.mcp_server import http_app

    runtime = _runtime(args)
    tokens = {resolve(entry.token, os.environ, field="server.tokens"): entry.principal
              for entry in runtime.config.server.tokens}
    if os.environ.get("KHIVE_HTTP_TOKEN"):
        tokens[os.environ["KHIVE_HTTP_TOKEN"]] = "agent:http"
    if args.no_auth:
        if not _is_loopback(args.host):
            print(f"khive: --no-auth is only allowed on a loopback address, not {args.host}", file=sys.stderr)
            return EXIT_USAGE
        app = http_app(runtime, tokens=None, host=args.host, dispatcher=_daemon_dispatcher(args, runtime.project))
    elif not tokens:
        print("khive: refusing to serve HTTP without a bearer token: set KHIVE_HTTP_TOKEN or server.tokens "
              "in khive.yaml (or --no-auth on a loopback address)", file=sys.stderr)
        return EXIT_USAGE
    else:
        app = http_app(runtime, tokens=tokens, host=args.host, dispatcher=_daemon_dispatcher(args, runtime.project))
    if args.site:
        from khive.site.server import mount_site

        app = mount_site(app, runtime, tokens=None if args.no_auth else tokens)
        print(f"khive: serving the site on http://{args.host}:{args.port}/site/ (same bearer token)",
              file=sys.stderr, flush=True)
    print(f"khive: serving MCP on http://{args.host}:{args.port}/mcp", file=sys.stderr, flush=True)
    run_app(app, runtime, host=args.host, port=args.port)
    return EXIT_OK


def run_app(app: Any, runtime: Runtime, *, host: str, port: int) -> None:
    """Serve an ASGI app until stopped, then close the runtime."""
    import anyio
    import uvicorn

    # uvicorn re-raises SIGTERM with the default handler after its graceful shutdown, which would skip
    # closing the runtime; exiting through SystemExit runs the finally block instead.
    from khive.threads import favour_the_event_loop

    favour_the_event_loop()  # one loop answers every HTTP agent, as in the daemon
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        signal.signal(signal.SIGTERM, previous)
        anyio.run(runtime.aclose)


def _audit(args: argparse.Namespace) -> int:
    import anyio

    from khive.audit.store import AuditQuery

    runtime = _runtime(args)
    query = AuditQuery(verb=args.verb, principal=args.principal, outcome=args.outcome, since=args.since,
                       until=args.until, request_id=args.request_id, limit=args.limit)

    async def run() -> list[dict[str, Any]]:
        try:
            return [event.to_dict() for event in await runtime.audit.query(query)]
        finally:
            await runtime.aclose()

    events = anyio.run(run)
    if args.json:
        for event in events:
            sys.stdout.write(orjson.dumps(event).decode() + "\n")
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table("time", "principal", "transport", "verb", "decision", "outcome", "µs", "reason")
    for event in events:
        table.add_row(event["ts"][:19], event["principal"], event["transport"], event["verb"],
                      event["decision"], event["outcome"], str(event["durationUs"]), event["reason"][:60])
    Console().print(table)
    return EXIT_OK

