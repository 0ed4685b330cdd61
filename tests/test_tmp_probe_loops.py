import anyio
from khive.audit.postgres import PostgresAuditStore
from khive.audit.store import AuditQuery

def test_two_loops(pg_database):
    store = PostgresAuditStore(pg_database)
    assert anyio.run(store.count) == 0
    assert anyio.run(store.count) == 0
    assert anyio.run(store.query, AuditQuery()) == []
    anyio.run(store.aclose)
