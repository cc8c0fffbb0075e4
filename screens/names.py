"""How the TUI names a device, one way everywhere: its stable name (VG/LV for an LV, the by-id
name for a disk, without the folder every such name sits in, so as short as it stays unique)
with the kernel name beside it: ``labvg/data (dm-1)``, ``ata-Samsung_SSD_870_S5Y1 (sdb)``.
And every name a device answers to, which the confirmation before apply accepts."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import PurePosixPath

from advisor.disks.devices import Device, Inventory

# The folders whose names are unique within them, and tell nothing by themselves.
FOLDERS = ("/dev/disk/by-id/", "/dev/disk/by-path/", "/dev/bcache/by-uuid/")


def short_path(path: str) -> str:
    """A stable path without its folder: a by-id, by-path or bcache by-uuid name; VG/LV for
    /dev/VG/LV; mapper/NAME for a device-mapper name (which could otherwise be a kernel name)."""
    for folder in FOLDERS:
        if path.startswith(folder):
            return path.removeprefix(folder)
    return path.removeprefix("/dev/")


def kernel_name(devnode: str) -> str:
    return PurePosixPath(devnode).name


def label(path: str | None, devnode: str, taken: Collection[str] = ()) -> str:
    """``stable (kernel)``: the short stable name (the whole path when another device's name is
    the same), and the kernel's name beside it; the kernel's name alone when there is no other."""
    kernel = kernel_name(devnode)
    if not path or path == devnode:
        return kernel
    short = short_path(path)
    stable = path if short in taken else short
    return f"{stable} ({kernel})"


def names(path: str | None, devnode: str) -> tuple[str, ...]:
    """Every name the device answers to: its stable path, that path short, its /dev node and its
    kernel name."""
    found = [path, short_path(path)] if path else []
    return tuple(dict.fromkeys((*found, devnode, kernel_name(devnode))))


def device_label(dev: Device, inv: Inventory | None = None) -> str:
    """How the TUI names ``dev``; ``inv`` keeps the short name unique among its devices."""
    taken: set[str] = set()
    if inv is not None:
        for other in inv.devices:
            if other.name != dev.name:
                taken.update(names(other.stable_path, other.devnode))
    return label(dev.stable_path, dev.devnode, taken)


def fold(name: str, width: int) -> str:
    """``name`` on lines of at most ``width`` characters, broken after its separators (- _ / : .)
    where it can be, so a narrow table shows it whole rather than cut."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^-_/:. ]*[-_/:. ]?", name):
        while len(piece) > width:  # no separator near enough: break it where the line ends
            room = width - len(line)
            lines.append(line + piece[:room])
            line, piece = "", piece[room:]
        if len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    return "\n".join(x.rstrip() for x in ([*lines, line] if line else lines or [""]))
