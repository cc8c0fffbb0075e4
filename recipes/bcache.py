"""bcache recipes: a cached device on empty disks, and a safe detach.

bcache needs its own superblock on the backing device, so it is only made on devices without
data (or when the user allows the wipe, which the plan lists as destroyed); for data in place, lvmcache is the
answer (T-LVM-2). Tunables and detach are sysfs writes; paths start with ``{backing}``, the
backing device's sysfs directory, resolved when the step runs (kernel names change).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from advisor import tunables
from advisor.advice.config import CacheConfig
from advisor.backends import BCACHE, Mode
from advisor.disks.devices import Caching, Device, Inventory
from advisor.disks.discovery import find_device
from advisor.disks.failure import Failure
from advisor.disks.gate import barring, fast_barriers
from advisor.errors import codes, next_step
from advisor.plan.checks import (
    BcacheSuperblock,
    Check,
    NoSignature,
    NoSysfs,
    NotMounted,
    NoTunablesFile,
    Sysfs,
    SysfsExists,
    TunablesFile,
)
from advisor.plan.language import TUNABLES_FILE, UUID, Use
from advisor.plan.model import Plan, Step
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF
from recipes.common import ACCEPT_LOSS, RecipeError, bind, check_backend
from recipes.registry import Recipe, option, register

CREATE, DETACH, JOIN = "bcache-create", BCACHE.remover, "bcache-join"
codes(
    {
        "bcache-not-a-disk": "{device} is a {kind} device; bcache's {role} must be a disk, a partition or an md array",
        "device-in-use": "{device} is in use ({why})",
        "backing-holds-data": "{device} holds data ({signature}). bcache needs a reformat of the backing device: its "
        "own superblock goes where the data starts, so the data would be lost",
        "bad-writeback-percent": "writeback_percent must be 0 to 40, not {value}",
        "same-device": "{backing} and {cache} are the same device; name the HDD and the SSD",
        "bcache-sector-mismatch": "{cache} has larger logical sectors ({cache_sector}) than {backing} "
        "({backing_sector})",
        "not-bcache": "{device} is not a bcache device",
        "not-bcache-backing": "{device} is not a bcache backing device or bcacheN",
        "no-cache-attached": "{device} has no cache attached (state: {state})",
        "cache-device-missing": "the cache device of cache set {cset} was not found, so it cannot be wiped",
        "bcache-started-stale": "{device} already runs without its cache set: {trouble}",
        "cache-set-shared": "the cache set {cset} also caches {others}, so its cache device is not wiped",
        "not-a-cache-set": "{device} is not part of a running bcache cache set (the SSD's cache device, or a bcache "
        "device or backing device attached to the set)",
        "already-in-set": "{device} is attached to the cache set {cset} already",
    }
)

B = "{backing}/bcache"


def _empty_device(inv: Inventory, dev: Device, role: str, wipe: bool) -> str | None:
    """Refuse devices that are mounted or in use; return the signature a wiping plan destroys."""
    # An md array the user made (two SSDs in RAID1, say) is a disk to bcache; cachewise never makes one.
    if dev.kind not in ("disk", "partition") and not (dev.md is not None and dev.md.role == "array"):
        raise RecipeError("bcache-not-a-disk", device=dev.display_path, kind=dev.kind, role=role)
    if dev.mountpoints or dev.swap or dev.holders:
        joins = role == "cache" and dev.bcache is not None and dev.bcache.role == "cache"
        raise RecipeError(
            "device-in-use",
            device=dev.display_path,
            why=dev.in_use_reason or "mounted or held",
            next=[next_step("plan-instead", recipe=JOIN)] if joins else [],
        )
    for part in dev.partitions:
        p = inv.by_name(part)
        if p is not None and (p.mountpoints or p.holders):
            raise RecipeError(
                "partition-in-use", device=dev.display_path, partition=p.display_path, why=p.in_use_reason or "in use"
            )
    signature = dev.signature
    if signature and not wipe:
        wipe_it = next_step("allow-wipe", device=dev.display_path)
        if role == "backing":
            raise RecipeError(
                "backing-holds-data",
                device=dev.display_path,
                signature=signature,
                next=[next_step("restore-after"), next_step("keep-data-with-lvmcache")],
            )
        raise RecipeError(
            "holds-data", device=dev.display_path, signature=signature, use="making it a bcache cache", next=[wipe_it]
        )
    return signature


def _attach_and_tune(
    cset: str, mode: str, sequential_cutoff: int, writeback_percent: int, *, pre: tuple[Check, ...] = ()
) -> tuple[list[Step], str]:
    """Attach the registered backing device to the cache set ``cset`` (once ``pre`` holds), set
    its mode and tunables, and keep the tunables in its file: the steps, and the file's text."""
    steps: list[Step] = []
    steps.append(
        Step(
            "attach",
            (),
            write=(f"{B}/attach", cset),
            pre=pre,
            post=(SysfsExists(path=f"{B}/cache"),),
        )
    )
    steps.append(
        Step(
            "cache-mode",
            (),
            write=(f"{B}/cache_mode", mode),
            post=(Sysfs(path=f"{B}/cache_mode", value=f"[{mode}]"),),
        )
    )
    steps.append(
        Step(
            "sequential-cutoff",
            (),
            write=(f"{B}/sequential_cutoff", str(sequential_cutoff)),
        )
    )
    steps.append(
        Step(
            "writeback-percent",
            (),
            write=(f"{B}/writeback_percent", str(writeback_percent)),
        )
    )
    # The kernel keeps cache_mode in the superblock but forgets these two at every boot: the
    # file keeps them, and cachewise's udev rule sets them again (advisor/tunables.py).
    kept = tunables.settings_text({"sequential_cutoff": sequential_cutoff, "writeback_percent": writeback_percent})
    steps.append(
        Step(
            "tunables-file",
            (),
            write=(TUNABLES_FILE, kept),
            post=(TunablesFile(file=TUNABLES_FILE, value=kept),),
        )
    )
    return steps, kept


