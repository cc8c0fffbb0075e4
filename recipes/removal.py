"""Removing whatever cache a device is part of: the recipe that chooses the backend's own remover.

Discovery says what cache a device belongs to (its :class:`~advisor.disks.devices.Caching`, with
the backend when cachewise can remove it); the registry says which recipe removes a cache of
that backend. With ``free_ssd`` the SSD is given back blank: an LVM cache's own PVs (those that
hold nothing but the cache) are released, a bcache cache device is wiped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.backends import by_segtype
from advisor.disks.devices import Inventory
from advisor.disks.discovery import find_device
from advisor.errors import codes, next_step
from advisor.plan.model import Plan
from recipes.common import ACCEPT_LOSS, RecipeError
from recipes.lvm import cache_pvs
from recipes.registry import Recipe, option, register, remover
from recipes.registry import recipe as registry_recipe

codes(
    {
        "not-in-a-cache": "{device} is part of no cache",
        "cannot-remove": "{device} is a {part} ({kind}{state}), not a cache cachewise can remove{can}",
        "bcache-release": "a bcache cache device is not an LVM physical volume to release; it is wiped instead",
    }
)


@dataclass(frozen=True, kw_only=True)
class RemoveOptions:
    device: str = option("the cached LV (VG/LV), bcache device or backing device", "device", metavar="DEV")
    release_ssd: tuple[str, ...] = option(
        "then take this SSD out of the VG (LVM caches)", "device", metavar="DEV", repeat=True, default=()
    )
    free_ssd: bool = option(
        "then give the SSD back blank: an LVM cache's own PVs are released, a bcache cache device is wiped", "flag"
    )
    accept_data_loss: bool = option(ACCEPT_LOSS, "flag")


def remove(inv: Inventory, o: RemoveOptions) -> Plan:
    """The plan that removes the cache ``o.device`` is part of (the cached LV or bcache device, or
    its backing device), whatever its kind; refused, with the reason, for a device that is no
    cache cachewise can remove."""
    dev = find_device(inv, o.device)
    inactive = inv.inactive_lv(o.device) if dev is None else None
    if inactive is not None:  # a cached LV lvm2 did not activate (its SSD is missing): no block device
        backend = by_segtype(inactive.segtype)
        recipe = remover(backend) if backend is not None else None
        assert recipe is not None  # discovery lists cache and writecache LVs only
        plan = recipe.build(
            inv, recipe.options(lv=inactive.name, release_ssd=o.release_ssd, accept_data_loss=o.accept_data_loss)
        )
        if o.free_ssd:
            gone = "The SSD is missing, so there is none to give back; the rescue takes it out of the VG."
            plan = replace(plan, notes=(*plan.notes, gone))
        return plan
    if dev is None:
        raise RecipeError("no-such-device", path=o.device, next=[next_step("see-devices")])
    caching = dev.caching
    if caching is None:
        raise RecipeError("not-in-a-cache", device=dev.display_path)
    recipe = registry_recipe(caching.remove) if caching.remove is not None else None
    if recipe is None:
        raise RecipeError(
            "cannot-remove",
            device=dev.display_path,
            part=caching.part,
            kind=caching.kind,
            state=f"; {caching.state}" if caching.state else "",
            can=f": {caching.can}" if caching.can else "",
            next=caching.next,
        )
    if recipe.backend is not None and recipe.backend.lvm_segtype is None:  # bcache: its cache device is wiped
        if o.release_ssd:
            raise RecipeError("bcache-release", next=[next_step("free-ssd-instead")])
        return recipe.build(
            inv, recipe.options(device=dev.devnode, wipe_cache=o.free_ssd, accept_data_loss=o.accept_data_loss)
        )
    assert dev.lvm is not None
    vglv = f"{dev.lvm.vg}/{dev.lvm.lv}"
    release = o.release_ssd
    if o.free_ssd and not release:
        release = tuple(d.display_path for d in cache_pvs(inv, vglv))
    return recipe.build(inv, recipe.options(lv=vglv, release_ssd=release, accept_data_loss=o.accept_data_loss))


register(
    Recipe(
        "remove",
        "remove whatever cache a device is part of (flush first)",
        "Find what cache the device is part of (an lvmcache or dm-writecache LV, a bcache device or its backing "
        "device) and plan its removal with the matching recipe; refuse, with the reason, a device that is no cache "
        "cachewise can remove (flashcache, EnhanceIO, ZFS, bcachefs).",
        RemoveOptions,
        remove,
        "removes",
        None,
    )
)
