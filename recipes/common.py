"""What every recipe shares: its error and binding a device to a plan."""

from __future__ import annotations

from advisor.advice.config import CacheConfig
from advisor.backends import Backend
from advisor.disks.devices import Device
from advisor.errors import CachewiseError, codes, next_step
from advisor.plan.model import BoundDevice

codes(
    {
        "no-identity": "{device} reports no serial, WWN or UUID, so a plan could not tell it from another device "
        "later; cachewise does not plan on it",
        "other-backend": "the recommendation is not {wanted} ({backend})",
        "no-stable-path": "{device} has no stable path (/dev/disk/by-id/...): its kernel name can change between "
        "boots, so a plan could name another disk",
    }
)


class RecipeError(CachewiseError, ValueError):
    """The plan cannot be made: what is wrong with the devices or the options, as facts."""


def bind(dev: Device, role: str) -> BoundDevice:
    """The device as it is now, so applying the plan later can tell whether it changed. A plan
    needs a device it can recognise: an identity (serial, WWN or UUID) and a stable path."""
    if not dev.identity:
        raise RecipeError("no-identity", device=dev.display_path)
    if not dev.stable_path:
        raise RecipeError("no-stable-path", device=dev.devnode, next=[next_step("start-udev")])
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


def check_backend(cfg: CacheConfig | None, wanted: Backend) -> None:
    """Refused when the recommendation is for another backend (or for no cache)."""
    if cfg is None or cfg.backend != wanted.id:
        raise RecipeError("other-backend", wanted=wanted.noun, backend=cfg.label if cfg else "no cache")


# The removals' option for a cache whose SSD died holding writes the origin never got.
ACCEPT_LOSS = "the cache's SSD is dead and it held writes the origin lacks (writeback): take it off anyway"
