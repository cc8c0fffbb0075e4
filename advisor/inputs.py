"""Reading files a user names: only regular files, of a bounded size, as strict JSON.

Every file cachewise reads on a user's word (a plan, a recommendation, a raw snapshot, a
journal, a trace) goes through here, so that none of them can hang it or exhaust its memory: a
FIFO or a character device (/dev/zero) is refused before a byte is read (the file is opened
without blocking and checked on the open descriptor, so it cannot be swapped in between), a file
larger than its kind can be is refused by its size, and JSON is parsed strictly: no key twice
(JSON's "last one wins" would let a second "argv" hide behind the first), no NaN or Infinity,
and no nesting deeper than :data:`MAX_DEPTH`.

Errors are :class:`Unreadable` and :class:`BadJson` with a short reason (``why``) that each
caller words into its own refusal ("cannot read the plan FILE: why").
"""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
from collections.abc import Collection
from pathlib import Path
from typing import IO, Any

MiB = 1 << 20
MAX_DEPTH = 64  # no file cachewise writes nests deeper than about 8
COMPRESSED = {  # magic numbers of compressed files, and the tool that decompresses them
    b"\x1f\x8b": "gzip (gunzip)",
    b"\xfd7zXZ\x00": "xz (unxz)",
    b"\x28\xb5\x2f\xfd": "zstd (unzstd)",
    b"BZh": "bzip2 (bunzip2)",
    b"\x04\x22\x4d\x18": "lz4 (unlz4)",
}


class Unreadable(ValueError):
    """A file cannot be read as an input; ``why`` says why, in a few words."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Untrusted(Unreadable):
    """A file root would act on is owned, or can be written, by another user."""


class BadJson(ValueError):
    """A file's text is not JSON cachewise accepts; ``why`` says why."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def trust_problem(st: os.stat_result, owners: Collection[int]) -> str | None:
    """Why a file with this stat is not one root may act on (None: it is): owned by someone
    outside ``owners``, or writable by its group or by everyone."""
    if st.st_uid not in owners:
        return f"it belongs to {_owner(st.st_uid)}"
    if st.st_mode & 0o022:
        return "other users can write to it"
    return None


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = True, owners: Collection[int] | None = None
) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on ``path``, which must be a regular file, and its stat.
    The open never blocks (a FIFO without a writer would) and the checks are on the descriptor.
    ``follow=False`` refuses a symbolic link as the last component; ``owners``: the file must
    belong to one of them and be writable by nobody else (:class:`Untrusted`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == 40 and not follow:  # ELOOP: O_NOFOLLOW met a link
            raise Unreadable("it is a symbolic link") from None
        raise Unreadable(exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"it is {_kind(st.st_mode)}, not a regular file")
        why = trust_problem(st, owners) if owners is not None else None
        if why:
            raise Untrusted(why)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bytes(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True, owners: Collection[int] | None = None
) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes (see open_regular)."""
    fd, _ = open_regular(path, follow=follow, owners=owners)
    return read_fd(fd, limit)


def read_fd(fd: int, limit: int) -> bytes:
    """The whole of the regular file open on ``fd`` (which this closes), at most ``limit``
    bytes; the descriptor may have been opened without blocking."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"it is {_kind(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > limit:
            raise Unreadable(f"it is {_size(st.st_size)}, more than the {_size(limit)} such a file can be")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None
    if len(data) > limit:  # it grew while being read
        raise Unreadable(f"it is more than the {_size(limit)} such a file can be")
    return data


def read_text(
    path: str | os.PathLike[str], limit: int, *, follow: bool = True, owners: Collection[int] | None = None
) -> str:
    """A regular file of at most ``limit`` bytes, as UTF-8 text."""
    return decode(read_bytes(path, limit, follow=follow, owners=owners))


def decode(data: bytes) -> str:
    """A file's bytes as UTF-8 text; Unreadable for a compressed file or one that is not text."""
    packed = compressed(data)
    if packed:
        raise Unreadable(f"it is compressed with {packed}: decompress it first")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("it is not UTF-8 text") from None


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """A regular file open for reading in binary, for inputs read as a stream (traces)."""
    fd, _ = open_regular(path)
    return os.fdopen(fd, "rb")


def compressed(head: bytes) -> str | None:
    """The compressor (and its tool) whose magic number ``head`` starts with, if any."""
    return next((tool for magic, tool in COMPRESSED.items() if head.startswith(magic)), None)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadJson(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON number")


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, counted outside strings."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json(text: str) -> Any:
    """``text`` as JSON, strictly (see the module's docstring); BadJson saying why not. Files
    under a MiB have their nesting counted first; in larger ones (snapshots) Python's own
    recursion limit stops a deep one, and the strict readers never follow nesting their
    dataclasses do not have."""
    if len(text) < MiB and _depth(text) > MAX_DEPTH:
        raise BadJson(f"it nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except BadJson:
        raise
    except RecursionError:
        raise BadJson("it nests too deeply") from None
    except ValueError as exc:
        raise BadJson(str(exc)) from None


def load_json(path: str | os.PathLike[str], limit: int) -> Any:
    """A regular file of at most ``limit`` bytes, parsed as strict JSON."""
    return parse_json(read_text(path, limit))


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (not following a final link)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
