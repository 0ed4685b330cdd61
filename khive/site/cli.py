"""``khive site build [DIR]`` and ``khive site serve``: the curators' view of what the agents see.

``build`` writes the static site (default ``.khive/site/`` in the project, never committed);
``serve`` answers the same pages live on a loopback address, searching with ``discover.search`` as
it is asked, behind a bearer token made for this run and printed in the address to open.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8766


def add_site_command(commands: Any) -> None:
    site = commands.add_parser("site", help="a browsable site of the project: tables, sources, wiki, audit")
    actions = site.add_subparsers(dest="site_command", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="write the static site (default .khive/site/); exit 1 when a verb "
                                             "did not answer (its pages say so)")
    build.add_argument("dir", nargs="?", help="where to write it (default: .khive/site/ in the project)")
    build.set_defaults(handler=build_handler)
    serve = actions.add_parser("serve", help="serve the site on a loopback address, with live search")
    serve.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.set_defaults(handler=serve_handler)


def build_handler(args: argparse.Namespace) -> int:
    import anyio

    from khive.bootstrap import locate_project, open_runtime
    from khive.site.build import DEFAULT_DIR, build_site
    from khive.site.reader import operator_reader

    project = locate_project(args.project, os.environ, Path.cwd())
    target = Path(args.dir) if args.dir else project / DEFAULT_DIR
    runtime = open_runtime(project, os.environ)

    async def run() -> Any:
        try:
            return await build_site(operator_reader(runtime), target)
        finally:
            await runtime.aclose()

    report = anyio.run(run)
    print(f"khive: wrote {report.pages} pages and answers to {report.questions} questions in "
          f"{report.seconds:.1f}s")
    for failure in report.failures:
        print(f"khive: {failure}", file=sys.stderr)
    print(f"open file://{report.index}")
    return 1 if report.failures else 0  # written, but some pages say a verb did not answer


def serve_handler(args: argparse.Namespace) -> int:
    from khive.bootstrap import locate_project, open_runtime
    from khive.cli.app import EXIT_USAGE, _is_loopback, run_app
    from khive.site.server import site_app

    if not _is_loopback(args.host):
        print(f"khive: khive site serve listens on loopback only, not {args.host}; "
              "`khive serve --http --site` serves it behind server.tokens", file=sys.stderr)
        return EXIT_USAGE
    project = locate_project(args.project, os.environ, Path.cwd())
    runtime = open_runtime(project, os.environ)
    token = secrets.token_urlsafe(24)  # this run's only key: other local users cannot read the operator's view
    app = site_app(runtime, tokens={token: "operator"}, operator=True)
    print(f"khive: serving the site of {project.name}; open http://{args.host}:{args.port}/?token={token}",
          file=sys.stderr, flush=True)
    run_app(app, runtime, host=args.host, port=args.port)
    return 0
