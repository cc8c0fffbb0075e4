"""/etc/fstab and /etc/crypttab, parsed as systemd's generators and mount(8) read them.

Both are lines of whitespace-separated fields with ``#`` comments; a field may hold a space or
a tab only written as an octal escape (``\\040``, ``\\011``; fstab(5)). fstab's fields are the
device (``UUID=``, ``LABEL=``, ``PARTUUID=``, ``PARTLABEL=``, ``ID=`` or a path), the mount
point, the type, the options (comma-separated), then dump and pass (libmount ignores anything
after them); crypttab's are the name of the mapped device, its source device, the key file and
the options (crypttab(5); systemd ignores a line with more). Missing optional fields take their
defaults. A line that cannot be an entry is kept with its number and why, so
that nothing in the file is silently dropped; nothing in these files is trusted to be
well-formed (tests/unit/test_boot_readiness.py feeds them hostile ones).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

# More than any real table; a longer file is refused rather than read without bound.
MAX_BYTES = 1 << 20
MAX_FIELD = 4096  # PATH_MAX: a longer field is no device and no mount point

TAGS = ("UUID", "LABEL", "PARTUUID", "PARTLABEL", "ID")
_OCTAL = re.compile(r"\\([0-7]{3})")
E = TypeVar("E")


class _Options:
    """What an entry of either table says with its options."""

    options: tuple[str, ...]

    def has(self, option: str) -> bool:
        return option in self.options

    @property
    def optional(self) -> bool:
        """Not set up at boot (``noauto``), or the boot goes on without it (``nofail``): fstab(5),
        crypttab(5), systemd.mount(5)."""
        return self.has("nofail") or self.has("noauto")


@dataclass(frozen=True)
class FstabEntry(_Options):
    line: int  # 1-based
    spec: str  # as written (escapes undone)
    file: str  # the mount point ("none" or "swap" for swap)
    vfstype: str
    options: tuple[str, ...]

    @property
    def swap(self) -> bool:
        return self.vfstype == "swap"


@dataclass(frozen=True)
class CrypttabEntry(_Options):
    line: int
    name: str  # the mapped device: /dev/mapper/NAME
    source: str
    keyfile: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """A line that is no entry, and why."""

    line: int
    why: str


def unescape(field: str) -> str:
    """A field with its octal escapes (\\040 for a space) undone. A NUL is not undone: no path
    holds one."""
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)) if int(m[1], 8) else m[0], field)


def _fields(text: str) -> list[tuple[int, list[str]] | Skipped]:
    out: list[tuple[int, list[str]] | Skipped] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "\x00" in line:
            out.append(Skipped(number, "it holds a NUL byte"))
            continue
        fields = line.split()
        if any(len(f) > MAX_FIELD for f in fields):
            out.append(Skipped(number, f"a field is longer than {MAX_FIELD} characters"))
            continue
        out.append((number, [unescape(f) for f in fields]))
    return out


def _options(text: str) -> tuple[str, ...]:
    return tuple(o for o in text.split(",") if o)


def _parse(text: str, make: Callable[[int, list[str]], E | str]) -> tuple[list[E], list[Skipped]]:
    """The entries ``make`` makes of a table's lines (or the reason a line is none)."""
    entries: list[E] = []
    skipped: list[Skipped] = []
    for item in _fields(text):
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        made = make(*item)
        if isinstance(made, str):
            skipped.append(Skipped(item[0], made))
        else:
            entries.append(made)
    return entries, skipped


def _fstab_entry(number: int, f: list[str]) -> FstabEntry | str:
    if len(f) < 3:
        return "it has no mount point or no file system type"
    if any(not re.fullmatch(r"[+-]?[0-9]+", n) for n in f[4:6]):
        return "its dump or pass field is not a number"
    # libmount ignores what follows the sixth field
    return FstabEntry(number, f[0], f[1], f[2], _options(f[3]) if len(f) > 3 else ("defaults",))


def _crypttab_entry(number: int, f: list[str]) -> CrypttabEntry | str:
    if len(f) < 2:
        return "it names no source device"
    if len(f) > 4:
        return f"it has {len(f)} fields, and a crypttab line has at most 4"
    if "/" in f[0]:
        return f"{f[0]!r} is not a device-mapper name"
    return CrypttabEntry(number, f[0], f[1], f[2] if len(f) > 2 else "none", _options(f[3]) if len(f) > 3 else ())


def parse_fstab(text: str) -> tuple[list[FstabEntry], list[Skipped]]:
    """The entries of an fstab, and the lines that are none."""
    return _parse(text, _fstab_entry)


def parse_crypttab(text: str) -> tuple[list[CrypttabEntry], list[Skipped]]:
    """The entries of a crypttab, and the lines that are none."""
    return _parse(text, _crypttab_entry)


def tag(spec: str) -> tuple[str, str] | None:
    """(TAG, value) of a ``TAG=value`` device (UUID=..., LABEL=...), quotes removed; None for a
    path or anything else."""
    name, sep, value = spec.partition("=")
    if not sep or name not in TAGS or not value:  # libmount's tag names are upper case only
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return name, value
