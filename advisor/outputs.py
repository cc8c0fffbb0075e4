"""Writing files, atomically and only where asked: the one way cachewise writes an output.

A file is written whole to a temporary file in its folder, flushed to disk, and then linked (a
new file: refused if one appeared meanwhile) or renamed (a file cachewise replaces, such as the
Prometheus textfile) into place, so a reader never sees half a file and a full disk or a crash
leaves nothing behind. The folder is opened once and every step works relative to its
descriptor, never following a link at the file's own name; a folder reached through a link
that another user owns is refused (root would write where that user points it).
"""

from __future__ import annotations

import errno
import os
import pwd
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


class Unsafe(ValueError):
    """The output cannot be written where asked; ``why`` says why."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def walk(path: Path) -> int:
    """A descriptor for the directory ``path``, reached one component at a time from / (or the
    working directory), each opened relative to the one before without following a link: a
    link is followed only when this user or root made it, and then read once. Nothing on the way
    can be swapped between a check and the open. Unsafe for another user's link; OSError when
    a component is missing or not a directory."""
    me = os.geteuid()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    todo = list(path.parts)
    fd = os.open("/" if path.is_absolute() else ".", flags)
    if path.is_absolute():
        todo = todo[1:]
    hops = 0
    try:
        while todo:
            part = todo.pop(0)
            if part == ".":
                continue
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                st = os.lstat(part, dir_fd=fd)
                if not stat.S_ISLNK(st.st_mode):
                    raise
                if st.st_uid not in (me, 0):
                    raise Unsafe(
                        f"the way to it goes through {part}, a link that belongs to {_owner(st.st_uid)}"
                    ) from None
                hops += 1
                if hops > 40:
                    raise Unsafe("the way to it goes through too many links") from None
                target = Path(os.readlink(part, dir_fd=fd))
                todo[:0] = list(target.parts[1:] if target.is_absolute() else target.parts)
                if target.is_absolute():
                    os.close(fd)
                    fd = os.open("/", flags)
                continue
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def folder_problem(folder: Path) -> str | None:
    """Why files should not be written in ``folder`` (None: they may, or it is missing, which
    the caller says): the way to it goes through a link that belongs to someone other than this
    user or root."""
    try:
        os.close(walk(folder))
    except Unsafe as exc:
        return exc.why
    except OSError:
        return None
    return None


def open_folder(folder: Path) -> int:
    """A descriptor for the folder an output goes in (Unsafe, or OSError)."""
    return walk(folder)


def _temporary(dfd: int, name: str, data: bytes | Callable[[BinaryIO], object], mode: int | None = None) -> str:
    """``data`` in a new temporary file beside ``name``, flushed to disk; its name. ``data`` may
    be a function that writes the file itself (a large output, written as it is made). ``mode``:
    exactly these permissions, whatever the umask."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    # 0644 at most: with a umask of 000 a plan would otherwise be anyone's to edit (and root
    # would then refuse to apply it).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        if callable(data):
            with os.fdopen(os.dup(fd), "wb") as f:
                data(f)
        else:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dfd)
        raise
    os.close(fd)
    return tmp


def write_new(path: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
    """``data`` as the new file ``path``, whole or not at all: FileExistsError if anything is
    at that name (a link too), Unsafe or OSError when it cannot be written. ``data`` may be a
    function that writes a (seekable) file."""
    folder = path.parent if str(path.parent) else Path(".")
    dfd = open_folder(folder)
    try:
        tmp = _temporary(dfd, path.name, data)
        try:
            try:
                os.link(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                # A file system without hard links: rename, after looking again.
                if _exists(dfd, path.name):
                    raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
                os.rename(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            os.fsync(dfd)
        finally:
            if _exists(dfd, tmp):
                os.unlink(tmp, dir_fd=dfd)
    finally:
        os.close(dfd)


def replace_file(path: Path, data: bytes, ours: Callable[[bytes], bool], mode: int | None = None) -> None:
    """``data`` as ``path``, replacing the file there atomically, but only a regular file whose
    first bytes ``ours`` recognises as one cachewise wrote (Unsafe otherwise: a link, or
    someone else's file). ``mode``: the file's permissions, whatever the umask."""
    folder = path.parent if str(path.parent) else Path(".")
    dfd = open_folder(folder)
    try:
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            fd = -1
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Unsafe(f"{path} is a link; cachewise replaces only a file it wrote") from None
            raise
        if fd >= 0:
            try:
                st = os.fstat(fd)
                head = os.read(fd, 256) if stat.S_ISREG(st.st_mode) else b""
            finally:
                os.close(fd)
            if not stat.S_ISREG(st.st_mode) or not ours(head):
                raise Unsafe(f"{path} exists and was not written by cachewise")
        tmp = _temporary(dfd, path.name, data, mode)
        try:
            os.rename(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            os.fsync(dfd)
        finally:
            if _exists(dfd, tmp):
                os.unlink(tmp, dir_fd=dfd)
    finally:
        os.close(dfd)


def _exists(dfd: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return True
