"""Tunables that drifted: a bcache device whose live sequential_cutoff or writeback_percent is not
what cachewise's file for it says (advisor/tunables.py), a file that is not used, and a file for
a device that is not here. ``scan``, ``status`` and ``doctor`` list these findings with the fix.

Drift is what a reboot without the udev rule leaves (the kernel's defaults, 4.0M and 10), or a
value changed by hand in sysfs since; either way the file is what the device gets at the next
boot, so the finding says both values and how to set the file's again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from advisor import tunables
from advisor.health.findings import Finding, Fix, sentences
from advisor.tunables import Backing, Configured, TunablesError

sentences(
    {
        "tunable-drifted": "{subject}: {key} is {live}, configured {configured} in {file}",
        "tunables-file-refused": "{file} {why}, so its tunables are not set at boot",
        "tunables-file-unread": "{file} could not be read ({why}), so its tunables were not compared",
        "tunables-orphaned": "{file} keeps tunables for a bcache device that is not on this machine (backing "
        "device UUID {uuid})",
    }
)

APPLY = ("cachewise", "tunables", "apply")


def _apply_fix(device: str) -> Fix:
    return Fix(
        "set the configured values again (cachewise's udev rule does it whenever the device appears); or, to keep "
        "the live value, write it into the file",
        command=(*APPLY, "--device", f"/dev/{device}"),
    )


def compare(
    found: Sequence[Configured], live: Sequence[Backing], refused: Sequence[TunablesError], root: bool = True
) -> list[Finding]:
    """The findings of these files against these devices: each value that differs, each file
    refused (or not read: ``root`` says whether that matters), each file whose device is not
    registered."""
    by_uuid = {b.uuid: b for b in live}
    out: list[Finding] = []
    for conf in found:
        backing = by_uuid.get(conf.uuid)
        if backing is None:
            out.append(
                Finding(
                    "tunables-orphaned",
                    "info",
                    conf.uuid,
                    {"file": str(conf.path), "uuid": conf.uuid},
                    "the device is unplugged or not registered yet, or its cache was removed without cachewise",
                    Fix("remove the file if that device is gone for good", command=("rm", str(conf.path))),
                )
            )
            continue
        for key, value in conf.values.items():
            text = backing.live.get(key)
            if text is None or tunables.same(key, text, value):
                continue
            out.append(
                Finding(
                    "tunable-drifted",
                    "warning",
                    backing.shown_name,
                    {
                        "key": key,
                        "live": text,
                        "configured": tunables.kernel_text(key, value),
                        "configured_value": value,
                        "file": str(conf.path),
                        "uuid": conf.uuid,
                        "device": backing.device,
                        "backing": backing.name,
                    },
                    "the kernel forgets bcache's tunables at every boot, and cachewise's udev rule did not set them "
                    "again (the package is not installed, or the rule failed: see the system log), or they were "
                    "changed since",
                    _apply_fix(backing.shown_name),
                )
            )
    for exc in refused:
        path = exc.facts.get("path")
        if exc.code == "tunables-unreadable":
            # not a file root refuses: one this reader could not open (without root, a file of
            # root's that others may not read is as it should be; as root, the udev rule fails too)
            out.append(
                Finding(
                    "tunables-file-unread",
                    "warning" if root else "info",
                    str(path),
                    {"file": str(path), "why": str(exc.facts.get("why", ""))},
                    "root's udev rule reads it at every boot; it could not be read here either"
                    if root
                    else "it is root's; without root its values cannot be compared with the live ones",
                    Fix("look at the file's permissions and the disk under /etc")
                    if root
                    else Fix("run it as root to compare them"),
                )
            )
            continue
        out.append(
            Finding(
                "tunables-file-refused",
                "warning",
                str(path),
                {"file": str(path), "why": exc.facts.get("why", "")},
                "root sets tunables only from a regular file of root's that no one else can write, holding only "
                "the settings cachewise keeps",
                Fix("make it root's and writable by no one else, with only the settings cachewise keeps, or remove it"),
            )
        )
    return out


def drift(config_dir: Path | None = None, sys_root: Path | None = None) -> list[Finding]:
    """Every tunable of this machine's bcache devices that is not what cachewise's file says, and
    every file that is not used (``config_dir`` and ``sys_root``: /etc/cachewise/bcache and /sys
    unless a test says otherwise)."""
    try:
        found, refused = tunables.configured(config_dir)
    except TunablesError as exc:
        refused, found = [exc], []
    return compare(found, tunables.backings(sys_root), refused, root=os.geteuid() == 0)