def _devices(inv: Inventory, mode: str, writeback_percent: int, *paths: str) -> list[Device]:
    """The devices named, once the mode and writeback_percent are checked (a refusal otherwise)."""
    if mode not in BCACHE.modes:
        raise RecipeError("bad-mode", mode=mode)
    if not 0 <= writeback_percent <= 40:
        raise RecipeError("bad-writeback-percent", value=writeback_percent)
    devs = []
    for path in paths:
        dev = find_device(inv, path)
        if dev is None:
            raise RecipeError("no-such-device", path=path, next=[next_step("see-devices")])
        devs.append(dev)
    return devs


def _check_sectors(cache: Device, backing: Device) -> None:
    """Refused when the cache has larger logical sectors than the backing device."""
    if (cache.logical_sector_size or 512) > (backing.logical_sector_size or 512):
        raise RecipeError(
            "bcache-sector-mismatch",
            cache=cache.display_path,
            cache_sector=cache.logical_sector_size,
            backing=backing.display_path,
            backing_sector=backing.logical_sector_size,
        )


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
    backing, cache = _devices(inv, mode, writeback_percent, backing_path, cache_path)
    if backing.name == cache.name or cache.parent == backing.name or backing.parent == cache.name:
        raise RecipeError("same-device", backing=backing_path, cache=cache_path)
    destroys = []
    for dev, role in ((backing, "backing"), (cache, "cache")):
        signature = _empty_device(inv, dev, role, wipe)
        if signature:
            destroys.append(f"{dev.display_path}: {signature}")
    for barrier in barring(fast_barriers(inv, cache), BCACHE):
        # the safety gate: another system's device, or too few buckets for the kernel
        raise RecipeError(barrier.code, next=barrier.next, **barrier.facts)
    _check_sectors(cache, backing)
    cset = str(uuid.uuid4())
    bp, cp = backing.display_path, cache.display_path
    steps: list[Step] = []
    if destroys:
        for dev in (backing, cache):
            steps.append(
                Step(
                    f"wipefs-{dev.name}",
                    ("wipefs", "--all", dev.display_path),
                    pre=(NotMounted(device=dev.display_path),),
                    post=(NoSignature(device=dev.display_path),),
                )
            )
    steps.append(
        Step(
            "make-bcache",
            ("make-bcache", "--cset-uuid", cset, *(["--writeback"] if mode == "writeback" else []), "-B", bp, "-C", cp),
            pre=(NoSignature(device=bp), NoSignature(device=cp), NotMounted(device=bp), NotMounted(device=cp)),
            post=(BcacheSuperblock(device=bp), BcacheSuperblock(device=cp)),
            undo=(("wipefs", "--all", bp), ("wipefs", "--all", cp)),
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
            (),
            write=("/sys/fs/bcache/register_quiet", cp),
            post=(SysfsExists(path=f"/sys/fs/bcache/{cset}"),),
        )
    )
    steps.append(
        Step(
            "register-backing",
            (),
            write=("/sys/fs/bcache/register_quiet", bp),
            post=(SysfsExists(path=B),),
        )
    )
    tune, kept = _attach_and_tune(cset, mode, sequential_cutoff, writeback_percent)
    steps += tune
    return Plan(
        kind=CREATE,
        title=f"Make a {mode} bcache of {bp} with {cp}",
        devices=(bind(backing, "backing"), bind(cache, "cache")),
        steps=tuple(steps),
        layout_before=(
            f"{bp}: {destroys[0] if destroys and bp in destroys[0] else 'empty'}",
            f"{cp}: {'has data' if any(cp in d for d in destroys) else 'empty'}",
        ),
        layout_after=(
            f"{bp}: bcache backing device; use /dev/bcache/by-uuid/<its UUID> (bcacheN numbers change between boots)",
            f"{cp}: bcache cache, cache set {cset}",
            f"{TUNABLES_FILE}: {kept}, set again whenever the device appears (at every boot)",
        ),
        space={"backing_bytes": backing.size_bytes, "cache_bytes": cache.size_bytes},
        notes=(
            f"{{backing}} is the backing device's sysfs directory, found when the step runs "
            f"(/sys/class/block/{backing.name} now).",
            "{backing-uuid} is the backing device's bcache UUID (dev.uuid), which make-bcache chooses and the "
            "step reads from sysfs.",
            "Make the file system on the bcache device, not on the backing disk.",
            "Undo it by detaching the cache; dirty data is written back first.",
        )
        + (
            ("Writeback: dirty data lives only on the SSD until written back (T-MODE-1).",)
            if mode == "writeback"
            else ()
        ),
    )


