"""The files the use cases write: always new files, never over one that exists, and never half
written (advisor/outputs.py: a temporary file beside it, linked into place), and never in a
folder reached through another user's link."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from advisor import outputs
from advisor.errors import codes, next_step
from cachewise.core.context import Refused

codes(
    {
        "output-exists": "{path} {how}; {what}",
        "output-folder-missing": "the folder {folder} does not exist; {what}",
        "output-folder-unwritable": "the folder {folder} is not writable; {what}",
        "output-folder-untrusted": "{folder} is not a folder cachewise writes in: {why}; {what}",
        "output-unwritable": "cannot write {path}: {why}; {what}",
    }
)


def check_output(path: Path, what: str = "nothing was written") -> None:
    """Refused, before any work starts, when ``path`` cannot be a new file: it exists (a
    dangling link too, which would write elsewhere), or its folder is missing, not writable, or
    reached through a link another user owns. ``what`` says what was not done."""
    choose = [next_step("choose-output")]
    if os.path.lexists(path):
        how = "is a link" if path.is_symlink() else "already exists"
        raise Refused("output-exists", path=path, how=how, what=what, next=choose)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise Refused("output-folder-missing", folder=folder, what=what, next=choose)
    why = outputs.folder_problem(folder)
    if why:
        raise Refused("output-folder-untrusted", folder=folder, why=why, what=what, next=choose)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refused("output-folder-unwritable", folder=folder, what=what, next=choose)


def write_new(path: Path, text: str | bytes | Callable[[BinaryIO], object], what: str) -> None:
    """Write ``text`` (or bytes, or what a function writes to the file) to the new file
    ``path``: all of it or nothing."""
    check_output(path, what)
    try:
        outputs.write_new(path, text.encode() if isinstance(text, str) else text)
    except FileExistsError:
        raise Refused(
            "output-exists", path=path, how="appeared meanwhile", what=what, next=[next_step("choose-output")]
        ) from None
    except outputs.Unsafe as exc:
        folder = path.parent if str(path.parent) else Path(".")
        raise Refused(
            "output-folder-untrusted", folder=folder, why=exc.why, what=what, next=[next_step("choose-output")]
        ) from None
    except OSError as exc:
        raise Refused(
            "output-unwritable", path=path, why=exc.strerror or exc, what=what, next=[next_step("choose-output")]
        ) from None
