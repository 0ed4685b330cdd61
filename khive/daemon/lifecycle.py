"""Start, serve and stop one daemon: single instance, stale cleanup, warm_all, idle shutdown.

Single instance rests on two checks: a live daemon answers the identity probe on the socket,
and a running daemon holds an exclusive lock on its pid file for its whole life (the kernel
drops it when the process dies, even by ``kill -9``). A socket file nobody holds the lock for
is stale and is removed before binding.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

from khive.daemon.connection import DaemonConnection
from khive.daemon.paths import DaemonSettings, ensure_private_dir
from khive.daemon.peer import check_socket_owner
from khive.daemon.protocol import identity_key
from khive.errors import DaemonError

if TYPE_CHECKING:
    from khive.daemon.server import DaemonServer
    from khive.runtime import Runtime

log = logging.getLogger("khive.daemon")

STOP_GRACE_SECONDS = 30.0


def probe(settings: DaemonSettings, timeout: float = 1.0) -> dict[str, Any] | None:
    """The status of a daemon answering on the socket, or None when nothing live answers."""
    try:
        with DaemonConnection.open(settings.socket, timeout=timeout) as connection:
            return connection.call({"type": "status"})
    except (OSError, DaemonError):
        return None


def serve_foreground(project: Path, env: Mapping[str, str], settings: DaemonSettings, *,
                     idle_seconds: float | None = None) -> None:
    """``khive daemon run`` and ``python -m khive.daemon``: log to stderr and serve until stopped."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    if idle_seconds:
        settings = replace(settings, idle_seconds=float(idle_seconds))
    run_daemon(project, env, settings)


def run_daemon(project: Path, env: Mapping[str, str], settings: DaemonSettings) -> None:
    """Serve ``project`` on ``settings.socket`` until stopped (stop frame, SIGTERM/SIGINT, idle)."""
    from khive.bootstrap import open_runtime

    settings.check_socket_path()
    ensure_private_dir(settings.home)
    ensure_private_dir(settings.socket.parent)
    running = probe(settings)
    if running is not None:
        raise DaemonError(f"a khive daemon is already running on {settings.socket} (pid {running.get('pid')}, "
                          f"project {running.get('project')}); stop it first: khive daemon stop",
                          code="daemon_running", details={"pid": running.get("pid")})
    lock = _lock_pid_file(settings.pid_file)
    try:
        _remove_stale_socket(settings.socket)
        runtime = open_runtime(project, env)
        server_id = identity_key(project, env)
        anyio.run(_serve, runtime, settings, server_id)
    finally:
        lock.seek(0)
        lock.truncate()
        lock.close()


def _lock_pid_file(path: Path) -> IO[str]:
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise DaemonError(f"another khive daemon (pid {holder}) holds {path}; it is starting or running: "
                          "khive daemon status", code="daemon_running", details={"pid": holder}) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _remove_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise DaemonError(f"{path} exists and is not a socket; remove it or set KHIVE_SOCKET elsewhere",
                          code="daemon_unavailable", details={"socket": str(path)})
    check_socket_owner(path)  # another user's socket is not ours to remove (nor to listen in its place)
    log.info("removing stale socket %s (no daemon holds the pid lock)", path)
    path.unlink()


async def _serve(runtime: Runtime, settings: DaemonSettings, server_id: str) -> None:
    from khive.daemon.server import DaemonServer
    from khive.daemon.warm import warm_all

    server = DaemonServer(runtime, settings, server_id)
    previous = os.umask(0o177)  # the socket is born 0600: no window where another user could connect
    try:
        listener = await anyio.create_unix_listener(settings.socket)
    finally:
        os.umask(previous)
    os.chmod(settings.socket, 0o600)
    bound = os.stat(settings.socket).st_ino
    log.info("listening on %s: pid %d, project %s, config_id %s, idle timeout %g s", settings.socket, os.getpid(),
             runtime.project, server_id, settings.idle_seconds)
    try:
        async with anyio.create_task_group() as handlers:
            async with anyio.create_task_group() as background:
                background.start_soon(listener.serve, server.handle, handlers)
                background.start_soon(warm_all, runtime, server.warm)  # after bind: never ahead of a request
                background.start_soon(_recover_audit, runtime)
                background.start_soon(server.watch_idle)
                background.start_soon(_watch_signals, server)
                await server.stopping.wait()
                background.cancel_scope.cancel()
            await listener.aclose()
            _unlink_if_ours(settings.socket, bound)
            with anyio.move_on_after(STOP_GRACE_SECONDS):
                while server.active:
                    await anyio.sleep(0.02)
            handlers.cancel_scope.cancel()
    finally:
        _unlink_if_ours(settings.socket, bound)
        await runtime.aclose()
        log.info("stopped (%s) after %d requests", server.stop_reason or "cancelled", server.requests_served)


async def _recover_audit(runtime: Runtime) -> None:
    """Ops a dead process started and never finished are recorded ``interrupted`` (ADR 0029)."""
    try:
        found = await runtime.audit.recover()
    except Exception:  # the first request's audit write tries again (and fails its ops if it cannot)
        log.exception("audit recovery failed")
        return
    if found:
        log.info("audit: %d ops of processes that are gone recorded as interrupted", found)


async def _watch_signals(server: DaemonServer) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            server.stop(f"signal {signal.Signals(signum).name}")
            return


def _unlink_if_ours(path: Path, inode: int) -> None:
    try:
        if os.stat(path).st_ino == inode:
            path.unlink()
    except FileNotFoundError:
        pass
