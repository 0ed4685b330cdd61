"""Where the daemon lives and how it is configured: everything read from the environment is read here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from khive.errors import ConfigError, DaemonError

SOCKET_NAME = "khived.sock"
DEFAULT_IDLE_SECONDS = 1800.0
DEFAULT_SPAWN_WAIT_SECONDS = 3.0
_MAX_SOCKET_PATH = 107  # sun_path is 108 bytes including the terminating NUL


@dataclass(frozen=True, slots=True)
class DaemonSettings:
    socket: Path
    home: Path  # pid file, log and spawn lock
    disabled: bool = False  # KHIVE_NO_DAEMON=1: always dispatch in-process
    strict: bool = False  # KHIVE_DAEMON_STRICT=1: a fallback becomes a per-op error
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    spawn_wait: float = DEFAULT_SPAWN_WAIT_SECONDS

    @property
    def pid_file(self) -> Path:
        return self.home / "khived.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "khived.log"

    @property
    def spawn_lock(self) -> Path:
        return self.home / "khived.spawn.lock"

    def check_socket_path(self) -> None:
        if len(str(self.socket).encode()) > _MAX_SOCKET_PATH:
            raise DaemonError(f"socket path {self.socket} is longer than {_MAX_SOCKET_PATH} bytes, the Unix "
                              "limit; set KHIVE_SOCKET to a shorter path", code="daemon_unavailable",
                              details={"socket": str(self.socket), "fix": "export KHIVE_SOCKET=/tmp/<you>/khived.sock"})


def settings_from_env(env: Mapping[str, str], home_dir: Path | None = None) -> DaemonSettings:
    """``KHIVE_SOCKET`` (default ``$KHIVE_HOME/khived.sock``, ``KHIVE_HOME`` default ``~/.khive``).

    The pid file and log sit in ``KHIVE_HOME`` when it is set, else beside the socket.
    """
    home_env = env.get("KHIVE_HOME", "").strip()
    base = Path(home_env).expanduser() if home_env else (home_dir or Path.home()) / ".khive"
    socket_env = env.get("KHIVE_SOCKET", "").strip()
    socket = Path(socket_env).expanduser() if socket_env else base / SOCKET_NAME
    home = base if home_env or not socket_env else socket.parent
    return DaemonSettings(
        socket=socket.absolute(), home=home.absolute(),
        disabled=_flag(env, "KHIVE_NO_DAEMON"), strict=_flag(env, "KHIVE_DAEMON_STRICT"),
        idle_seconds=_seconds(env, "KHIVE_DAEMON_IDLE", DEFAULT_IDLE_SECONDS),
        spawn_wait=_seconds(env, "KHIVE_DAEMON_SPAWN_WAIT", DEFAULT_SPAWN_WAIT_SECONDS),
    )


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of seconds",
                          details={"variable": name, "fix": f"export {name}={default:g}"}) from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {raw}",
                          details={"variable": name, "fix": f"export {name}={default:g}"})
    return value


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) 0700; an existing directory is left as it is (the socket is 0600)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
