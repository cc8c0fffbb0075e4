"""The one safety and feasibility gate: whether a cache backend can go in front of a device (the
slow side) or on it (the fast side), from what discovery knows of the device and of everything
stacked above and below it.

``recommend`` offers only what passes it, ``plan`` refuses what it refuses, and apply's
preflight asks it again on the live machine, so an old or handed plan file cannot skip it. Each
answer is a :class:`Barrier`: a refusal (the backend can never be set up there: another system
owns the data, lvm2 or the kernel would refuse, or cachewise does not plan it) or a migration
(the data must move first: into LVM for an lvm cache, off and back for bcache's reformat).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from advisor.backends import BACKENDS, BCACHE, WRITECACHE, Backend, by_segtype
from advisor.disks.devices import OTHER_SYSTEMS, Device, Inventory
from advisor.errors import CachewiseError, Next, codes, next_step
from advisor.units import KiB, MiB, human_size

codes(
    {
        "owned-by-other-system": "{device} {where} {part}, and {native}",
        "stacked-on-cache": "{device} {where} a cache already ({cache}); cachewise does not stack a second cache",
        "bcache-part": "{device} is a {part}: its data is reached through {through}, and formatting it again would "
        "destroy it",
        "md-member": "{device} is a member of the md array {array}: cache the array, not one of its members",
        "lvm-pv": "{device} is a physical volume of the VG {vg}: cache one of its LVs, not the PV under them",
        "thin-lv": "{device} is a thin LV of the thin pool {pool}: lvm2 caches one thin LV only from 2.03.22 on, and "
        "a cached thin LV can take no snapshots; the thin pool is what to cache, and cachewise does not plan a thin "
        "pool's cache yet",
        "thin-pool": "{device} is a thin pool: lvm2 can cache its data, but cachewise does not plan a thin pool's "
        "cache yet",
        "lv-snapshot": "{device} is a snapshot (copy-on-write) LV: lvm2 does not cache snapshots",
        "lv-segtype": "{device} is an LV of segment type {segtype}; cachewise caches linear, striped and raid LVs, "
        "and lvm2 refuses a cache in front of a mirror or a merging snapshot",
        "snapshot-origin": "{device} has snapshots: lvm2 caches a snapshot's origin with dm-cache, but neither its "
        "code nor its tests cover a writecache on one",
        "lv-hidden": "{device} is a part of another LV ({role}), not an LV a cache can go in front of",
        "not-on-lvm": "{device} is not an LV: an lvm cache goes in front of an LV in place, so its data ({signature}) "
        "would first have to move into LVM",
        "not-an-lv-yet": "{device} is not an LV: an lvm cache goes in front of an LV, which would first be made on it",
        "bcache-needs-block": "{device} is a {what}: bcache formats a whole disk, a partition or an md array as its "
        "backing device",
        "bcache-in-use": "{device} is in use ({why}): bcache formats its backing device, which cannot be done while "
        "another device is built on it, so its data would first have to move off it and that device be closed",
        "bcache-cache-too-small": "{device} is too small for a bcache cache: {size} is {buckets} buckets of "
        '{bucket}, and the kernel refuses a cache of {minimum} buckets or fewer (dmesg: "ca->sb.nbuckets is too '
        'small"; registering fails with "Operation not permitted"); it takes an SSD or partition larger than '
        "{smallest}",
        "writecache-memory": "a dm-writecache of {size} in {block}-byte blocks needs about {memory} of kernel "
        "memory, more than a {share} of this machine's {ram}",
    }
)

# --- the kernel's and the tools' limits -----------------------------------------------------

# make-bcache's default bucket (1024 sectors); the kernel's cache_alloc() refuses a cache whose
# bucket count rounds up to fewer than 1024 (EPERM, "ca->sb.nbuckets is too small"), i.e. 512
# buckets or fewer: a cache device of 256 MiB or less. Seen in the lab on 6.1 (docs/apply.md).
BCACHE_BUCKET = 512 * KiB
BCACHE_MIN_BUCKETS = 512
BCACHE_MIN_CACHE = BCACHE_BUCKET * BCACHE_MIN_BUCKETS  # a cache must be larger than this

# dm-writecache keeps, per cache block, a struct wc_entry (72 bytes on x86-64 kernels built with
# hardware-error handling, as distributions build them) and, on an SSD, a copy of the block's
# 16-byte metadata, both vmalloc'd when the table loads (drivers/md/dm-writecache.c,
# writecache_alloc_entries; lvm2's _check_writecache_memory counts the same 88 bytes, warns at
# half the machine's memory and asks at 90%). cachewise holds them to a quarter.
WRITECACHE_ENTRY_BYTES = 88
WRITECACHE_MEMORY_SHARE = 4
# dm-writecache starts writing back when this share of its blocks is in use (HIGH_WATERMARK;
# lvm2 passes no watermark unless told): up to this share of the cache may be dirty.
WRITECACHE_HIGH_WATERMARK = 50

LVM_BACKENDS = tuple(b for b in BACKENDS if b.lvm_segtype is not None)


class Barrier(CachewiseError):
    """Why ``backends`` cannot be set up with this device in this part as things stand. A
    ``migrate`` barrier is lifted by moving the data first (the plan would destroy it otherwise);
    any other is a refusal whatever the user accepts."""

    def __init__(
        self,
        code: str,
        /,
        *,
        backends: Iterable[Backend] = BACKENDS,
        migrate: bool = False,
        next: Iterable[Next] = (),
        **facts: Any,
    ) -> None:
        super().__init__(code, next=tuple(next), **facts)
        self.backends = tuple(backends)
        self.migrate = migrate

    def __reduce__(self) -> tuple[Any, ...]:  # copied and pickled with its facts, not its sentence
        return (_barrier, (self.code, self.backends, self.migrate, self.next, self.facts))

    def bars(self, backend: Backend) -> bool:
        return backend in self.backends

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "backends": [b.id for b in self.backends],
            "migrate": self.migrate,
            "text": self.what,
        }


def _barrier(code: str, backends: Any, migrate: bool, next: Any, facts: dict[str, Any]) -> Barrier:
    return Barrier(code, backends=backends, migrate=migrate, next=next, **facts)


def _walk(inv: Inventory, dev: Device, up: bool) -> Iterator[Device]:
    """Every device stacked above ``dev`` (holders and partitions), or below it (slaves and the
    disk of a partition), each once."""
    seen = {dev.name}
    todo = list((*dev.holders, *dev.partitions) if up else (*dev.slaves, *([dev.parent] if dev.parent else [])))
    while todo:
        name = todo.pop(0)
        other = inv.by_name(name)
        if name in seen or other is None:
            continue
        seen.add(name)
        yield other
        todo += (
            (*other.holders, *other.partitions) if up else (*other.slaves, *([other.parent] if other.parent else []))
        )


def _is_cache(dev: Device) -> bool:
    """An LV with a cache or a writecache, or a bcache device with a cache set attached."""
    if dev.lvm is not None and dev.lvm.role == "lv" and by_segtype(dev.lvm.segtype) is not None:
        return True
    return dev.bcache is not None and dev.bcache.role == "bcache" and bool(dev.bcache.cache_set_uuid)


def _named(dev: Device) -> str:
    if dev.lvm is not None and dev.lvm.role == "lv":
        return f"{dev.lvm.vg}/{dev.lvm.lv}"
    return dev.display_path


def _owners(inv: Inventory, dev: Device) -> list[Barrier]:
    """Another system (ZFS, bcachefs, an out-of-tree cache) owns the device, something under it
    or something on it: no block cache may go in front of it or on it."""
    for where, others in (
        ("is a", [dev]),
        ("holds", list(_walk(inv, dev, True))),
        ("sits on", list(_walk(inv, dev, False))),
    ):
        for other in others:
            c = other.caching
            if c is not None and c.kind in OTHER_SYSTEMS:
                part = c.part if other is dev else f"{_named(other)}, a {c.part}"
                return [
                    Barrier(
                        "owned-by-other-system",
                        device=dev.display_path,
                        where=where,
                        part=part,
                        native=c.can,
                        next=[next_step("use-native-tier")] if c.kind in ("zfs", "bcachefs") else [],
                    )
                ]
    return []


def _parts(dev: Device) -> list[Barrier]:
    """The device is a part of something whose data it carries: a bcache backing, cache or
    unregistered device (its data is reached through bcache), an md array's member."""
    out: list[Barrier] = []
    b = dev.bcache
    if b is not None and b.role in ("backing", "cache", "unregistered"):
        through = {
            "backing": b.bcache_device or "its bcache device",
            "cache": "the bcache devices of its cache set",
            "unregistered": "bcache, once registered",
        }
        part = dev.caching.part if dev.caching is not None else f"bcache {b.role} device"
        out.append(Barrier("bcache-part", device=dev.display_path, part=part, through=through[b.role]))
    if dev.md is not None and dev.md.role == "member":
        out.append(Barrier("md-member", device=dev.display_path, array=dev.md.array or "?"))
    return out


