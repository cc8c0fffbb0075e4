"""bcache recipes: a cached device on empty disks, and a safe detach.

bcache needs its own superblock on the backing device, so it is only made on devices without
data (or with --wipe, which lists what is destroyed); for data in place, lvmcache is the
answer (T-LVM-2). Tunables and detach are sysfs writes; paths start with ``{backing}``, the
backing device's sysfs directory, resolved when the step runs (kernel names change).
"""

from __future__ import annotations

import uuid

from advisor.disks.devices import Device, Inventory
from advisor.plan.checks import (
    BcacheSuperblock,
    NoSignature,
    NoSysfs,
    NotMounted,
    Sysfs,
    SysfsExists,
)
from advisor.plan.model import Plan, Step
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF, human_size
from recipes.common import NOTHING, RecipeError, bind

B = "{backing}/bcache"
# make-bcache's default bucket (1024 sectors); the kernel's cache_alloc() refuses a cache whose
# bucket count rounds up to fewer than 1024 (EPERM, "ca->sb.nbuckets is too small"), i.e. 512
# buckets or fewer: a cache device of 256 MiB or less. Seen in the lab on 6.1 (docs/apply.md).
BUCKET = 512 << 10
MIN_BUCKETS = 512


def _empty_device(inv: Inventory, dev: Device, role: str, wipe: bool) -> str | None:
    """Refuse devices that are mounted or in use; return the signature that --wipe destroys."""
    # An md array the user made (two SSDs in RAID1, say) is a disk to bcache; cachewise never makes one.
    if dev.kind not in ("disk", "partition") and not (dev.md is not None and dev.md.role == "array"):
        raise RecipeError(
            f"{dev.display_path} is a {dev.kind} device; bcache's {role} must be a disk, a partition "
            f"or an md array. {NOTHING}"
        )
    if dev.mountpoints or dev.swap or dev.holders:
        raise RecipeError(f"{dev.display_path} is in use ({dev.in_use_reason or 'mounted or held'}). {NOTHING}")
    for part in dev.partitions:
        p = inv.by_name(part)
        if p is not None and (p.mountpoints or p.holders):
            raise RecipeError(f"{dev.display_path} has a partition in use ({p.display_path}). {NOTHING}")
    signature = dev.signature
    if signature and not wipe:
        if role == "backing":
            raise RecipeError(
                f"{dev.display_path} holds data ({signature}). bcache needs a reformat of the backing device: its own "
                "superblock goes where the data starts, so the data would be lost. Back it up and restore it onto "
                "the bcache device afterwards (then pass --wipe), or keep the data in place with lvmcache "
                f"(`cachewise plan lvmcache-attach`, on LVM). {NOTHING}"
            )
        raise RecipeError(
            f"{dev.display_path} holds data ({signature}); making it a bcache cache destroys that. "
            f"If it can go, pass --wipe. {NOTHING}"
        )
    return signature


