"""The block size of a device's file system, read by blkid where discovery has none (udev does
not export it): what dm-writecache's block size must not exceed (recipes/writecache.py)."""

from __future__ import annotations

from dataclasses import replace

from advisor.disks.devices import Device, Inventory
from advisor.readers.blkid import parse_export
from advisor.runner import CommandError, CommandRunner


def with_fs_block_size(inv: Inventory, dev: Device, runner: CommandRunner) -> Inventory:
    """The inventory with ``dev``'s file system type and block size filled in from ``blkid -p``
    (which reads the device itself), when discovery did not learn the block size (unchanged when
    blkid is missing or says nothing). Asked also when discovery saw no file system: udev's
    database can lag behind a mkfs (seen in the lab: an ext4 made on an LV moments before was
    not in it, and a writecache of 4 KiB blocks was planned for its 1 KiB blocks)."""
    if dev.fs_block_size or not runner.which("blkid"):
        return inv
    try:
        out = runner.run(["blkid", "-p", "-o", "export", dev.devnode], timeout=15, check=False)
        found = parse_export(out.stdout)
        size = int(found.get("BLOCK_SIZE", "0") or 0)
    except (CommandError, ValueError):
        return inv
    fs_type = dev.fs_type or found.get("TYPE") or None
    if not size and fs_type == dev.fs_type:
        return inv
    fixed = replace(dev, fs_block_size=size or None, fs_type=fs_type)
    return replace(inv, devices=tuple(fixed if d.name == dev.name else d for d in inv.devices))