def bcache_join(
    inv: Inventory,
    backing_path: str,
    set_path: str,
    *,
    mode: str = "writethrough",
    sequential_cutoff: int = BCACHE_SEQUENTIAL_CUTOFF,
    writeback_percent: int = 10,
    wipe: bool = False,
) -> Plan:
    """One SSD caching several disks: format an empty disk as a bcache backing device and attach
    it to the cache set that runs already on the SSD (``set_path``: the SSD's cache device, or a
    bcache device or backing device attached to the set), with its own mode and tunables."""
    backing, member = _devices(inv, mode, writeback_percent, backing_path, set_path)
    cset = member.bcache.cache_set_uuid if member.bcache is not None else None
    cache = next(
        (
            d
            for d in inv.devices
            if d.bcache is not None and d.bcache.role == "cache" and d.bcache.cache_set_uuid == cset
        ),
        None,
    )
    if not cset or cache is None or not re.fullmatch(UUID, cset):
        raise RecipeError("not-a-cache-set", device=member.display_path, next=[next_step("see-devices")])
    if backing.bcache is not None and backing.bcache.cache_set_uuid == cset:
        raise RecipeError("already-in-set", device=backing.display_path, cset=cset)
    if backing.name in (cache.name, cache.parent) or cache.name == backing.parent:
        raise RecipeError("same-device", backing=backing_path, cache=cache.display_path)
    signature = _empty_device(inv, backing, "backing", wipe)
    _check_sectors(cache, backing)
    bp = backing.display_path
    steps: list[Step] = []
    if signature:
        steps.append(
            Step(
                f"wipefs-{backing.name}",
                ("wipefs", "--all", bp),
                pre=(NotMounted(device=bp),),
                post=(NoSignature(device=bp),),
            )
        )
    steps.append(
        Step(
            "make-bcache",
            ("make-bcache", *(["--writeback"] if mode == "writeback" else []), "-B", bp),
            pre=(NoSignature(device=bp), NotMounted(device=bp)),
            post=(BcacheSuperblock(device=bp),),
            undo=(("wipefs", "--all", bp),),
            seconds=3.0,
        )
    )
    steps.append(
        Step(
            "register-backing",
            (),
            write=("/sys/fs/bcache/register_quiet", bp),
            post=(SysfsExists(path=B),),
        )
    )
    # The set must still be there when the step runs (the plan names it; applying checks it).
    tune, kept = _attach_and_tune(
        cset, mode, sequential_cutoff, writeback_percent, pre=(SysfsExists(path=f"/sys/fs/bcache/{cset}"),)
    )
    steps += tune
    shared = [d.display_path for d in set_members(inv, cset)]
    return Plan(
        kind=JOIN,
        title=f"Cache {bp} with the bcache cache set on {cache.display_path} ({mode})",
        devices=(bind(backing, "backing"),),
        steps=tuple(steps),
        layout_before=(
            f"{bp}: {signature or 'empty'}",
            f"{cache.display_path}: bcache cache, cache set {cset}, caching " + (" and ".join(shared) or "nothing"),
        ),
        layout_after=(
            f"{bp}: bcache backing device; use /dev/bcache/by-uuid/<its UUID> (bcacheN numbers change between boots)",
            f"{cache.display_path}: the same cache set, caching " + " and ".join([*shared, bp]),
            f"{TUNABLES_FILE}: {kept}, set again whenever the device appears (at every boot)",
        ),
        space={"backing_bytes": backing.size_bytes, "cache_bytes": cache.size_bytes},
        notes=(
            f"{{backing}} is the new backing device's sysfs directory, found when the step runs "
            f"(/sys/class/block/{backing.name} now).",
            "{backing-uuid} is the new backing device's bcache UUID (dev.uuid), which make-bcache chooses.",
            "The SSD's space is shared: bcache keeps whatever the devices' reads and writes make hot, across them "
            "all; a device's cache_mode and tunables are its own.",
            "Make the file system on the new bcache device, not on the backing disk.",
            "Undo it by detaching this device's cache; the cache set stays for the others.",
        )
        + (
            ("Writeback: dirty data lives only on the SSD until written back (T-MODE-1).",)
            if mode == "writeback"
            else ()
        ),
    )


