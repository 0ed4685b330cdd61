"""The project file store: the one way packs read and write project files (ADR 0007).

Paths are project-relative POSIX strings (``wiki/global/orders.md``). Writes are atomic (temp
file, fsync, rename, fsync of the directory), read-modify-write runs under a per-path lock that
holds across threads and processes, and each change can optionally become one git commit.

Every path is resolved before it is read or written (ADR 0032): a symlink that stays inside the
project is followed, one that leaves it (or lands in ``.khive/`` or ``.git/``) is refused with
``path_outside_project``. Code that needs a real ``Path`` under the project (run directories,
caches) gets it from ``inside``, the same check.
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from stat import S_ISLNK, S_ISREG

from khive.atomicfile import fsync_all, fsync_dir, replace_bytes, write_temp
from khive.errors import KhiveError
from khive.project.locate import STATE_DIR
from khive.project.locks import exclusive
from khive.textcheck import decode_error

logger = logging.getLogger(__name__)

DEFAULT_AUTHOR = ("khive", "khive@localhost")
GIT_TIMEOUT_SECONDS = 60
_LOCK_DIR = f"{STATE_DIR}/locks"
_TEMP_RE = re.compile(r"\..+\.[0-9a-f]{12}\.tmp\Z")
_AUTHOR_RE = re.compile(r"([^<>\n\0]+?)\s*<([^<>\n\0]+)>")
_PATH_FIX = "use a project-relative POSIX path such as wiki/global/orders.md"
# Below the file system's 255-byte name and 4096-byte path limits, leaving room for the temp name of an
# atomic write (".<name>.<12 hex>.tmp") and for the project's own directory.
MAX_NAME_BYTES = 200
MAX_PATH_BYTES = 1024


@dataclass(frozen=True)
class WriteResult:
    path: str
    sha256: str | None  # of the content now on disk; None when the file does not exist
    bytes: int
    changed: bool
    commit: str | None = None  # the commit recording this change, when one was made
    commit_error: str | None = None  # git failed; the file change itself stands


@dataclass(frozen=True)
class FileStat:
    mtime_ns: int
    size: int


class PathOutsideProject(KhiveError):
    """A project path that leads, through a symlink, out of the project (or into .khive/ or .git/)."""

    code = "path_outside_project"


def inside(root: Path, path: str | Path) -> Path:
    """The real path of ``path`` (project-relative, or absolute under ``root``), symlinks followed;
    ``PathOutsideProject`` when it leaves ``root``, or reaches ``.khive/`` or ``.git/`` only by a link."""
    base = os.path.realpath(root)
    relative = os.fspath(path)
    if os.path.isabs(relative):
        relative = _under(relative, (os.path.abspath(root), base))
    return _contained(base, os.path.join(base, relative))


def _contained(base: str, target: str) -> Path:
    """``inside`` for a ``target`` spelled under ``base``, the project root's own real path."""
    real = _resolve_below(base, target)
    if real != base and not real.startswith(base + os.sep):
        raise _outside(base, target, "leads out of the project through a symlink")
    if _managed(base, real) and not _managed(base, os.path.normpath(target)):
        raise _outside(base, target, "leads into .khive/ or .git/ through a symlink")
    return Path(real)


def _resolve_below(base: str, target: str) -> str:
    """``os.path.realpath(target)`` for a target under the real ``base``, checking only the components
    below it (one ``lstat`` each) until a symlink turns up, which ``realpath`` then follows."""
    if not target.startswith(base + os.sep):
        return os.path.realpath(target)
    parts = [part for part in target[len(base) + 1:].split(os.sep) if part not in ("", ".")]
    if ".." in parts:
        return os.path.realpath(target)
    current = base
    for index, part in enumerate(parts):
        candidate = os.path.join(current, part)
        try:
            is_link = S_ISLNK(os.lstat(candidate).st_mode)
        except (FileNotFoundError, NotADirectoryError):  # nothing further can be a link
            return os.path.join(candidate, *parts[index + 1:])
        if is_link:
            return os.path.realpath(os.path.join(candidate, *parts[index + 1:]))
        current = candidate
    return current


def _under(path: str, roots: tuple[str, ...]) -> str:
    """``path`` relative to whichever spelling of the project root it starts with."""
    lexical = os.path.normpath(path)
    for root in roots:
        if lexical == root or lexical.startswith(root + os.sep):
            return os.path.relpath(lexical, root)
    raise PathOutsideProject(f"{path!r} is not inside the project ({roots[-1]}); khive reads and writes only "
                             "inside the project", details={"path": path})


