"""The historic_sql pack: query history into per-table usage and cross-table patterns."""