def bcache_rescue(inv: Inventory, backing: Device, accept_loss: bool) -> Plan:
    """Start a bcache device whose cache set is gone without it, for good. Measured on kernel 6.1
    (docs/dead-ssd.md): when the SSD goes, bcache drops the set, keeps a clean device running
    (a dirty one it stops) and leaves the backing device's superblock naming the set; a detach
    then does nothing, and once stopped (a restart) the device waits for the set. Writing 1 to
    ``running`` while it waits starts it and marks the superblock stale ("inconsistent"), after
    which bcache starts it at every registration. So: stop it (its file system unmounted),
    register the backing device again, and start it."""
    assert backing.bcache is not None
    b, caching = backing.bcache, backing.caching
    assert caching is not None
    if b.state == "inconsistent":
        raise RecipeError("bcache-started-stale", device=backing.display_path, trouble=caching.trouble)
    if (b.cache_mode != "writethrough" or b.state == "dirty") and not accept_loss:
        raise RecipeError("rescue-loses-data", trouble=caching.trouble, next=[next_step("accept-data-loss")])
    bdev = inv.by_name(b.bcache_device) if b.bcache_device else None
    stop = Step(
        "stop",
        (),
        write=(f"{B}/stop", "1"),
        pre=(NotMounted(device=bdev.display_path),) if bdev is not None else (),
        post=(NoSysfs(path=B),),
    )
    steps = (
        stop,
        Step(
            "register",
            (),
            write=("/sys/fs/bcache/register_quiet", backing.display_path),
            post=(Sysfs(path=f"{B}/running", value="0"),),
        ),
        Step(
            "run",
            (),
            write=(f"{B}/running", "1"),
            pre=(Sysfs(path=f"{B}/running", value="0"), NoSysfs(path=f"{B}/cache")),
            post=(Sysfs(path=f"{B}/state", value="inconsistent"),),
        ),
    )
    lacks = failure_of(backing, caching).origin()
    return Plan(
        kind=DETACH,
        title=f"Rescue {backing.display_path}: start its bcache device without the cache set that is gone",
        devices=(bind(backing, "backing"),),
        steps=steps,
        layout_before=(f"{backing.display_path}: bcache backing device, {caching.state}",),
        layout_after=(
            f"{backing.display_path}: bcache backing device without a cache, started at every boot (bcache says "
            f"inconsistent: it was started without its set); {lacks}",
        ),
        notes=(
            f"{caching.trouble[0].upper()}{caching.trouble[1:]}.",
            "Unmount the file system on the bcache device first: the device stops and starts again.",
        ),
    )


