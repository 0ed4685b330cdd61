"""The ``khive`` command line and the app-level features behind it (a composition root).

    app.py            argument parsing, ``khive request``, ``mcp``, ``serve``, ``audit``, ``verbs``, ``init``
    scan.py, ingest.py, doctor.py, agents.py, daemon.py   one subcommand each
    agent_clients.py  the MCP client configs ``khive setup-agents`` writes or prints
    progress.py       the terminal progress bar
    demo/             ``khive demo``: the generated shop warehouse, its query log, the scripted run

Nothing below the composition roots imports from here (tests/meta/test_architecture.py).
"""

from khive.cli.app import main

__all__ = ["main"]
