"""The shared retrieval index: documents from every pack, FTS5 and vector lanes, edges, freshness."""