def _managed(base: str, path: str) -> bool:
    """Inside ``.khive/`` or a ``.git/`` directory: khive's state and git's, never a page."""
    if not path.startswith(base + os.sep):
        return False
    parts = path[len(base) + 1:].split(os.sep)
    return parts[0] == STATE_DIR or ".git" in parts


def _outside(base: str, target: str, why: str) -> PathOutsideProject:
    """Name the project path and the link that leaves, never where the link points."""
    shown = os.path.relpath(target, base) if target.startswith(base + os.sep) else target
    link = _first_link(base, target)
    via = f" ({link} is a symlink)" if link and link != shown else ""
    fix = "replace the symlink with the file itself, or a symlink to a place inside the project"
    return PathOutsideProject(f"{shown!r} {why}{via}; khive reads and writes only inside the project; fix: {fix}",
                              details={"path": shown, "symlink": link or shown, "fix": fix})


def _first_link(base: str, target: str) -> str | None:
    """The first component of ``target`` below ``base`` that is a symlink, project-relative."""
    if not target.startswith(base + os.sep):
        return None
    current = base
    for part in PurePosixPath(target[len(base) + 1:]).parts:
        current = os.path.join(current, part)
        if os.path.islink(current):
            return os.path.relpath(current, base)
    return None


class FileStore:
    def __init__(self, root: Path, *, git_commit: bool = False) -> None:
        self.root = root.resolve()
        self._base = str(self.root)  # already real: containment checks resolve only the path below it
        self.git_commit = git_commit
        self._git_exe = shutil.which("git") if git_commit else None
        self._in_work_tree: bool | None = None  # probed once, on the first commit

    # -- reading (no locks: os.replace makes every read see a whole file) --

    def real(self, path: str) -> Path:
        """The real path of a project-relative path: ``invalid_path`` or ``path_outside_project`` if it
        is not one the store may touch."""
        return _contained(self._base, os.path.join(self._base, clean_path(path)))

    def read_bytes(self, path: str) -> bytes | None:
        return self._read_real(path, self.real(path))

    def read_text(self, path: str) -> str | None:
        data = self.read_bytes(path)
        return None if data is None else _decoded(path, data)

    def exists(self, path: str) -> bool:
        """A file inside the project; a path that leaves it is not there (and is never looked at)."""
        try:
            return self.real(path).is_file()
        except PathOutsideProject:
            return False

    def stat(self, path: str) -> FileStat | None:
        try:
            st = self.real(path).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileStat(mtime_ns=st.st_mtime_ns, size=st.st_size) if S_ISREG(st.st_mode) else None

    # -- writing --

    def write_text(self, path: str, text: str, *, author: str | None = None,
                   message: str | None = None) -> WriteResult:
        return self.update(path, lambda _old: text, author=author, message=message)

    def delete(self, path: str, *, author: str | None = None, message: str | None = None) -> bool:
        return self.update(path, lambda _old: None, author=author, message=message).changed

    def update(self, path: str, fn: Callable[[str | None], str | None], *, author: str | None = None,
               message: str | None = None) -> WriteResult:
        """Read-modify-write under the path's lock; ``fn`` gets the text (None if absent) and returns
        the new text, or None to delete. ``fn`` must not write the same path through the store."""
        clean = clean_path(path)
        identity = parse_author(author)
        target = self.real(clean)  # a symlink inside the project is written through, never replaced
        real = target.relative_to(self.root).as_posix()  # one lock and one commit per file, whatever its alias
        with exclusive(self._lock_file(real)):
            old = self._read_real(clean, target)
            new_text = fn(None if old is None else _decoded(clean, old))
            new = None if new_text is None else new_text.encode("utf-8")
            if new == old:
                return WriteResult(clean, content_sha256(new), len(new or b""), changed=False)
            if new is None:
                target.unlink()
                fsync_dir(target.parent)
            else:
                replace_bytes(target, new, durable=True)
            commit, error = None, None
            if self.git_commit:
                # Still under the path lock, so the commit records exactly this content and author.
                verb = "delete" if new is None else "write"
                commit, error = self._commit(real, identity, message or f"khive: {verb} {clean}")
        return WriteResult(clean, content_sha256(new), len(new or b""), changed=True, commit=commit, commit_error=error)

    def replace_many(self, writes: Sequence[tuple[str, str | None, str]], *, author: str | None = None,
                     message: Callable[[str], str], stale: Callable[[str], Exception]) -> list[WriteResult]:
        """Write each ``(path, expected text, new text)`` in order, as ``update`` would with a function that
        checks the expected text (None: no file), but with the durability paid once for all: every new file's
        data reaches the disk (the fsyncs issued together) before the first rename, and each folder is synced
        once at the end. A crash leaves each file whole, old or new. At the first file that no longer holds
        its expected text, ``stale(path)`` is raised; the files before it are written, none after it."""
        identity = parse_author(author)
        prepared: list[tuple[str, Path, bytes | None, bytes, Path]] = []  # (path, target, expected, new, temp)
        try:
            for path, expected, text in writes:
                clean = clean_path(path)
                target = self.real(clean)
                new = text.encode("utf-8")
                prepared.append((clean, target, None if expected is None else expected.encode("utf-8"), new,
                                 write_temp(target, new)))
            fsync_all(temp for *_, temp in prepared)
            return [self._swap(*item, identity, message, stale) for item in prepared]
        finally:
            for *_, temp in prepared:
                temp.unlink(missing_ok=True)  # the temp files not renamed (after a stale file, or an error)
            for folder in {target.parent for _, target, *_ in prepared}:
                fsync_dir(folder)

    def _swap(self, clean: str, target: Path, expected: bytes | None, new: bytes, temp: Path,
              identity: tuple[str, str], message: Callable[[str], str], stale: Callable[[str], Exception]
              ) -> WriteResult:
        """One prepared file renamed into place under its lock (and committed, when the store commits)."""
        real = target.relative_to(self.root).as_posix()
        with exclusive(self._lock_file(real)):
            current = self._read_real(clean, target)
            if current == new:
                return WriteResult(clean, content_sha256(new), len(new), changed=False)
            if current != expected:
                raise stale(clean)
            os.replace(temp, target)
            commit, error = self._commit(real, identity, message(clean)) if self.git_commit else (None, None)
        return WriteResult(clean, content_sha256(new), len(new), changed=True, commit=commit, commit_error=error)

    @staticmethod
    def _read_real(path: str, target: Path) -> bytes | None:
        try:
            return target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except IsADirectoryError:
            raise _path_error(path, "is a directory, not a file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _path_error(path, "is a loop of symlinks") from None
            raise

    # -- listing --

    def list(self, prefix: str = "", suffix: str | None = None) -> builtins.list[str]:
        """Files whose project-relative path starts with ``prefix`` (a plain string prefix:
        ``wiki/glo`` matches ``wiki/global/a.md``), sorted; state and temp files are left out, and so
        is anything a symlink leads out of the project (logged: a listing is not refused for it)."""
        start = ""
        if prefix:
            start = clean_path(prefix) + ("/" if prefix.endswith("/") else "")
        top = self.root / start.rpartition("/")[0]
        try:
            _contained(self._base, str(top))  # the root is already real: only the path below it is resolved
        except PathOutsideProject as exc:
            logger.warning("khive: not listing %s: %s", start or ".", exc.message)
            return []
        found: builtins.list[str] = []
        stack = [str(top)]
        while stack:  # scandir: the entry types come with the listing, no stat per file
            directory = stack.pop()
            here = os.path.relpath(directory, self._base).replace(os.sep, "/")
            try:
                entries = os.scandir(directory)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    relative = name if here == "." else f"{here}/{name}"
                    if entry.is_dir(follow_symlinks=False):
                        if name != ".git" and not (here == "." and name == STATE_DIR):
                            stack.append(entry.path)
                    elif (relative.startswith(start) and not _TEMP_RE.match(name)
                          and (suffix is None or relative.endswith(suffix)) and self._listable(entry)):
                        found.append(relative)
        return sorted(found)

    def _listable(self, entry: os.DirEntry[str]) -> bool:
        """Not a folder (symlinked folders are not descended), and not a link that leaves the project."""
        if not entry.is_symlink():
            return True
        if entry.is_dir():
            return False
        try:
            self.real(os.path.relpath(entry.path, self._base).replace(os.sep, "/"))
        except KhiveError as exc:  # a link out of the project, or a name the store would refuse
            logger.warning("khive: not listing %s", exc.message)
            return False
        return True

    # -- internals --

    def _lock_file(self, key: str) -> Path:
        return self.root / _LOCK_DIR / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.lock"

    def _commit(self, path: str, identity: tuple[str, str], message: str) -> tuple[str | None, str | None]:
        """Commit exactly ``path``; returns (commit sha, error). Never raises for git failures."""
        # One project-wide lock: git's index.lock admits one writer per repository.
        with exclusive(self.root / _LOCK_DIR / "git.lock"):
            try:
                if not self._git_ready():
                    return None, None
                if (self.root / path).exists():
                    self._git("add", "--", path)
                else:
                    self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
                if self._git("diff", "--cached", "--quiet", "--", path, check=False).returncode == 0:
                    return None, None  # git already holds this content (or never tracked the path)
                name, email = identity
                self._git("commit", "-q", "--only", "-m", message, "--author", f"{name} <{email}>", "--", path,
                          author=identity)
                return self._git("rev-parse", "HEAD").stdout.strip(), None
            except (_GitFailed, OSError, subprocess.TimeoutExpired) as exc:
                logger.warning("khive: %s was written but not committed: %s", path, exc)
                return None, str(exc)

    def _git_ready(self) -> bool:
        if self._in_work_tree is None:
            if self._git_exe is None:
                raise _GitFailed("git_commit is on but no git executable was found on PATH")
            probe = self._git("rev-parse", "--is-inside-work-tree", check=False)
            self._in_work_tree = probe.returncode == 0 and probe.stdout.strip() == "true"
            if not self._in_work_tree and "not a git repository" not in probe.stderr:
                logger.warning("khive: not committing in %s: %s", self.root, probe.stderr.strip())
        return self._in_work_tree

    def _git(self, *args: str, check: bool = True,
             author: tuple[str, str] = DEFAULT_AUTHOR) -> subprocess.CompletedProcess[str]:
        assert self._git_exe is not None
        # A fresh environment: identity comes from here, and a GIT_DIR or GIT_INDEX_FILE inherited
        # from a hook must not redirect the commit. HOME keeps the user's safe.directory settings.
        env = {"HOME": os.path.expanduser("~"), "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0",
               "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
               "GIT_COMMITTER_NAME": DEFAULT_AUTHOR[0], "GIT_COMMITTER_EMAIL": DEFAULT_AUTHOR[1]}
        done = subprocess.run([self._git_exe, "-C", str(self.root), *args], env=env, capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_SECONDS, check=False)
        if check and done.returncode != 0:
            raise _GitFailed(f"git {args[0]} exited {done.returncode}: {done.stderr.strip()}")
        return done


class _GitFailed(Exception):
    pass


def clean_path(path: str) -> str:
    """The canonical form of a project-relative path, or KhiveError(code="invalid_path")."""
    pure = PurePosixPath(path)
    if not path or "\\" in path or "\0" in path:
        raise _path_error(path, "is empty or holds a backslash or NUL")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise _path_error(path, "holds a lone surrogate (bytes that are not UTF-8)") from None
    if size > MAX_PATH_BYTES:
        raise _path_error(path, f"is {size} bytes long; the limit is {MAX_PATH_BYTES}")
    longest = max(pure.parts, key=lambda part: len(part.encode("utf-8")), default="")
    if len(longest.encode("utf-8")) > MAX_NAME_BYTES:
        raise _path_error(path, f"has a name of {len(longest.encode('utf-8'))} bytes; each file or directory "
                          f"name is at most {MAX_NAME_BYTES} bytes")
    if pure.is_absolute():
        raise _path_error(path, "is absolute")
    if ".." in pure.parts:
        raise _path_error(path, "escapes the project with '..'")
    if not pure.parts:
        raise _path_error(path, "names the project root, not a file")
    if pure.parts[0] == STATE_DIR or ".git" in pure.parts:
        raise _path_error(path, f"points into {STATE_DIR}/ or .git/, which khive and git manage")
    return pure.as_posix()


def parse_author(author: str | None) -> tuple[str, str]:
    """``"Name <email>"`` or a bare name (email khive@localhost); None is khive itself."""
    if author is None:
        return DEFAULT_AUTHOR
    text = author.strip()
    match = _AUTHOR_RE.fullmatch(text)
    if match:
        return match[1], match[2]
    if text and not set(text) & set("<>\n\0"):
        return text, DEFAULT_AUTHOR[1]
    raise KhiveError(f"invalid author {author!r}; fix: use 'Name <email>' or a plain name",
                     code="invalid_author", details={"author": author, "fix": "use 'Name <email>' or a plain name"})


def _path_error(path: str, why: str) -> KhiveError:
    shown = path if len(path) <= 120 else f"{path[:100]}...({len(path)} characters)"
    return KhiveError(f"invalid path {shown!r}: {why}; fix: {_PATH_FIX}", code="invalid_path",
                      details={"path": shown, "fix": _PATH_FIX})


def _decoded(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise KhiveError(f"{path}:{line}: {decode_error(exc).describe()}; project files are UTF-8 text: save it "
                         "as UTF-8", code="invalid_encoding", details={"path": path, "line": line}) from None


def content_sha256(data: bytes | None) -> str | None:
    """A file's sha256 as a write reports it; None for no file."""
    return None if data is None else hashlib.sha256(data).hexdigest()
