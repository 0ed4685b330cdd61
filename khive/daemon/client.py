"""forward_or_spawn: send a request to the warm daemon, starting it when needed, else say why not.

Used by ``khive request``, ``khive mcp`` and ``khive serve``. The caller has parsed the text
already (a syntax error never reaches the daemon), and the daemon gets the parsed request, not the text
(ADR 0044): a request is parsed once. The answer is an envelope, or ``Local``: the
caller dispatches in-process. ``Local(chosen=True)`` is deliberate (``KHIVE_NO_DAEMON=1``); any
other ``Local`` is a fallback, which ``KHIVE_DAEMON_STRICT=1`` turns into a per-op error envelope
instead. A ``save_to`` argument names a file under the project's ``exports/`` (khive/sink.py), which
the daemon serving the project writes as well as this process would (ADR 0037).

Once a request frame is written, a lost answer is an error (``daemon_connection_lost``), never a
silent re-run, except one resend when every op's verb is read-only (the daemon's hello lists
the verbs that write).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from khive.abandon import Abandon
from khive.daemon import protocol
from khive.daemon.connection import DaemonConnection, Lost, NotSent, Progress, Sample
from khive.daemon.paths import DaemonSettings, ensure_private_dir
from khive.daemon.peer import UntrustedDaemon
from khive.errors import DaemonError
from khive.failure import failed_envelope as envelope_of_failure

if TYPE_CHECKING:
    from khive.dsl.nodes import Request
    from khive.services import Sampler

_NOT_LISTENING = (FileNotFoundError, ConnectionRefusedError)
_LOG_ROTATE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Local:
    """Dispatch in this process, and why; ``code`` is the error strict mode reports instead."""

    reason: str
    chosen: bool = False
    code: str = "daemon_unavailable"


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The envelope for the caller. ``answered`` is False when the daemon did not answer and this client
    wrote the (failed) envelope itself: the daemon was lost mid-request, or strict mode refused to fall back."""

    envelope: dict[str, Any]
    pid: int
    resent: bool = False
    answered: bool = True


@dataclass(frozen=True, slots=True)
class Call:
    """One request as the daemon needs it."""

    request: Request
    principal: str
    transport: str
    presentation: str = "agent"
    request_id: str = ""
    user: str = ""
    sampler: Sampler | None = None  # the caller's MCP sampler, when it has a session
    on_sample: Sample | None = None  # how the (blocking) client reaches that sampler
    client: str = ""  # what the MCP client calls itself (audit only)
    abandon: Abandon | None = None  # set when the MCP client cancels the call or leaves


def forward_or_spawn(call: Call, *, project: Path, env: Mapping[str, str], settings: DaemonSettings,
                     on_progress: Progress | None = None) -> Forwarded | Local:
    """The daemon's envelope for ``call``, or ``Local``; under strict mode a fallback is an error envelope."""
    if settings.disabled:
        return Local("KHIVE_NO_DAEMON=1", chosen=True)
    if not call.request_id:
        call = _with_id(call)
    outcome = _forward(call, project, env, settings, on_progress)
    if isinstance(outcome, Local) and settings.strict:
        return Forwarded(failed_envelope(call, outcome.code,
                                         f"KHIVE_DAEMON_STRICT=1 and the daemon was not used: {outcome.reason}",
                                         socket=str(settings.socket)), pid=0, answered=False)
    return outcome