def failure_of(backing: Device, caching: Caching) -> Failure:
    """What discovery found wrong with a bcache backing device, as a Failure again."""
    assert backing.bcache is not None
    b = backing.bcache
    said = "stopped" if b.running is False else b.state or ""
    return Failure("bcache", b.bcache_device or backing.name, caching.mode, failed=caching.failed, said=said)


def bcache_detach(inv: Inventory, path: str, *, wipe_cache: bool = False, accept_loss: bool = False) -> Plan:
    """Detach the cache safely: writethrough, writeback_percent 0, wait until clean, detach,
    wait for 'no cache', stop the cache set, optionally wipe the cache device. A bcache whose
    cache set is gone is rescued instead (:func:`bcache_rescue`)."""
    dev = find_device(inv, path)
    if dev is None:
        raise RecipeError("no-such-device", path=path, next=[next_step("see-devices")])
    if dev.bcache is None:
        raise RecipeError("not-bcache", device=dev.display_path)
    backing = dev
    if dev.bcache.role == "bcache" and dev.bcache.backing_device:
        backing = inv.by_name(dev.bcache.backing_device) or dev
    if backing.bcache is None or backing.bcache.role != "backing":
        raise RecipeError("not-bcache-backing", device=dev.display_path)
    if backing.caching is not None and backing.caching.failed:
        return bcache_rescue(inv, backing, accept_loss)
    cset = backing.bcache.cache_set_uuid
    if not cset or backing.bcache.state == "no cache":
        raise RecipeError("no-cache-attached", device=backing.display_path, state=backing.bcache.state)
    cache = next(
        (
            d
            for d in inv.devices
            if d.bcache is not None and d.bcache.role == "cache" and d.bcache.cache_set_uuid == cset
        ),
        None,
    )
    # One SSD may cache several backing devices (one cache set). Stopping the set would stop the
    # others' bcache devices too: it stays while another backing device is attached to it.
    others = set_members(inv, cset, but=backing)
    if others and wipe_cache:
        raise RecipeError(
            "cache-set-shared",
            cset=cset,
            others=" and ".join(d.display_path for d in others),
            next=[next_step("detach-others-first")],
        )
    steps = [
        # First: cachewise's udev rule must not set writeback_percent again while the flush
        # below has it at 0 (a change event on the device runs it).
        Step(
            "forget-tunables",
            (),
            write=(TUNABLES_FILE, ""),
            post=(NoTunablesFile(file=TUNABLES_FILE),),
        ),
        Step(
            "writethrough",
            (),
            write=(f"{B}/cache_mode", "writethrough"),
            post=(Sysfs(path=f"{B}/cache_mode", value="[writethrough]|no cache"),),
        ),
        Step(
            "writeback-percent-0",
            (),
            write=(f"{B}/writeback_percent", "0"),
        ),
        Step(
            "flush",
            (),
            wait=(f"{B}/state", "clean|no cache"),
            progress=BCACHE.progress,
            seconds=30.0,
            post=(Sysfs(path=f"{B}/state", value="clean|no cache"),),
        ),
        Step(
            "detach",
            (),
            write=(f"{B}/detach", "1"),
            post=(Sysfs(path=f"{B}/state", value="no cache"),),
        ),
        Step(
            "detached",
            (),
            wait=(f"{B}/state", "no cache"),
            post=(Sysfs(path=f"{B}/state", value="no cache"),),
            timeout=300.0,
        ),
    ]
    if not others:
        steps.append(
            Step(
                "stop-cache-set",
                (),
                write=(f"/sys/fs/bcache/{cset}/stop", "1"),
                post=(NoSysfs(path=f"/sys/fs/bcache/{cset}"),),
            )
        )
    devices = [bind(backing, "backing")]
    if wipe_cache:
        if cache is None:
            raise RecipeError("cache-device-missing", cset=cset)
        devices.append(bind(cache, "cache"))
        steps.append(
            Step(
                "wipe-cache",
                ("wipefs", "--all", cache.display_path),
                post=(NoSignature(device=cache.display_path),),
            )
        )
    uuid = backing.bcache.dev_uuid if backing.bcache.dev_uuid and re.fullmatch(UUID, backing.bcache.dev_uuid) else None
    kept = str(tunables.path_of(uuid)) if uuid else TUNABLES_FILE
    return Plan(
        kind=DETACH,
        title=f"Detach the cache from {backing.display_path} safely",
        devices=tuple(devices),
        steps=tuple(steps),
        layout_before=(
            f"{backing.display_path}: bcache backing, cache set {cset} ({backing.bcache.cache_mode})",
            f"{kept}: the tunables set again at every boot, if cachewise made the cache",
        ),
        layout_after=(
            f"{backing.display_path}: bcache backing without a cache (the bcache device keeps working, at disk speed)",
            f"{kept}: removed",
        ),
        notes=("Dirty data is written back before the detach; with a large writeback cache this takes minutes.",)
        + (
            (
                f"The cache set stays for {' and '.join(d.display_path for d in others)}: stopping it would stop "
                "their bcache devices too.",
            )
            if others
            else ()
        )
        + ((f"{{backing-uuid}} is the backing device's bcache UUID, {uuid}.",) if uuid else ()),
    )