def destroy_barriers(inv: Inventory, dev: Device) -> list[Barrier]:
    """Why no plan, whatever it is for, may destroy what ``dev`` holds: another system owns it
    or something on it or under it (ZFS, bcachefs, an out-of-tree cache), or it is a member of
    an md array (or holds one). A bcache part is not among them: a removal wipes the cache device
    it has detached."""
    out = _owners(inv, dev)
    for other in (dev, *_walk(inv, dev, True)):
        if other.md is not None and other.md.role == "member":
            out.append(Barrier("md-member", device=other.display_path, array=other.md.array or "?"))
            break
    return out


def slow_barriers(inv: Inventory, dev: Device) -> list[Barrier]:
    """Why each backend cannot go in front of ``dev`` (the device whose data it caches), as
    discovery sees the machine. Empty: every backend can, with the usual choices (mode, size)."""
    owned = _owners(inv, dev)
    if owned:
        return owned
    out: list[Barrier] = []
    below = list(_walk(inv, dev, False))
    stacked = next((d for d in (*below, *_walk(inv, dev, True)) if _is_cache(d)), None)
    if stacked is not None:
        where = "sits on" if stacked in below else "is under"
        out.append(Barrier("stacked-on-cache", device=dev.display_path, where=where, cache=_named(stacked)))
    out += _parts(dev)
    lvm = dev.lvm
    if lvm is not None and lvm.role == "pv":
        out.append(Barrier("lvm-pv", device=dev.display_path, vg=lvm.vg or "?"))
    if lvm is not None and lvm.role == "lv":
        out += _lv_barriers(dev)
    elif not out:
        # An lvm cache goes in front of an LV: data elsewhere moves into one first, and a free
        # device becomes one (lvmcache-new makes the PV, VG and LV, when asked for by name).
        signature = dev.signature or (dev.in_use_reason if dev.state != "free" else "")
        out.append(
            Barrier(
                "not-on-lvm" if signature else "not-an-lv-yet",
                backends=LVM_BACKENDS,
                migrate=True,
                device=dev.display_path,
                signature=signature,
                next=[next_step("move-into-lvm")] if signature else [next_step("plan-instead", recipe="lvmcache-new")],
            )
        )
    if not (dev.kind in ("disk", "partition") or (dev.md is not None and dev.md.role == "array")):
        what = "logical volume" if lvm is not None and lvm.role == "lv" else f"{dev.kind} device"
        out.append(Barrier("bcache-needs-block", backends=(BCACHE,), device=dev.display_path, what=what))
    elif not any(b.bars(BCACHE) for b in out):
        busy = _in_use(inv, dev)
        if busy:  # the recipe refuses it (issue 30: offered by recommend, then refused by plan)
            out.append(
                Barrier(
                    "bcache-in-use",
                    backends=(BCACHE,),
                    migrate=True,
                    device=dev.display_path,
                    why=busy,
                    next=[next_step("restore-after"), next_step("keep-data-with-lvmcache")],
                )
            )
    return out


