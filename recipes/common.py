"""What every recipe shares: its refusal and binding a device to a plan."""

from __future__ import annotations

from advisor.disks.devices import Device
from advisor.plan.model import BoundDevice

NOTHING = "Nothing was changed."


class RecipeError(ValueError):
    """The plan cannot be made; the message says why, that nothing changed, and what to do."""


def bind(dev: Device, role: str) -> BoundDevice:
    """The device as it is now, so applying the plan later can tell whether it changed. A plan
    needs a device it can recognise: an identity (serial, WWN or UUID) and a stable path."""
    if not dev.identity:
        raise RecipeError(
            f"{dev.display_path} reports no serial, WWN or UUID, so a plan could not tell it from "
            f"another device later; cachewise does not plan on it. {NOTHING}"
        )
    if not dev.stable_path:
        raise RecipeError(
            f"{dev.devnode} has no stable path (/dev/disk/by-id/...): its kernel name can change "
            "between boots, so a plan could name another disk. Start udev (it makes those links) and "
            f"plan again. {NOTHING}"
        )
    return BoundDevice(
        role=role,
        path=dev.display_path,
        devnode=dev.devnode,
        identity=dev.identity,
        serial=dev.serial,
        wwn=dev.wwn,
        size_bytes=dev.size_bytes,
        signature=dev.signature,
    )
