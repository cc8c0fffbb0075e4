"""Which devices can play which part in a cache, and why not: the rules the guided flows list
their choices by (the slow device, the SSDs, the caches to remove), as facts with codes that
each front end words."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.backends import BACKENDS
from advisor.disks.devices import Device, Inventory, underlying_disks
from advisor.disks.gate import Barrier, fast_barriers, slow_barriers
from advisor.disks.probe import ProbeResult
from advisor.errors import CachewiseError, codes, next_step

codes(
    {
        "slow-cached": "{device} is already cached ({kind}, {state}); cachewise does not stack a second cache",
        "slow-is-layer": "{device} is a {part}: {can}",
        "slow-partitioned": "{name} has partitions ({partitions})",
        "slow-in-use": "{device} is {why}. A cache goes in front of an LV while it is in use (lvmcache), or in "
        "front of a device nothing uses (bcache formats it)",
        "fast-in-use": "{device} is {why}; a cache needs the whole device",
        "fast-holds-slow": "{device} holds the slow device {slow}: the cache goes on another device",
        "fast-partitioned": "{name} has partitions ({partitions}): a cache goes on a free one, or on a disk without",
        "fast-is-layer": "{device} is a {part}: {can}",
        "fast-rotational": "{device} is a hard disk ({how}): a cache on it would be no faster than the disk it caches",
    }
)


class Ineligible(CachewiseError):
    """A device cannot play the part it was chosen for; the code says why."""


def probe_key(dev: Device) -> str:
    """Probe results follow the device's identity: kernel names change between boots."""
    return dev.identity or dev.name


def usable(dev: Device) -> bool:
    """Shown, sized, and of a kind a cache can be made of or put in front of."""
    return not dev.hidden and dev.size_bytes > 0 and dev.kind in ("disk", "partition", "lvm", "md", "dm")


def slow_candidates(inv: Inventory) -> list[Device]:
    """What a cache may go in front of: disks, partitions and LVs; bcache devices too, to be
    refused with their reason (a cache is there already). Never a PV (its LV is chosen) or a
    bcache cache device."""
    return [
        d
        for d in inv.devices
        if (usable(d) or (d.kind == "bcache" and not d.hidden))
        and not (d.lvm and d.lvm.role == "pv")
        and not (d.bcache is not None and d.bcache.role == "cache")
    ]


def slow_refusal(inv: Inventory, dev: Device) -> CachewiseError | None:
    """Why a cache cannot go in front of ``dev`` (None: it can): the flows' own rules, then the
    safety gate when it bars every backend."""
    c = dev.caching
    if c is not None and c.remove is not None:
        return Ineligible(
            "slow-cached", device=dev.display_path, kind=c.kind, state=c.state, next=[next_step("remove-first")]
        )
    if c is not None and c.kind not in ("dm-crypt", "md"):
        return Ineligible("slow-is-layer", device=dev.display_path, part=c.part, can=c.can, next=c.next)
    if dev.partitions:
        return Ineligible(
            "slow-partitioned",
            name=dev.name,
            partitions=", ".join(dev.partitions),
            next=[next_step("choose-partition")],
        )
    if dev.state == "in-use" and dev.lvm is None:
        return Ineligible("slow-in-use", device=dev.display_path, why=dev.in_use_reason)
    return _everywhere(slow_barriers(inv, dev))


def _everywhere(barriers: list[Barrier]) -> Barrier | None:
    """The first refusal that bars every backend."""
    return next((b for b in barriers if not b.migrate and all(b.bars(x) for x in BACKENDS)), None)


def fast_candidates(
    inv: Inventory, slow: Device | None, probes: Mapping[str, ProbeResult] | None = None
) -> list[Device]:
    """What can hold the cache: free SSDs, SSD partitions and md arrays, not the slow device nor
    anything it is built on."""
    return [d for d, why in fast_choices(inv, slow, probes) if why is None]


def fast_choices(
    inv: Inventory, slow: Device | None, probes: Mapping[str, ProbeResult] | None = None
) -> list[tuple[Device, CachewiseError | None]]:
    """Every disk, partition and md array but the slow device, each with why it cannot hold the
    cache (None: it can), for a list that offers what can and greys the rest with its reason."""
    under = {d.name for d in underlying_disks(inv, slow)} if slow else set()
    return [
        (d, _why_not_fast(inv, d, slow, under, probes or {}))
        for d in inv.devices
        if usable(d) and d.kind in ("disk", "partition", "md") and (slow is None or d.name != slow.name)
    ]


def _why_not_fast(
    inv: Inventory, dev: Device, slow: Device | None, under: set[str], probes: Mapping[str, ProbeResult]
) -> CachewiseError | None:
    if slow is not None and dev.name in under:
        return Ineligible("fast-holds-slow", device=dev.display_path, slow=slow.display_path)
    if dev.partitions:
        return Ineligible(
            "fast-partitioned", name=dev.name, partitions=", ".join(dev.partitions), next=[next_step("free-ssd")]
        )
    refusal = fast_refusal(inv, [dev])
    if refusal is not None:
        return refusal
    c = dev.caching
    if c is not None:
        return Ineligible("fast-is-layer", device=dev.display_path, part=c.part, can=c.can, next=c.next)
    # A probe's measurement beats the kernel's flag, which virtual and USB disks often get wrong.
    probe = probes.get(probe_key(dev))
    measured = probe.classification.device_class if probe is not None else "unknown"
    if measured == "hdd":
        assert probe is not None
        return Ineligible("fast-rotational", device=dev.display_path, how=f"measured: {probe.classification.reason}")
    if measured == "unknown" and dev.rotational:
        return Ineligible(
            "fast-rotational",
            device=dev.display_path,
            how="the kernel says it rotates",
            next=[next_step("probe-device", device=dev.name)],
        )
    return None


def fast_refusal(inv: Inventory, chosen: list[Device]) -> CachewiseError | None:
    """Why these devices cannot hold the cache (None: they can)."""
    busy = next((d for d in chosen if d.state == "in-use"), None)
    if busy is not None:
        return Ineligible("fast-in-use", device=busy.display_path, why=busy.in_use_reason)
    return next((b for b in (_everywhere(fast_barriers(inv, d)) for d in chosen) if b is not None), None)


def removable(inv: Inventory) -> list[Device]:
    """The caches cachewise can remove, each once (a bcache device, not its backing device)."""
    return [
        d
        for d in inv.devices
        if d.caching is not None and d.caching.remove is not None and (d.bcache is None or d.bcache.role == "bcache")
    ]


def caches_unknown(inv: Inventory) -> str | None:
    """Why this inventory cannot tell which LVM caches the machine has (None: it can): LVM's
    reports were not read (not root, or lvs failed). "No cache" is then unknown, not none."""
    for note in inv.notes:
        if note.startswith("LVM reports:"):
            return note
    if not inv.root:
        return "LVM's reports need root"
    return None
