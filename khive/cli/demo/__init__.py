"""The built-in demo: a generated shop warehouse, its query log, and the end-to-end run behind ``khive demo``."""
