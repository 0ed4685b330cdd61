"""Database connections shared by packs: drivers behind one protocol, the catalog model, the read-only SQL gate."""
