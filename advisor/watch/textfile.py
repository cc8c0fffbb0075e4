"""The node_exporter textfile on disk (``--prometheus FILE``): checked before anything is read,
written atomically, and only over a file cachewise wrote (its first line is :data:`MARKER`).
advisor/watch/export.py makes the metrics it holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.outputs import replace_file

MARKER = "# cachewise textfile: written by cachewise status or watch, replaced whole on each update\n"


def written_by_us(head: bytes) -> bool:
    """Whether a file starts as a textfile cachewise wrote (the only kind it replaces)."""
    return head.startswith(MARKER.encode())


def write_textfile(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, replacing only a textfile cachewise wrote before
    (outputs.Unsafe for anything else at that name: a link, or another program's file)."""
    replace_file(path, text.encode(), written_by_us)


def export_problem(path: Path) -> str | None:
    """Why ``path`` cannot take the textfile (None: it can), looked at before any sample is
    read: a link, anything but a regular file (a FIFO, a device, which are never opened), or a
    file cachewise did not write, is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a link; cachewise replaces only a file it wrote"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        head = os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    return None if written_by_us(head) else f"{path} exists and was not written by cachewise"
