"""What every recipe shares: its refusal and binding a device to a plan."""

from __future__ import annotations

from advisor.disks.devices import Device
from advisor.plan.model import BoundDevice

NOTHING = "Nothing was changed."


class RecipeError(ValueError):
    """The plan cannot be made; the message says why, that nothing changed, and what to do."""


def bind(dev: Device, role: str) -> BoundDevice:
    """The device as it is now, so applying the plan later can tell whether it changed."""
    return BoundDevice(role=role, path=dev.display_path, devnode=dev.devnode, identity=dev.identity,
                       serial=dev.serial, wwn=dev.wwn, size_bytes=dev.size_bytes, signature=dev.signature)
