"""The files the use cases write: always new files, never over one that exists, and never half
written (each goes to a temporary file beside it and is renamed into place)."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from advisor.errors import codes, next_step
from cachewise.core.context import Refused

codes(
    {
        "output-exists": "{path} {how}; {what}",
        "output-folder-missing": "the folder {folder} does not exist; {what}",
        "output-folder-unwritable": "the folder {folder} is not writable; {what}",
        "output-unwritable": "cannot write {path}: {why}; {what}",
    }
)


def check_output(path: Path, what: str = "nothing was written") -> None:
    """Refused, before any work starts, when ``path`` cannot be a new file: it exists (a
    dangling link too, which would write elsewhere), or its folder is missing or not writable.
    ``what`` says what was not done."""
    choose = [next_step("choose-output")]
    if os.path.lexists(path):
        how = "is a link" if path.is_symlink() else "already exists"
        raise Refused("output-exists", path=path, how=how, what=what, next=choose)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise Refused("output-folder-missing", folder=folder, what=what, next=choose)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refused("output-folder-unwritable", folder=folder, what=what, next=choose)


def write_new(path: Path, text: str, what: str) -> None:
    """Write ``text`` to the new file ``path``: all of it or nothing (a temporary file in the
    same folder, flushed to disk, then linked into place, which fails if ``path`` appeared)."""
    check_output(path, what)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # as open() would have made it (mkstemp makes 0600)
            with os.fdopen(fd, "w") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, path)  # unlike rename, refuses to replace a file that appeared meanwhile
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                check_output(path, what)  # a file system without hard links: rename, after looking again
                os.rename(tmp, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise Refused(
            "output-unwritable", path=path, why=exc.strerror or exc, what=what, next=[next_step("choose-output")]
        ) from None


def _umask() -> int:
    """This process's umask, read without changing it (Linux has it in /proc since 4.7)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
