"""khive: a data-context server for AI agents."""

__version__ = "0.1.0"
