"""What a PostgreSQL session may be trusted with, learned once per connection when it opens (ADR 0032).

* The role: a superuser, or a member of ``pg_read_server_files``, ``pg_write_server_files`` or
  ``pg_execute_server_program``, can read the server's files or run programs through SQL the gate
  never sees as a call (a user function reached by attribute notation: ``p.evil`` is ``evil(p)``).
  Agent SQL refuses to run on such a role unless the connection says ``allowPrivilegedRole: true``.
* The search path is pinned with ``pg_catalog`` first (``pg_catalog, <the role's schemas>, pg_temp``),
  so a function of the same signature in a user schema never shadows a built-in, whatever the
  role's or database's own ``search_path`` says.
* Overloads: a user function with a built-in's name but other argument types (``public.md5(integer)``)
  still wins PostgreSQL's overload resolution for ``md5(1)`` under any search path, so the names of
  built-ins that user functions on the path also carry are kept for the gate (``shadowed``), which
  refuses such bare calls from agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

SERVER_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")

_FACTS_SQL = """
SELECT current_user AS role, r.rolsuper AS superuser, pg_catalog.current_schemas(false) AS schemas,
       ARRAY(SELECT g.rolname FROM pg_catalog.pg_roles AS g
             WHERE g.rolname = ANY(%(roles)s) AND pg_catalog.pg_has_role(current_user, g.oid, 'MEMBER')
             ORDER BY g.rolname) AS server_roles
FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user
"""
# Built-in names (functions in pg_catalog) that a function in a user schema on the search path also carries.
_SHADOWED_SQL = """
SELECT p.proname AS name, pg_catalog.array_agg(DISTINCT n.nspname ORDER BY n.nspname) AS schemas
FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = ANY(%(schemas)s) AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS b
              WHERE b.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AND b.proname = p.proname)
GROUP BY p.proname
"""


@dataclass(frozen=True)
class SessionFacts:
    role: str
    superuser: bool
    server_roles: tuple[str, ...]  # which of SERVER_ROLES the role holds
    search_path: tuple[str, ...]  # as pinned
    shadowed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # built-in name -> user schemas

    @property
    def privileges(self) -> tuple[str, ...]:
        """What makes the role privileged: ``superuser`` and the server roles it holds; empty when none."""
        return (("superuser",) if self.superuser else ()) + self.server_roles


def inspect_and_pin(conn: Any) -> SessionFacts:
    """Read the role's privileges and pin the search path; ``conn`` is an autocommit psycopg connection
    (the ``SET`` must outlive this call, and every later transaction is rolled back)."""
    with conn.cursor() as cursor:
        cursor.execute(_FACTS_SQL, {"roles": list(SERVER_ROLES)})
        row = cursor.fetchone()
        role, superuser, schemas, server_roles = row if row is not None else ("", False, [], [])
        user_schemas = [schema for schema in schemas or [] if schema != "pg_catalog"]
        path = ("pg_catalog", *user_schemas, "pg_temp")
        cursor.execute(sql.SQL("SET search_path = {}").format(sql.SQL(", ").join(map(sql.Identifier, path))))
        cursor.execute(_SHADOWED_SQL, {"schemas": user_schemas})
        shadowed = {str(name): tuple(found) for name, found in cursor.fetchall()}
    return SessionFacts(str(role), bool(superuser), tuple(server_roles or ()), path, shadowed)
