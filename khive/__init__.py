"""khive: a data-context server for AI agents."""

import logging

__version__ = "0.1.0"

# sqlglot warns with the first 100 characters of a statement it can read only as a Command. The statements khive
# parses are other people's query history and agents' SQL (a CREATE ROLE's password included): never for a log.
# Set here, where every khive process (the CLI, the daemon, the history parse workers) passes (ADR 0058).
logging.getLogger("sqlglot").setLevel(logging.ERROR)
