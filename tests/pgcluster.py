"""A throwaway PostgreSQL cluster for tests: initdb into a temp dir, Unix socket only, trust auth.

Run as root (containers, CI), the server runs as the ``postgres`` OS user: PostgreSQL refuses root.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PORT = 5432  # no TCP listener; the port only names the socket file inside our own socket dir


class ClusterUnavailable(Exception):
    """No usable PostgreSQL here; the message says why."""


@dataclass(frozen=True)
class Cluster:
    root: Path
    socket_dir: Path
    port: int = PORT

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} dbname={dbname} user=postgres"


def find_bindir() -> Path:
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        bindir = Path(out.stdout.strip())
        if out.returncode == 0 and (bindir / "initdb").exists():
            return bindir
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise ClusterUnavailable("PostgreSQL not found: neither pg_config --bindir nor initdb on PATH")


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterUnavailable("running as root and there is no 'postgres' OS user to run the server") from None
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *argv]
    return ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(argv)]


def _run(argv: list[str], cwd: Path, log: Path | None = None) -> None:
    # pg_ctl start hands the postmaster our stdout unless -l is given; never capture it with a pipe.
    done = subprocess.run(_as_server_user(argv), cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        raise ClusterUnavailable(f"{Path(argv[0]).name} failed ({done.returncode}): "
                                 f"{(done.stderr or done.stdout).strip()[-2000:]}\n{tail}".strip())


def _preload(bindir: Path) -> list[str]:
    if not (bindir / "pg_config").exists():
        return []
    out = subprocess.run([str(bindir / "pg_config"), "--pkglibdir"], capture_output=True, text=True, check=False)
    if out.returncode == 0 and (Path(out.stdout.strip()) / "pg_stat_statements.so").exists():
        return ["-c shared_preload_libraries=pg_stat_statements"]
    return []


@contextmanager
def running_cluster() -> Iterator[Cluster]:
    bindir = find_bindir()
    root = Path(tempfile.mkdtemp(prefix="khive-pg-"))
    data, sockets, log = root / "data", root / "sock", root / "server.log"
    sockets.mkdir()
    if os.geteuid() == 0:
        _as_server_user(["true"])  # fail early, and clearly, without a postgres user
        for path in (root, sockets):
            shutil.chown(path, "postgres", "postgres")
    started = False
    try:
        _run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
              "--no-locale", "--no-sync"], cwd=root)
        options = " ".join([f"-k {sockets}", "-c listen_addresses=''", f"-p {PORT}", "-c fsync=off",
                            *_preload(bindir)])
        _run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"],
             cwd=root, log=log)
        started = True
        yield Cluster(root=root, socket_dir=sockets)
    finally:
        if started:
            subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                           cwd=root, capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def create_database(admin_dsn: str, prefix: str = "khive_test") -> str:
    import psycopg
    from psycopg import sql

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def select_only_role(dsn: str, schema: str = "public", prefix: str = "agent") -> Iterator[str]:
    """A login role that may read ``schema``'s tables and nothing more, as agents' SQL should run (README: Security
    model): its connection string for the database of ``dsn``. Dropped, with what it owns, afterwards."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    role = sql.Identifier(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), role))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(schema), role))
    try:
        yield make_conninfo(dsn, user=name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