def set_members(inv: Inventory, cset: str, *, but: Device | None = None) -> list[Device]:
    """The backing devices attached to the cache set ``cset`` (but ``but``)."""
    return [
        d
        for d in inv.devices
        if d.bcache is not None
        and d.bcache.role == "backing"
        and d.bcache.cache_set_uuid == cset
        and d.bcache.state != "no cache"
        and (but is None or d.name != but.name)
    ]


# --- the recipes, as the registry knows them ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CreateOptions:
    backing: str = option("the slow device (empty)", "device", metavar="DEV")
    cache: str = option("the SSD (empty)", "device", metavar="DEV")
    mode: Mode | None = option("cache mode (default writethrough)", "choice", choices=BCACHE.modes, default=None)
    sequential_cutoff: int | None = option(
        "default 4m (T-SEQ-1)", "size", default=None, minimum=0, maximum=(1 << 32) - 1
    )
    writeback_percent: int | None = option("default 10", "number", metavar="N", default=None)
    wipe: bool = option("the devices hold data that may be destroyed", "flag")


def _settings(o: CreateOptions | JoinOptions) -> dict[str, Any]:
    """The mode and tunables the options give, the defaults where they give none."""
    return {
        "mode": o.mode or "writethrough",
        "sequential_cutoff": BCACHE_SEQUENTIAL_CUTOFF if o.sequential_cutoff is None else o.sequential_cutoff,
        "writeback_percent": 10 if o.writeback_percent is None else o.writeback_percent,
        "wipe": o.wipe,
    }


def _create(inv: Inventory, o: CreateOptions) -> Plan:
    return bcache_create(inv, o.backing, o.cache, **_settings(o))


def _adopt(o: CreateOptions, cfg: CacheConfig) -> CreateOptions:
    """The recommendation's mode and tunables where the options give none."""
    check_backend(cfg, BCACHE)
    return replace(
        o,
        mode=o.mode or cfg.mode,
        sequential_cutoff=o.sequential_cutoff
        if o.sequential_cutoff is not None
        else (cfg.sequential_cutoff_bytes or BCACHE_SEQUENTIAL_CUTOFF),
        writeback_percent=o.writeback_percent if o.writeback_percent is not None else (cfg.writeback_percent or 0),
    )


