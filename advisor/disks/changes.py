"""Recorded discovery snapshots read back, and what changed between two of them.

A snapshot in the history database is the scan's JSON (:meth:`Inventory.to_json`). It is read
back into an :class:`Inventory` so that it is shown as `scan` shows devices, and two are compared
device by device by stable identity (never by kernel name, which changes between boots): devices
added, removed, and changed in name, size, state, role or caching.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from advisor.disks.devices import BcacheInfo, Caching, Device, InactiveLv, Inventory, LvmInfo, MdInfo, Unread

# What a change of a device is compared on, in the order they are reported.
COMPARED = ("name", "size_bytes", "state", "role", "caching")


def _fields(cls: type, data: object) -> dict[str, Any]:
    """The keys of ``data`` that ``cls`` has as fields (a newer or older version's extra keys left out)."""
    if not isinstance(data, dict):
        return {}
    known = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in known}


def _nested(cls: type, data: object) -> Any:
    if not isinstance(data, dict):
        return None
    try:
        return cls(**_fields(cls, data))
    except TypeError:  # a required field missing: written by another version
        return None


def device_from_json(data: dict[str, Any]) -> Device | None:
    """A device of a recorded snapshot; None for one this version cannot read."""
    values = _fields(Device, data)
    for key in ("links", "partitions", "holders", "slaves", "mountpoints"):
        if isinstance(values.get(key), list):
            values[key] = tuple(str(v) for v in values[key])
    values["lvm"] = _nested(LvmInfo, data.get("lvm"))
    values["bcache"] = _nested(BcacheInfo, data.get("bcache"))
    values["md"] = _nested(MdInfo, data.get("md"))
    values["caching"] = _nested(Caching, data.get("caching"))
    unread = data.get("unreadable")
    values["unreadable"] = tuple(
        u for u in (_nested(Unread, item) for item in (unread if isinstance(unread, list) else [])) if u is not None
    )
    try:
        return Device(**values)
    except TypeError:
        return None


def inventory_from_json(data: dict[str, Any]) -> Inventory:
    """A recorded snapshot (the scan's JSON) as an Inventory; devices it cannot read are left out."""
    items, notes, memory, udev = data.get("devices"), data.get("notes"), data.get("memory_bytes"), data.get("udev")
    inactive = data.get("inactive")
    devices = tuple(
        d
        for d in (
            device_from_json(item) for item in (items if isinstance(items, list) else []) if isinstance(item, dict)
        )
        if d
    )
    return Inventory(
        taken_at=str(data.get("taken_at", "")),
        hostname=str(data.get("hostname", "")),
        udev=udev if udev in ("running", "database-only", "absent", "no-libudev") else "absent",
        root=bool(data.get("root", False)),
        devices=devices,
        notes=tuple(str(n) for n in (notes if isinstance(notes, list) else [])),
        memory_bytes=memory if isinstance(memory, int) and not isinstance(memory, bool) else None,
        inactive=tuple(
            lv for lv in (_inactive_lv(item) for item in (inactive if isinstance(inactive, list) else [])) if lv
        ),
    )


def _inactive_lv(data: object) -> InactiveLv | None:
    """A cached LV that is not active, as a snapshot recorded it; None when it is not one."""
    lv = _nested(InactiveLv, data)
    texts = ("vg", "lv", "uuid", "segtype", "attr")
    if lv is None or not all(isinstance(getattr(lv, k), str) for k in texts) or not isinstance(lv.size_bytes, int):
        return None
    return lv if lv.mode is None or isinstance(lv.mode, str) else None


def key_of(dev: Device) -> str:
    """What a device is followed by across snapshots: its stable identity, else its kernel name."""
    return dev.identity or f"name:{dev.name}"


def _value(dev: Device, name: str) -> Any:
    if name == "caching":
        c = dev.caching
        return None if c is None else f"{c.kind}: {c.part}" + (f"; {c.state}" if c.state else "")
    if name == "role":
        return dev.role
    return getattr(dev, name)


@dataclass(frozen=True)
class FieldChange:
    field: Literal["name", "size_bytes", "state", "role", "caching"]
    before: Any
    after: Any


@dataclass(frozen=True)
class DeviceChange:
    """One device added, removed or changed, by its stable identity (``key``)."""

    what: Literal["added", "removed", "changed"]
    key: str
    name: str  # its kernel name in the newer snapshot (the older one for a removed device)
    stable_path: str | None
    changes: tuple[FieldChange, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "identity": self.key,
            "name": self.name,
            "stable_path": self.stable_path,
            "changes": [dataclasses.asdict(c) for c in self.changes],
        }


def diff(before: Inventory, after: Inventory) -> list[DeviceChange]:
    """What changed from ``before`` to ``after``: removed devices, added ones, and those whose
    name, size, state, role or caching differ, each list in the newer snapshot's order."""
    old = {key_of(d): d for d in before.devices}
    new = {key_of(d): d for d in after.devices}
    out = [DeviceChange("removed", k, d.name, d.stable_path) for k, d in old.items() if k not in new]
    for key, dev in new.items():
        was = old.get(key)
        if was is None:
            out.append(DeviceChange("added", key, dev.name, dev.stable_path))
            continue
        changes = tuple(
            FieldChange(f, _value(was, f), _value(dev, f))  # type: ignore[arg-type]
            for f in COMPARED
            if _value(was, f) != _value(dev, f)
        )
        if changes:
            out.append(DeviceChange("changed", key, dev.name, dev.stable_path, changes))
    return out


def same_devices(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two recorded snapshots list the same devices with the same facts (their times and
    everything outside the devices aside)."""
    return a is not None and b is not None and a.get("devices") == b.get("devices")
