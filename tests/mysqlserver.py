"""A throwaway MariaDB (or MySQL) server for tests: a data directory in a temp dir, a Unix socket, no TCP.

``mariadb-install-db`` (or ``mysql_install_db``) creates the system tables with a root that logs in over
the socket without a password; the server runs with small buffers and is killed at the end. Run as
root (containers, CI), both run as the ``mysql`` OS user, which the Debian package creates.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STARTUP_SECONDS = 60


class ServerUnavailable(Exception):
    """No usable MariaDB/MySQL server here; the message says why."""


@dataclass(frozen=True)
class Server:
    root: Path
    socket: Path
    version: str


def _binaries() -> tuple[str, str]:
    for server, install in (("mariadbd", "mariadb-install-db"), ("mysqld", "mysql_install_db")):
        found = shutil.which(server) or (f"/usr/sbin/{server}" if Path(f"/usr/sbin/{server}").exists() else None)
        installer = shutil.which(install)
        if found and installer:
            return found, installer
    raise ServerUnavailable("MariaDB not found: neither mariadbd with mariadb-install-db nor mysqld with "
                            "mysql_install_db (apt-get install mariadb-server)")


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    try:
        pwd.getpwnam("mysql")
    except KeyError:
        raise ServerUnavailable("running as root and there is no 'mysql' OS user to run the server") from None
    return ["runuser", "-u", "mysql", "--", *argv]


@contextmanager
def running_server() -> Iterator[Server]:
    import pymysql

    server, installer = _binaries()
    root = Path(tempfile.mkdtemp(prefix="khive-my-"))
    data, socket, log = root / "data", root / "mysqld.sock", root / "server.log"
    if os.geteuid() == 0:
        _as_server_user(["true"])
        shutil.chown(root, "mysql", "mysql")
    process: subprocess.Popen[bytes] | None = None
    try:
        done = subprocess.run(_as_server_user([installer, "--no-defaults", f"--datadir={data}",
                                               "--auth-root-authentication-method=normal", "--skip-test-db",
                                               "--skip-name-resolve"]),
                              cwd=root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ServerUnavailable(f"{Path(installer).name} failed ({done.returncode}): "
                                    f"{(done.stderr or done.stdout).strip()[-2000:]}")
        process = subprocess.Popen(
            _as_server_user([server, "--no-defaults", f"--datadir={data}", f"--socket={socket}", "--skip-networking",
                             f"--log-error={log}", f"--pid-file={root / 'mysqld.pid'}",
                             "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--skip-log-bin"]),
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not socket.exists():  # the server creates its socket once it accepts connections
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise ServerUnavailable(f"{Path(server).name} did not start: {tail}")
            time.sleep(0.1)
        conn = pymysql.connect(unix_socket=str(socket), user="root", connect_timeout=10)
        with conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            (version,) = cursor.fetchone()
        conn.close()
        yield Server(root=root, socket=socket, version=str(version))
    finally:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: the server and nothing else
            process.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
