"""The state directory, as root may trust it: the history database, the apply journals, the
audit log and the apply lock live here.

A directory another user owns or can write to is refused: whoever can write there could plant
links that root then follows (a history "database" linked to /etc/shadow, a journal linked to a
file root appends to). It is created with its own modes (0700, parents 0755) whatever the umask,
and every file in it is opened relative to the directory's descriptor, never following a link
(:func:`open_in`), so nothing can be swapped between a check and an open.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

from advisor.errors import Described, codes, next_step
from advisor.outputs import Unsafe, walk

codes({"state-dir-unsafe": "{why}"})


class StateDirError(Described):
    """The state directory cannot be used safely; the message says why."""

    CODE = "state-dir-unsafe"


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _refuse(path: Path, why: str) -> StateDirError:
    return StateDirError(f"the state directory {path} {why}", next=[next_step("choose-state-dir")])


def _makedirs(path: Path) -> None:
    """Make ``path`` and its missing parents: parents 0755, the directory itself 0700, set with
    chmod so a umask of 000 cannot leave them writable by others."""
    missing: list[Path] = []
    at = path
    while not os.path.lexists(at) and at != at.parent:
        missing.append(at)
        at = at.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700 if d == path else 0o755)


def check(path: Path) -> None:
    """Refused (StateDirError) when ``path`` is not a directory this user may trust: reached
    without another user's link (outputs.walk), owned by this user or root, and writable by no
    one else; the checks are made on the directory's own descriptor. OSError when it cannot be
    looked at."""
    os.close(_open_checked(path))


def _open_checked(path: Path) -> int:
    me = os.geteuid()
    if os.path.islink(path) and not os.path.exists(path):
        raise _refuse(path, f"is a link to {os.readlink(path)}, which does not exist")
    try:
        fd = walk(path)
    except Unsafe as exc:
        raise _refuse(path, f"cannot be trusted: {exc.why}") from None
    except NotADirectoryError:
        raise _refuse(path, "is not a directory") from None
    st = os.fstat(fd)
    why = None
    if st.st_uid not in (me, 0):
        why = f"belongs to {_owner(st.st_uid)}, not to {_owner(me)}"
    elif st.st_mode & 0o022:
        why = "can be written by other users"
    if why:
        os.close(fd)
        raise _refuse(path, why)
    return fd


def ensure(path: Path) -> Path:
    """The state directory, made if missing and checked (see :func:`check`)."""
    if not os.path.lexists(path):
        _makedirs(path)
    check(path)
    return path


def open_dir(path: Path) -> int:
    """A descriptor for the directory ``path``, made if missing (0700) and checked as the state
    directory is (see :func:`check`); the caller closes it. StateDirError, or OSError."""
    if not os.path.lexists(path):
        _makedirs(path)
    return _open_checked(path)


def open_in(state: Path, *parts: str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A descriptor for ``state/parts...``, opened relative to the state directory's own
    descriptor and never through a link (each directory on the way is opened with O_NOFOLLOW).
    The caller closes it. Missing directories on the way are made (0700) when ``flags`` has
    O_CREAT."""
    fd = _open_checked(state)
    try:
        for part in parts[:-1]:
            try:
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if not flags & os.O_CREAT:
                    raise
                os.mkdir(part, 0o700, dir_fd=fd)
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except NotADirectoryError:
                if stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode):  # O_NOFOLLOW met a link
                    raise OSError(errno.ELOOP, "it is a link", part) from None
                raise
            os.close(fd)
            fd = sub
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
    finally:
        os.close(fd)
