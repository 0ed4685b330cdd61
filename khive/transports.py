"""The transports a request arrives over and the presentations an answer can take (no imports: a leaf).

The two MCP transports form "the MCP wire", where operator verbs are blocked (khive/gate.py).
"""

CLI = "cli"
MCP_STDIO = "mcp-stdio"
MCP_HTTP = "mcp-http"
WIRE_TRANSPORTS = frozenset({MCP_STDIO, MCP_HTTP})

PRESENTATIONS = ("agent", "verbose", "human")