def bcache_create(
    inv: Inventory,
    backing_path: str,
    cache_path: str,
    *,
    mode: str = "writethrough",
    sequential_cutoff: int = BCACHE_SEQUENTIAL_CUTOFF,
    writeback_percent: int = 10,
    wipe: bool = False,
) -> Plan:
    from advisor.disks.discovery import find_device

    if mode not in ("writethrough", "writeback"):
        raise RecipeError(f"cache mode {mode!r} is not writethrough or writeback. {NOTHING}")
    if not 0 <= writeback_percent <= 40:
        raise RecipeError(f"writeback_percent must be 0 to 40, not {writeback_percent}. {NOTHING}")
    devs = []
    for path in (backing_path, cache_path):
        dev = find_device(inv, path)
        if dev is None:
            raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
        devs.append(dev)
    backing, cache = devs
    if backing.name == cache.name or cache.parent == backing.name or backing.parent == cache.name:
        raise RecipeError(f"{backing_path} and {cache_path} are the same device; name the HDD and the SSD. {NOTHING}")
    destroys = []
    for dev, role in ((backing, "backing"), (cache, "cache")):
        signature = _empty_device(inv, dev, role, wipe)
        if signature:
            destroys.append(f"{dev.display_path}: {signature}")
    buckets = cache.size_bytes // BUCKET
    if buckets <= MIN_BUCKETS:
        raise RecipeError(
            f"{cache.display_path} is too small for a bcache cache: {human_size(cache.size_bytes)} is "
            f"{buckets} buckets "
            f"of {human_size(BUCKET)}, and the kernel refuses a cache of {MIN_BUCKETS} buckets or fewer (dmesg: "
            '"ca->sb.nbuckets is too small"; registering fails with "Operation not permitted"). Use an SSD or '
            f"partition larger than {human_size(BUCKET * MIN_BUCKETS)}. {NOTHING}"
        )
    if (cache.logical_sector_size or 512) > (backing.logical_sector_size or 512):
        raise RecipeError(
            f"{cache.display_path} has larger logical sectors ({cache.logical_sector_size}) than "
            f"{backing.display_path} ({backing.logical_sector_size}). {NOTHING}"
        )
    cset = str(uuid.uuid4())
    bp, cp = backing.display_path, cache.display_path
    steps: list[Step] = []
    if destroys:
        for dev in (backing, cache):
            steps.append(
                Step(
                    f"wipefs-{dev.name}",
                    f"erase the signatures on {dev.display_path}",
                    ("wipefs", "--all", dev.display_path),
                    pre=(NotMounted(device=dev.display_path),),
                    post=(NoSignature(device=dev.display_path),),
                    destructive=True,
                )
            )
    steps.append(
        Step(
            "make-bcache",
            f"format {bp} as bcache backing and {cp} as its cache (cache set {cset})",
            ("make-bcache", "--cset-uuid", cset, *(["--writeback"] if mode == "writeback" else []), "-B", bp, "-C", cp),
            pre=(NoSignature(device=bp), NoSignature(device=cp), NotMounted(device=bp), NotMounted(device=cp)),
            post=(BcacheSuperblock(device=bp), BcacheSuperblock(device=cp)),
            undo=(("wipefs", "--all", bp), ("wipefs", "--all", cp)),
            destructive=True,
            seconds=3.0,
        )
    )
    # Register both devices. udev's 69-bcache.rules may do it first (on the change event
    # make-bcache causes); register_quiet treats "already registered" and "busy" as success, so
    # the step is right with or without udev. The kernel registers asynchronously: the
    # postcondition is awaited.
    steps.append(
        Step(
            "register-cache",
            f"register the cache {cp} with the kernel (cache set {cset})",
            (),
            write=("/sys/fs/bcache/register_quiet", cp),
            post=(SysfsExists(path=f"/sys/fs/bcache/{cset}"),),
        )
    )
    steps.append(
        Step(
            "register-backing",
            f"register the backing device {bp} with the kernel",
            (),
            write=("/sys/fs/bcache/register_quiet", bp),
            post=(SysfsExists(path=B),),
        )
    )
    steps.append(
        Step(
            "attach",
            f"attach {bp} to cache set {cset}",
            (),
            write=(f"{B}/attach", cset),
            post=(SysfsExists(path=f"{B}/cache"),),
        )
    )
    steps.append(
        Step(
            "cache-mode",
            f"set cache_mode {mode}",
            (),
            write=(f"{B}/cache_mode", mode),
            post=(Sysfs(path=f"{B}/cache_mode", value=f"[{mode}]"),),
        )
    )
    steps.append(
        Step(
            "sequential-cutoff",
            f"set sequential_cutoff {human_size(sequential_cutoff)} (T-SEQ-1)",
            (),
            write=(f"{B}/sequential_cutoff", str(sequential_cutoff)),
        )
    )
    steps.append(
        Step(
            "writeback-percent",
            f"set writeback_percent {writeback_percent}",
            (),
            write=(f"{B}/writeback_percent", str(writeback_percent)),
        )
    )
    return Plan(
        kind="bcache-create",
        title=f"Make a {mode} bcache of {bp} with {cp}",
        devices=(bind(backing, "backing"), bind(cache, "cache")),
        steps=tuple(steps),
        destroys=tuple(destroys),
        layout_before=(
            f"{bp}: {destroys[0] if destroys and bp in destroys[0] else 'empty'}",
            f"{cp}: {'has data' if any(cp in d for d in destroys) else 'empty'}",
        ),
        layout_after=(
            f"{bp}: bcache backing device; use /dev/bcache/by-uuid/<its UUID> (bcacheN numbers change between boots)",
            f"{cp}: bcache cache, cache set {cset}",
        ),
        space={"backing_bytes": backing.size_bytes, "cache_bytes": cache.size_bytes},
        notes=(
            f"{{backing}} is the backing device's sysfs directory, found when the step runs "
            f"(/sys/class/block/{backing.name} now).",
            "Make the file system on the bcache device, not on the backing disk.",
            "Undo with `cachewise plan bcache-detach --device /dev/bcache/by-uuid/...`.",
        )
        + (
            ("Writeback: dirty data lives only on the SSD until written back (T-MODE-1).",)
            if mode == "writeback"
            else ()
        ),
    )


