"""The block size of a device's file system, read by blkid where discovery has none (udev does
not export it): what dm-writecache's block size must not exceed (recipes/writecache.py)."""

from __future__ import annotations

from dataclasses import replace

from advisor.disks.devices import Device, Inventory
from advisor.readers.blkid import parse_export
from advisor.runner import CommandError, CommandRunner


def with_fs_block_size(inv: Inventory, dev: Device, runner: CommandRunner) -> Inventory:
    """The inventory with ``dev``'s file system block size filled in from ``blkid -p``, when it
    has a file system whose block size discovery did not learn (unchanged otherwise, and when
    blkid is missing or says nothing)."""
    if not dev.fs_type or dev.fs_block_size or not runner.which("blkid"):
        return inv
    try:
        out = runner.run(["blkid", "-p", "-o", "export", dev.devnode], timeout=15, check=False)
        size = int(parse_export(out.stdout).get("BLOCK_SIZE", "0") or 0)
    except (CommandError, ValueError):
        return inv
    if not size:
        return inv
    fixed = replace(dev, fs_block_size=size)
    return replace(inv, devices=tuple(fixed if d.name == dev.name else d for d in inv.devices))