@dataclass(frozen=True, kw_only=True)
class DetachOptions:
    device: str = option("the bcache device or its backing device", "device", metavar="DEV")
    wipe_cache: bool = option("then erase the cache device's bcache superblock", "flag")
    accept_data_loss: bool = option(ACCEPT_LOSS, "flag")


register(
    Recipe(
        CREATE,
        "make a bcache device on empty disks",
        "Format an empty HDD as bcache backing and an empty SSD as its cache (make-bcache), register and attach "
        "them, set cache_mode, sequential_cutoff and writeback_percent, and keep the last two in "
        "/etc/cachewise/bcache/UUID.conf, which the package's udev rule sets again at every boot (the kernel forgets "
        "them). Refuses a backing device that holds data (use lvmcache).",
        CreateOptions,
        _create,
        "makes",
        BCACHE,
        uses=(
            Use("wipefs", "backing|cache"),
            Use("make-bcache", "backing", "cache"),
            Use("bcache-register", "backing|cache"),
            Use("bcache-attach"),
            Use("bcache-cache-mode"),
            Use("bcache-sequential-cutoff"),
            Use("bcache-writeback-percent"),
            Use("bcache-tunables-file"),
        ),
        slow="backing",
        fast="cache",
        adopt=_adopt,
        adopts="mode, sequential_cutoff and writeback_percent",
    )
)
register(
    Recipe(
        DETACH,
        "detach a bcache cache safely (flush first)",
        "Remove the device's tunables file under /etc/cachewise/bcache, switch to writethrough, write back every "
        "dirty block, wait for state clean, detach, wait for 'no cache', stop the cache set.",
        DetachOptions,
        lambda inv, o: bcache_detach(inv, o.device, wipe_cache=o.wipe_cache, accept_loss=o.accept_data_loss),
        "removes",
        BCACHE,
        uses=(
            Use("bcache-tunables-forget"),
            Use("bcache-cache-mode"),
            Use("bcache-writeback-percent"),
            Use("bcache-state"),
            Use("bcache-detach"),
            Use("bcache-stop-set"),
            Use("wipefs", "cache"),
            Use("bcache-stop-device"),
            Use("bcache-register", "backing"),
            Use("bcache-run"),
        ),
    )
)


@dataclass(frozen=True, kw_only=True)
class JoinOptions:
    backing: str = option("the slow device (empty) to cache", "device", metavar="DEV")
    cache: str = option(
        "the SSD's bcache cache device, or a bcache device already cached by it", "device", metavar="DEV"
    )
    mode: Mode | None = option("cache mode (default writethrough)", "choice", choices=BCACHE.modes, default=None)
    sequential_cutoff: int | None = option(
        "default 4m (T-SEQ-1)", "size", default=None, minimum=0, maximum=(1 << 32) - 1
    )
    writeback_percent: int | None = option("default 10", "number", metavar="N", default=None)
    wipe: bool = option("the slow device holds data that may be destroyed", "flag")


register(
    Recipe(
        JOIN,
        "cache another empty disk with a bcache cache set that runs already (one SSD, several disks)",
        "Format an empty HDD as a bcache backing device (make-bcache -B), register it, attach it to the cache set "
        "on the SSD, set its cache_mode, sequential_cutoff and writeback_percent, and keep the last two in "
        "/etc/cachewise/bcache/UUID.conf, as bcache-create does. The SSD's space is shared by every device of the "
        "set; detaching one leaves the set to the others.",
        JoinOptions,
        lambda inv, o: bcache_join(inv, o.backing, o.cache, **_settings(o)),
        "makes",
        BCACHE,
        uses=(
            Use("wipefs", "backing"),
            Use("make-bcache-backing", "backing"),
            Use("bcache-register", "backing"),
            Use("bcache-attach"),
            Use("bcache-cache-mode"),
            Use("bcache-sequential-cutoff"),
            Use("bcache-writeback-percent"),
            Use("bcache-tunables-file"),
        ),
    )
)