def bcache_detach(inv: Inventory, path: str, *, wipe_cache: bool = False) -> Plan:
    """Detach the cache safely: writethrough, writeback_percent 0, wait until clean, detach,
    wait for 'no cache', stop the cache set, optionally wipe the cache device."""
    from advisor.disks.discovery import find_device

    dev = find_device(inv, path)
    if dev is None:
        raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
    if dev.bcache is None:
        raise RecipeError(f"{dev.display_path} is not a bcache device. {NOTHING}")
    backing = dev
    if dev.bcache.role == "bcache" and dev.bcache.backing_device:
        backing = inv.by_name(dev.bcache.backing_device) or dev
    if backing.bcache is None or backing.bcache.role != "backing":
        raise RecipeError(f"{dev.display_path} is not a bcache backing device or bcacheN. {NOTHING}")
    cset = backing.bcache.cache_set_uuid
    if not cset or backing.bcache.state == "no cache":
        raise RecipeError(f"{backing.display_path} has no cache attached (state: {backing.bcache.state}). {NOTHING}")
    cache = next(
        (
            d
            for d in inv.devices
            if d.bcache is not None and d.bcache.role == "cache" and d.bcache.cache_set_uuid == cset
        ),
        None,
    )
    steps = [
        Step(
            "writethrough",
            "switch to writethrough: new writes go to the disk too",
            (),
            write=(f"{B}/cache_mode", "writethrough"),
            post=(Sysfs(path=f"{B}/cache_mode", value="[writethrough]|no cache"),),
        ),
        Step(
            "writeback-percent-0",
            "writeback_percent 0: write dirty data back at full speed",
            (),
            write=(f"{B}/writeback_percent", "0"),
        ),
        Step(
            "flush",
            "wait until every dirty block is on the disk (state clean)",
            (),
            wait=(f"{B}/state", "clean|no cache"),
            progress="bcache_dirty",
            seconds=30.0,
            post=(Sysfs(path=f"{B}/state", value="clean|no cache"),),
        ),
        Step(
            "detach",
            f"detach {backing.display_path} from cache set {cset}",
            (),
            write=(f"{B}/detach", "1"),
            post=(Sysfs(path=f"{B}/state", value="no cache"),),
        ),
        Step(
            "detached",
            "wait until the kernel reports no cache",
            (),
            wait=(f"{B}/state", "no cache"),
            post=(Sysfs(path=f"{B}/state", value="no cache"),),
            timeout=300.0,
        ),
        Step(
            "stop-cache-set",
            f"stop cache set {cset}",
            (),
            write=(f"/sys/fs/bcache/{cset}/stop", "1"),
            post=(NoSysfs(path=f"/sys/fs/bcache/{cset}"),),
        ),
    ]
    devices = [bind(backing, "backing")]
    if wipe_cache:
        if cache is None:
            raise RecipeError(f"the cache device of cache set {cset} was not found, so it cannot be wiped. {NOTHING}")
        devices.append(bind(cache, "cache"))
        steps.append(
            Step(
                "wipe-cache",
                f"erase the bcache superblock on {cache.display_path}",
                ("wipefs", "--all", cache.display_path),
                post=(NoSignature(device=cache.display_path),),
                destructive=True,
            )
        )
    return Plan(
        kind="bcache-detach",
        title=f"Detach the cache from {backing.display_path} safely",
        devices=tuple(devices),
        steps=tuple(steps),
        layout_before=(f"{backing.display_path}: bcache backing, cache set {cset} ({backing.bcache.cache_mode})",),
        layout_after=(
            f"{backing.display_path}: bcache backing without a cache (the bcache device keeps working, at disk speed)",
        ),
        destroys=(f"{cache.display_path}: bcache cache superblock",) if wipe_cache and cache else (),
        notes=("Dirty data is written back before the detach; with a large writeback cache this takes minutes.",),
    )