def _in_use(inv: Inventory, dev: Device) -> str:
    """Why bcache cannot format ``dev``: another device (an open dm-crypt volume, say) is built on
    it or on a partition of it, as the bcache recipe refuses. A mounted file system is not among
    them: moving the data off for bcache's reformat (which the user allows) unmounts it."""
    for other in (dev, *(p for p in map(inv.by_name, dev.partitions) if p is not None)):
        if other.holders:
            return other.in_use_reason or "held"
    return ""


def _lv_barriers(dev: Device) -> list[Barrier]:
    assert dev.lvm is not None
    segtype, name = dev.lvm.segtype or "unknown", _named(dev)
    if dev.hidden:
        return [Barrier("lv-hidden", device=name, role="one of LVM's own sub-LVs")]
    if segtype == "thin":
        return [Barrier("thin-lv", device=name, pool=f"{dev.lvm.vg}/{dev.lvm.pool or '?'}")]
    if segtype == "thin-pool":
        return [Barrier("thin-pool", device=name)]
    if segtype == "snapshot":
        return [Barrier("lv-snapshot", device=name)]
    if by_segtype(segtype) is not None or segtype == "cache-pool":
        return []  # a cache itself: eligibility and recommend say "remove it first"
    cachable = segtype in ("linear", "striped") or segtype.startswith("raid")
    if not cachable or (dev.lvm.attr or " ")[0] == "O":  # O: an origin merging a snapshot
        return [Barrier("lv-segtype", backends=LVM_BACKENDS, device=name, segtype=segtype)]
    if dev.lvm.snapshot_origin:
        return [Barrier("snapshot-origin", backends=(WRITECACHE,), device=name)]
    return []