def _forward(call: Call, project: Path, env: Mapping[str, str], settings: DaemonSettings,
             on_progress: Progress | None, *, resent: bool = False) -> Forwarded | Local:
    try:
        settings.check_socket_path()
        config_id = protocol.identity_key(project, env)
    except (DaemonError, OSError) as exc:
        return Local(f"cannot use the daemon: {getattr(exc, 'message', exc)}")
    connection = connect_or_spawn(settings, project, env)
    if isinstance(connection, Local):
        return connection
    with connection:
        try:
            hello = connection.call(protocol.hello(config_id))
        except DaemonError as exc:
            return Local(f"the daemon on {settings.socket} refused the hello ({exc.code}): {exc.message}")
        if hello.get("config_id") != config_id:
            return Local(f"the daemon on {settings.socket} (pid {hello.get('pid')}) serves another configuration "
                         f"(project {hello.get('project')}, config_id {hello.get('config_id')}; this process: "
                         f"{config_id})")
        sampling = bool(call.sampler.available) if call.sampler is not None else None
        frame = protocol.request(request_id=call.request_id, parsed=call.request, presentation=call.presentation,
                                 principal=call.principal, transport=call.transport, user=call.user,
                                 sampling=sampling, client=call.client)
        hang_up = nullcontext() if call.abandon is None else call.abandon.interrupting(connection.hang_up)
        try:
            with hang_up:
                envelope = connection.request(frame, on_progress, call.on_sample)
            return Forwarded(envelope, pid=int(hello.get("pid", 0)), resent=resent)
        except NotSent as exc:
            return Local(exc.message)
        except Lost as exc:
            if call.abandon is not None and call.abandon.is_set:  # no one waits for an answer: never resent
                return Forwarded(failed_envelope(call, "caller_left", "the caller left mid-request",
                                                 request_id=call.request_id),
                                 pid=int(hello.get("pid", 0)), resent=resent, answered=False)
            writes = sorted({op.verb for op in call.request.ops} & set(hello.get("writes", ())))
            if writes or resent:
                why = f"not resent because {', '.join(writes)} write" if writes else "the one resend was lost too"
                return Forwarded(failed_envelope(call, exc.code, f"{exc.message}; {why}; check the audit trail "
                                                 f"for request {call.request_id}", request_id=call.request_id),
                                 pid=int(hello.get("pid", 0)), resent=resent, answered=False)
            lost = f"the daemon (pid {hello.get('pid')}) went away mid-request"
        except DaemonError as exc:  # an error frame instead of an envelope: refused before dispatch
            return Local(f"the daemon on {settings.socket} refused the request ({exc.code}): {exc.message}")
    again = _forward(call, project, env, settings, on_progress, resent=True)  # read-only: resend once
    return replace(again, reason=f"{lost} and the resend found no daemon: {again.reason}") \
        if isinstance(again, Local) else again


def connect_or_spawn(settings: DaemonSettings, project: Path, env: Mapping[str, str]) -> DaemonConnection | Local:
    """A connection to the live daemon, spawning one (exactly one across concurrent clients) if none listens."""
    deadline = time.monotonic() + settings.spawn_wait
    try:
        found = _listening(settings.socket)
    except UntrustedDaemon as exc:  # never spawn beside it: that path is another user's
        return Local(exc.message, code=exc.code)
    except OSError as exc:
        return Local(f"cannot connect to {settings.socket}: {exc}")
    if found is not None:
        return found
    try:
        ensure_private_dir(settings.home)
        with _spawn_lock(settings.spawn_lock, deadline) as locked:
            if not locked:
                return Local(f"another client is starting the daemon and it did not come up within "
                             f"{settings.spawn_wait:g} s (log: {settings.log_file})")
            found = _listening(settings.socket)  # the client before us started it
            if found is not None:
                return found
            spawn_daemon(settings, project, env)
            pause = 0.01
            while time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 1.5, 0.1)
                found = _listening(settings.socket)
                if found is not None:
                    return found
    except UntrustedDaemon as exc:
        return Local(exc.message, code=exc.code)
    except OSError as exc:
        return Local(f"cannot start the daemon: {exc}")
    return Local(f"the daemon did not come up within {settings.spawn_wait:g} s (log: {settings.log_file})")


def _listening(socket: Path) -> DaemonConnection | None:
    """A connection when a daemon listens on ``socket``, None when nothing does (other errors raise)."""
    try:
        return DaemonConnection.open(socket)
    except _NOT_LISTENING:
        return None


def spawn_daemon(settings: DaemonSettings, project: Path, env: Mapping[str, str]) -> None:
    """Start ``python -m khive.daemon`` detached: own session, reparented away from this process, logging to a file."""
    import subprocess  # only on the spawn path: the warm path stays lean
    log_file = settings.log_file
    if log_file.exists() and log_file.stat().st_size > _LOG_ROTATE_BYTES:
        log_file.replace(log_file.with_name(log_file.name + ".1"))
    child_env = {**env, "KHIVE_SOCKET": str(settings.socket), "KHIVE_HOME": str(settings.home)}
    command = [sys.executable, "-m", "khive.daemon", "--detach", "--project", str(project)]
    with log_file.open("ab") as log:
        # The launcher forks the daemon and exits at once, so waiting here is short and leaves no zombie.
        launcher = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=child_env,
                                    cwd=project, start_new_session=True, close_fds=True)
        launcher.wait()


@contextmanager
def _spawn_lock(path: Path, deadline: float) -> Iterator[bool]:
    with path.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.02)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def failed_envelope(call: Call, code: str, message: str, /, **details: Any) -> dict[str, Any]:
    """Every op of ``call`` failed with the same error, shaped like dispatch's envelope (nothing ran here)."""
    return envelope_of_failure([op.verb for op in call.request.ops], call.request_id, code, message, **details)


def _with_id(call: Call) -> Call:
    return replace(call, request_id=os.urandom(16).hex())  # the shape of uuid4().hex, without the import