def fast_barriers(inv: Inventory, dev: Device) -> list[Barrier]:
    """Why each backend cannot keep its cache on ``dev``: another system owns it (a ZFS special
    vdev or L2ARC, a bcachefs member: wiping it would break that file system, so no acceptance
    lifts this), it or a partition of it is a bcache part or an md member (whose data lives on
    through bcache or the array, active or not), or it is too small for bcache."""
    out = _owners(inv, dev)
    for other in (dev, *(p for p in map(inv.by_name, dev.partitions) if p is not None)):
        out += _parts(other)
    if 0 < dev.size_bytes and dev.size_bytes // BCACHE_BUCKET <= BCACHE_MIN_BUCKETS:
        out.append(
            Barrier(
                "bcache-cache-too-small",
                backends=(BCACHE,),
                device=dev.display_path,
                size=human_size(dev.size_bytes),
                buckets=dev.size_bytes // BCACHE_BUCKET,
                bucket=human_size(BCACHE_BUCKET),
                minimum=BCACHE_MIN_BUCKETS,
                smallest=human_size(BCACHE_MIN_CACHE),
            )
        )
    return out


def writecache_memory(size_bytes: int, block: int) -> int:
    """The kernel memory a dm-writecache of this size and block size keeps for its entries."""
    return (size_bytes // max(block, 1)) * WRITECACHE_ENTRY_BYTES


def writecache_max_bytes(memory_bytes: int | None, block: int) -> int | None:
    """The largest dm-writecache whose entries fit in the share of memory allowed (None: the
    machine's memory is unknown)."""
    if memory_bytes is None or memory_bytes <= 0:
        return None
    return memory_bytes // WRITECACHE_MEMORY_SHARE // WRITECACHE_ENTRY_BYTES * block // MiB * MiB


def writecache_barrier(size_bytes: int, block: int, memory_bytes: int | None) -> Barrier | None:
    """Refused when a dm-writecache of this size would take more than its share of memory."""
    cap = writecache_max_bytes(memory_bytes, block)
    if cap is None or size_bytes <= cap:
        return None
    return Barrier(
        "writecache-memory",
        backends=(WRITECACHE,),
        size=human_size(size_bytes),
        block=block,
        memory=human_size(writecache_memory(size_bytes, block)),
        share={2: "half", 4: "quarter", 8: "eighth"}.get(WRITECACHE_MEMORY_SHARE, f"1/{WRITECACHE_MEMORY_SHARE}"),
        ram=human_size(memory_bytes or 0),
        next=[next_step("smaller-size")],
    )


def barring(barriers: Iterable[Barrier], backend: Backend) -> list[Barrier]:
    """The barriers that bar this backend."""
    return [b for b in barriers if b.bars(backend)]
