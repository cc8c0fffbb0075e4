"""lvmcache recipes: attach a cache pool to an LV in place, change its mode, uncache.

Recipes read an inventory and build a :class:`~advisor.plan.model.Plan`; they run nothing. Every
refusal is a :class:`RecipeError` whose message says what is wrong, that nothing was changed,
and what to do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.advice.lvmrules import (
    CHUNK_UNIT,
    LVM_EXTENT,
    LVM_PV_METADATA,
    lvm_chunk_size,
    lvm_metadata_size,
)
from advisor.disks.devices import Device, Inventory, LvmInfo
from advisor.plan.checks import (
    CacheMode,
    LvExists,
    NoLv,
    NoSignature,
    NotMounted,
    NotPv,
    NotPvInVg,
    NotSegtype,
    Pv,
    PvInVg,
    Segtype,
)
from advisor.plan.model import BoundDevice, Plan, Step
from advisor.units import human_size
from recipes.common import NOTHING, RecipeError, bind

NAME_RE = re.compile(r"[A-Za-z0-9+_.][A-Za-z0-9+_.-]*")
PV_HEADER = LVM_PV_METADATA


@dataclass(frozen=True)
class CacheSpec:
    size_bytes: int
    mode: str = "writethrough"
    chunk_bytes: int | None = None  # default: lvm2's rule
    metadata_bytes: int | None = None
    policy: str = "smq"


def find_lv(inv: Inventory, name: str) -> Device:
    """An LV named VG/LV, /dev/VG/LV or /dev/mapper/VG-LV."""
    text = name.removeprefix("/dev/")
    for d in inv.devices:
        if (
            d.lvm is not None
            and d.lvm.role == "lv"
            and (f"{d.lvm.vg}/{d.lvm.lv}" == text or d.display_path == name or d.devnode == name or name in d.links)
        ):
            return d
    raise RecipeError(
        f"{name} is not a logical volume on this machine (give it as VG/LV; see `cachewise scan`). {NOTHING}"
    )


def _check_name(kind: str, name: str) -> None:
    if not NAME_RE.fullmatch(name) or len(name) > 100:
        raise RecipeError(
            f"the {kind} name {name!r} has characters lvm2 does not allow (only letters, digits, + _ . -). {NOTHING}"
        )


def uncached_lv(inv: Inventory, lv_name: str) -> tuple[Device, str, str]:
    """The LV a cache is to be attached to, with its VG and LV names, checked: names lvm2 takes
    and short enough to name the cache after, and no cache on it yet."""
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    _check_name("VG", vg)
    _check_name("LV", lv)
    if origin.lvm.segtype in ("cache", "writecache"):
        raise RecipeError(f"{vg}/{lv} is already cached ({origin.lvm.segtype}); remove that cache first. {NOTHING}")
    if len(lv) > 80:
        raise RecipeError(f"the LV name {lv!r} is too long to name its cache after. {NOTHING}")
    return origin, vg, lv


def _fast_device(inv: Inventory, ssd: Device, origin: Device, allow_partition: bool) -> None:
    if ssd.name == origin.name or ssd.name in origin.slaves:
        raise RecipeError(f"{ssd.display_path} is the slow device itself; name a different SSD. {NOTHING}")
    if ssd.kind not in ("disk", "partition") and not (ssd.md is not None and ssd.md.role == "array"):
        raise RecipeError(
            f"{ssd.display_path} is a {ssd.kind} device, not a disk; give the SSD's whole disk (or the md "
            f"array of two SSDs). {NOTHING}"
        )
    if ssd.kind == "partition" and not allow_partition:
        raise RecipeError(
            f"{ssd.display_path} is a partition, and a whole disk is expected for the cache; give the "
            f"disk (/dev/{ssd.parent}) or pass --allow-partition to use just this partition. {NOTHING}"
        )
    if ssd.mountpoints or ssd.swap:
        where = ", ".join(ssd.mountpoints) or "swap"
        raise RecipeError(f"{ssd.display_path} is mounted ({where}); unmount it first if its data can go. {NOTHING}")
    for part in ssd.partitions:
        p = inv.by_name(part)
        if p is not None and (p.mountpoints or p.holders or p.lvm is not None):
            raise RecipeError(
                f"{ssd.display_path} has a partition in use ({p.display_path}: {p.in_use_reason or 'in use'}). "
                f"{NOTHING}"
            )
    if ssd.read_only:
        raise RecipeError(f"{ssd.display_path} is read-only. {NOTHING}")


@dataclass(frozen=True)
class FastSide:
    """The SSD or SSDs a cache goes on, checked: with two, the cache is an LVM raid1 on both."""

    devices: tuple[Device, ...]
    in_vg: tuple[bool, ...]
    destroys: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(d.display_path for d in self.devices)

    @property
    def mirrored(self) -> bool:
        return len(self.devices) == 2

    @property
    def size_bytes(self) -> int:
        return min(d.size_bytes for d in self.devices)

    def header_bytes(self) -> int:
        """LVM's label and metadata area on an SSD that is not a PV yet."""
        return 0 if all(self.in_vg) else PV_HEADER

    def bound(self) -> tuple[BoundDevice, ...]:
        return tuple(bind(d, role) for d, role in zip(self.devices, FAST_ROLES, strict=False))

    def join_steps(self, vg: str) -> list[Step]:
        """pvcreate and vgextend for each SSD not yet in the VG."""
        steps: list[Step] = []
        for n, (dev, in_vg) in enumerate(zip(self.devices, self.in_vg, strict=True), 1):
            if in_vg:
                continue
            pv, suffix = dev.display_path, ("" if len(self.devices) == 1 else f"-{n}")
            wiped = any(d.startswith(f"{pv}:") for d in self.destroys)
            steps.append(
                Step(
                    f"pvcreate{suffix}",
                    f"make {pv} an LVM physical volume",
                    ("pvcreate", "--yes", *(["--force"] if wiped else []), pv),
                    pre=(NotMounted(device=pv),) + (() if wiped else (NoSignature(device=pv),)),
                    post=(Pv(device=pv),),
                    undo=(("pvremove", "--yes", pv),),
                    destructive=True,
                )
            )
            steps.append(
                Step(
                    f"vgextend{suffix}",
                    f"add {pv} to VG {vg}",
                    ("vgextend", vg, pv),
                    pre=(Pv(device=pv),),
                    post=(PvInVg(device=pv, vg=vg),),
                    undo=(("vgreduce", vg, pv),),
                )
            )
        return steps

    def lvcreate(self, step_id: str, what: str, vg: str, name: str, size: int) -> Step:
        """A step that makes LV ``name`` of ``size`` bytes on the SSD, or as raid1 across both."""
        raid = ("--type", "raid1", "-m", "1") if self.mirrored else ()
        where = " and ".join(self.paths)
        return Step(
            step_id,
            f"create the {what} LV {vg}/{name} ({human_size(size)})"
            + (f" mirrored (raid1) on {where}" if self.mirrored else f" on {where}"),
            (
                "lvcreate",
                "--yes",
                "--wipesignatures",
                "y",
                *raid,
                "-n",
                name,
                "-L",
                f"{size // 1024}k",
                vg,
                *self.paths,
            ),
            pre=tuple(PvInVg(device=p, vg=vg) for p in self.paths) + (NoLv(lv=f"{vg}/{name}"),),
            post=(LvExists(lv=f"{vg}/{name}"),),
            undo=(("lvremove", "--yes", f"{vg}/{name}"),),
            seconds=8.0 if self.mirrored else 2.0,
        )

    def attach_plan(
        self,
        kind: str,
        what: str,
        origin: Device,
        steps: list[Step],
        after: tuple[str, str],
        space: dict[str, int],
        notes: list[str],
    ) -> Plan:
        """The plan of a cache attached to ``origin`` on this fast side: ``what`` names the cache
        ("{mirror}" marks where " mirrored" goes), ``after`` the LV and the cache afterwards."""
        assert origin.lvm is not None
        vg, vglv, where = origin.lvm.vg or "", f"{origin.lvm.vg}/{origin.lvm.lv}", " and ".join(self.paths)
        what = what.replace("{mirror}", " mirrored" if self.mirrored else "")
        return Plan(
            kind=kind,
            title=f"Attach a {what} on {where} to {vglv}",
            devices=(bind(origin, "origin"), *self.bound()),
            steps=tuple(steps),
            destroys=self.destroys,
            layout_before=(
                f"{vglv}: {origin.lvm.segtype or 'linear'} LV, {human_size(origin.size_bytes)}",
                self.describe(vg),
            ),
            layout_after=(after[0], after[1] + (f", raid1 on {where}" if self.mirrored else f" on {where}")),
            space=space,
            notes=tuple(notes),
        )

    def describe(self, vg: str) -> str:
        parts = []
        for dev, in_vg in zip(self.devices, self.in_vg, strict=True):
            held = next((d.split(": ", 1)[1] for d in self.destroys if d.startswith(f"{dev.display_path}:")), None)
            parts.append(f"{dev.display_path}: " + (f"PV of {vg}" if in_vg else (held or "empty")))
        return "; ".join(parts)


FAST_ROLES = ("ssd", "ssd2")
RAID_META = LVM_EXTENT  # the rmeta sub-LV lvm2 adds to each leg of a raid1 LV


def fast_side(
    inv: Inventory, paths: str | Sequence[str], origin: Device, vg: str, *, wipe: bool, allow_partition: bool
) -> FastSide:
    """The SSD(s) named for a cache of ``origin`` in VG ``vg``, checked: each exists, is not the
    slow device, is a whole disk (or an allowed partition), unmounted, writable, in no other VG,
    without data unless ``wipe``; two must be different devices."""
    from advisor.disks.discovery import find_device

    names = [paths] if isinstance(paths, str) else list(paths)
    if not 1 <= len(names) <= 2:
        raise RecipeError(f"name one SSD, or two to mirror the cache (LVM raid1); {len(names)} were given. {NOTHING}")
    devices: list[Device] = []
    for path in names:
        ssd = find_device(inv, path)
        if ssd is None:
            raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
        if any(d.name == ssd.name for d in devices):
            raise RecipeError(f"{path} is named twice; a mirror needs two different SSDs. {NOTHING}")
        _fast_device(inv, ssd, origin, allow_partition)
        devices.append(ssd)
    ssd_lss, origin_lss = max(d.logical_sector_size or 512 for d in devices), origin.logical_sector_size or 512
    if ssd_lss > origin_lss:
        worst = max(devices, key=lambda d: d.logical_sector_size or 512)
        raise RecipeError(
            f"{worst.display_path} has {ssd_lss}-byte logical sectors and "
            f"{vg}/{origin.lvm.lv if origin.lvm else origin.name} "
            f"{origin_lss}-byte ones: a file system made with 512-byte sectors may not work through a "
            f"4 KiB-sector cache (lvmcache(7)). {NOTHING}"
        )
    in_vg: list[bool] = []
    destroys: list[str] = []
    for ssd in devices:
        member = ssd.lvm is not None and ssd.lvm.role == "pv"
        if member and ssd.lvm is not None and ssd.lvm.vg not in (vg, None):
            raise RecipeError(
                f"{ssd.display_path} is a physical volume of another VG ({ssd.lvm.vg}); a cache must be "
                f"in the same VG as the LV ({vg}) (lvmcache(7)). Free it from {ssd.lvm.vg} first. {NOTHING}"
            )
        in_vg.append(member)
        if not member and ssd.signature:
            if not wipe:
                raise RecipeError(
                    f"{ssd.display_path} holds data ({ssd.signature}); making it a cache "
                    "destroys that. If it can go, pass --wipe (and confirm). " + NOTHING
                )
            destroys.append(f"{ssd.display_path}: {ssd.signature}")
    return FastSide(tuple(devices), tuple(in_vg), tuple(destroys))


def lvmcache_attach(
    inv: Inventory,
    lv_name: str,
    ssd_path: str | Sequence[str],
    spec: CacheSpec,
    *,
    wipe: bool = False,
    allow_partition: bool = False,
) -> Plan:
    """Attach a cache pool on ``ssd_path`` to the LV ``lv_name`` in place: the SSD becomes a PV
    of the LV's VG, a cache pool of the given size is made on it, and lvconvert attaches it.
    With two SSDs the pool's data and metadata are LVM raid1 across both (lvmcache(7), "RAID1
    cache device"): an SSD can fail without losing the dirty blocks of a writeback cache."""
    origin, vg, lv = uncached_lv(inv, lv_name)
    if spec.mode not in ("writethrough", "writeback"):
        raise RecipeError(f"cache mode {spec.mode!r} is not writethrough or writeback. {NOTHING}")
    if spec.policy not in ("smq", "mq", "cleaner"):
        raise RecipeError(f"cache policy {spec.policy!r} is not smq, mq or cleaner. {NOTHING}")
    fast = fast_side(inv, ssd_path, origin, vg, wipe=wipe, allow_partition=allow_partition)

    chunk = spec.chunk_bytes or lvm_chunk_size(spec.size_bytes)
    if chunk % CHUNK_UNIT or not CHUNK_UNIT <= chunk <= 1 << 30:
        raise RecipeError(
            f"chunk size {human_size(chunk)} is not a multiple of 32 KiB between 32 KiB and 1 GiB. {NOTHING}"
        )
    size = -(-spec.size_bytes // LVM_EXTENT) * LVM_EXTENT
    meta = spec.metadata_bytes or lvm_metadata_size(size, chunk)
    meta = -(-meta // LVM_EXTENT) * LVM_EXTENT
    need = size + 2 * meta + fast.header_bytes() + (2 * RAID_META if fast.mirrored else 0)
    if need > fast.size_bytes:
        which = "each SSD" if fast.mirrored else fast.paths[0]
        raise RecipeError(
            f"{which} ({human_size(fast.size_bytes)}) is too small for a {human_size(size)} "
            f"cache with {human_size(meta)} of metadata and its spare ({human_size(need)} in all); "
            f"choose a smaller --size. {NOTHING}"
        )

    vglv = f"{vg}/{lv}"
    pool, pool_meta = f"{lv}_cache", f"{lv}_cache_meta"
    steps = fast.join_steps(vg)
    steps.append(fast.lvcreate("lvcreate-data", "cache data", vg, pool, size))
    steps.append(fast.lvcreate("lvcreate-meta", "cache metadata", vg, pool_meta, meta))
    steps.append(
        Step(
            "cache-pool",
            f"combine them into a cache pool (chunk {human_size(chunk)}, {spec.mode}, {spec.policy})",
            (
                "lvconvert",
                "--yes",
                "--type",
                "cache-pool",
                "--poolmetadata",
                f"{vg}/{pool_meta}",
                "--chunksize",
                f"{chunk // 1024}k",
                "--cachemode",
                spec.mode,
                "--cachepolicy",
                spec.policy,
                f"{vg}/{pool}",
            ),
            pre=(LvExists(lv=f"{vg}/{pool}"), LvExists(lv=f"{vg}/{pool_meta}")),
            post=(Segtype(lv=f"{vg}/{pool}", segtype="cache-pool"),),
            undo=(("lvremove", "--yes", f"{vg}/{pool}"),),
        )
    )
    steps.append(
        Step(
            "attach",
            f"attach the cache pool to {vglv} (in place; the data stays where it is)",
            ("lvconvert", "--yes", "--type", "cache", "--cachepool", f"{vg}/{pool}", vglv),
            pre=(Segtype(lv=f"{vg}/{pool}", segtype="cache-pool"), NotSegtype(lv=vglv, segtype="cache")),
            post=(Segtype(lv=vglv, segtype="cache"), CacheMode(lv=vglv, mode=spec.mode)),
            undo=(("lvconvert", "--yes", "--uncache", vglv),),
            seconds=3.0,
        )
    )
    space = {
        "cache_bytes": size,
        "metadata_bytes": meta,
        "spare_metadata_bytes": meta,
        "ssd_bytes_used": need,
        "ssd_bytes": fast.size_bytes,
    }
    release = " ".join(f"--release-ssd {p}" for p in fast.paths)
    notes = [
        "The cached LV keeps its name and device path; its file system stays mounted.",
        f"Undo with `cachewise plan lvmcache-uncache --lv {vglv} {release}` (flushes dirty blocks first).",
    ]
    if fast.mirrored:
        notes.append(
            "The cache pool's data and metadata are LVM raid1 on both SSDs: either SSD can fail and the "
            "cached LV stays readable, dirty blocks included; `cachewise scan` reports a degraded mirror "
            "(replace the SSD with lvconvert --repair)."
        )
    elif spec.mode == "writeback":
        notes.append(
            "Writeback: blocks written are on the SSD only until flushed; an SSD failure loses them (T-MODE-1)."
        )
    return fast.attach_plan(
        "lvmcache-attach",
        f"{human_size(size)}{{mirror}} {spec.mode} lvmcache",
        origin,
        steps,
        (
            f"{vglv}: cache LV, {human_size(origin.size_bytes)} (origin {vglv}_corig)",
            f"{vg}/{pool}: cache pool {human_size(size)}, chunk {human_size(chunk)}, {spec.mode}, "
            f"{spec.policy}, metadata {human_size(meta)} + spare",
        ),
        space,
        notes,
    )


def lvmcache_uncache(
    inv: Inventory, lv_name: str, *, keep_pool: bool = False, release: str | Sequence[str] | None = None
) -> Plan:
    """Remove the cache from an LV: lvconvert flushes dirty blocks (cleaner policy), then drops
    the cache pool (--uncache) or keeps it as an LV (--splitcache); ``release`` names the SSD(s)
    to take out of the VG afterwards (both, for a mirrored pool)."""
    return remove_cache(inv, lv_name, "cache", keep=keep_pool, release=release)


# What each LVM cache type is called, the plan kind that removes it, the progress the executor
# shows while lvconvert flushes, and the option that keeps the cache LV.
REMOVERS = {
    "cache": ("lvmcache", "lvmcache-uncache", "cache_dirty", "--keep-pool", "cache pool"),
    "writecache": ("dm-writecache", "writecache-detach", "writecache_dirty", "--keep-cachevol", "cache volume"),
}


def cache_pvs(inv: Inventory, lv_name: str) -> list[Device]:
    """The PVs that hold nothing but the cache of ``lv_name`` (its pool's or cache volume's
    sub-LVs): the SSD(s) a removal can give back. A PV that also holds the origin or any other
    LV is not among them."""
    lv = find_lv(inv, lv_name)
    assert lv.lvm is not None
    vg, prefix = lv.lvm.vg, f"{lv.lvm.lv}_"

    def cache_part(name: str) -> bool:
        d = inv.by_name(name)
        if d is None or d.lvm is None or d.lvm.role != "lv" or d.lvm.vg != vg or not d.lvm.lv:
            return False
        return d.lvm.lv.startswith(prefix) and not d.lvm.lv.endswith(("_corig", "_wcorig"))

    return [
        d
        for d in inv.devices
        if d.lvm is not None
        and d.lvm.role == "pv"
        and d.lvm.vg == vg
        and d.holders
        and all(cache_part(h) for h in d.holders)
    ]


def remove_cache(
    inv: Inventory, lv_name: str, segtype: str, *, keep: bool = False, release: str | Sequence[str] | None = None
) -> Plan:
    """The plan that flushes and removes an LVM cache of ``segtype`` (cache or writecache) from
    an LV, then releases the SSD(s) named."""
    from advisor.disks.discovery import find_device

    name, kind, progress, keep_flag, what = REMOVERS[segtype]
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    vglv = f"{vg}/{lv}"
    if origin.lvm.segtype != segtype:
        other = {
            "cache": " (it is an lvmcache: use lvmcache-uncache)",
            "writecache": " (it is a dm-writecache: use writecache-detach)",
        }.get(origin.lvm.segtype or "", "")
        raise RecipeError(
            f"{vglv} is not cached with {name} (segment type {origin.lvm.segtype or 'unknown'}){other}. {NOTHING}"
        )
    flag = "--splitcache" if keep else "--uncache"
    steps = [
        Step(
            "uncache",
            f"flush dirty blocks to the slow device and {'split off' if keep else 'remove'} the {what} of {vglv}",
            ("lvconvert", "--yes", flag, vglv),
            pre=(Segtype(lv=vglv, segtype=segtype),),
            post=(NotSegtype(lv=vglv, segtype=segtype),),
            seconds=5.0,
            progress=progress,
        )
    ]
    devices = [bind(origin, "origin")]
    names = [] if release is None else ([release] if isinstance(release, str) else list(release))
    if len(names) > 2:
        raise RecipeError(f"a cache is on one SSD or a mirrored pair; {len(names)} were named to release. {NOTHING}")
    if names and keep:
        raise RecipeError(f"{keep_flag} keeps the cache on the SSD, so it cannot be released too. {NOTHING}")
    released: list[Device] = []
    for n, path in enumerate(names, 1):
        ssd = find_device(inv, path)
        if ssd is None or ssd.lvm is None or ssd.lvm.role != "pv" or ssd.lvm.vg != vg:
            raise RecipeError(f"{path} is not a physical volume of VG {vg}. {NOTHING}")
        if any(d.name == ssd.name for d in released):
            raise RecipeError(f"{path} is named twice. {NOTHING}")
        released.append(ssd)
        pv, suffix = ssd.display_path, ("" if len(names) == 1 else f"-{n}")
        devices.append(bind(ssd, FAST_ROLES[n - 1]))
        steps.append(
            Step(
                f"vgreduce{suffix}",
                f"take {pv} out of VG {vg}",
                ("vgreduce", vg, pv),
                pre=(NotSegtype(lv=vglv, segtype=segtype),),
                post=(NotPvInVg(device=pv, vg=vg),),
                undo=(("vgextend", vg, pv),),
            )
        )
        steps.append(
            Step(
                f"pvremove{suffix}",
                f"remove the LVM label from {pv}",
                ("pvremove", "--yes", pv),
                post=(NotPv(device=pv),),
                undo=(("pvcreate", "--yes", pv),),
            )
        )
    label = "cache" if segtype == "cache" else "writecache"
    return Plan(
        kind=kind,
        title=f"Remove the {label} from {vglv}",
        devices=tuple(devices),
        steps=tuple(steps),
        layout_before=(f"{vglv}: {label} LV",),
        layout_after=(f"{vglv}: plain LV, same data",) + tuple(f"{d.display_path}: free" for d in released),
        notes=(
            "Dirty blocks are written back before the cache goes; this can take a while with a big writeback cache.",
        ),
    )


def lvmcache_mode(inv: Inventory, lv_name: str, mode: str) -> Plan:
    """Switch a cached LV between writethrough and writeback. Leaving writeback, lvm2 flushes
    the dirty blocks first (it switches to the cleaner policy and waits); the executor shows the
    dirty-block count meanwhile."""
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vglv = f"{origin.lvm.vg}/{origin.lvm.lv}"
    if origin.lvm.segtype != "cache":
        raise RecipeError(f"{vglv} is not cached (segment type {origin.lvm.segtype or 'unknown'}). {NOTHING}")
    if mode not in ("writethrough", "writeback"):
        raise RecipeError(f"cache mode {mode!r} is not writethrough or writeback. {NOTHING}")
    other = "writeback" if mode == "writethrough" else "writethrough"
    step = Step(
        "cache-mode",
        f"switch {vglv} to {mode}" + (" (dirty blocks are written back first)" if mode == "writethrough" else ""),
        ("lvchange", "--yes", "--cachemode", mode, vglv),
        pre=(Segtype(lv=vglv, segtype="cache"),),
        post=(CacheMode(lv=vglv, mode=mode),),
        undo=(("lvchange", "--yes", "--cachemode", other, vglv),),
        seconds=5.0,
        progress="cache_dirty" if mode == "writethrough" else "",
    )
    notes = (
        ("Writeback: blocks written are on the SSD only until flushed; an SSD failure loses them (T-MODE-1).",)
        if mode == "writeback"
        else ()
    )
    return Plan(
        kind="lvmcache-mode",
        title=f"Switch the cache of {vglv} to {mode}",
        devices=(bind(origin, "origin"),),
        steps=(step,),
        layout_before=(f"{vglv}: cache LV",),
        layout_after=(f"{vglv}: cache LV in {mode}",),
        notes=notes,
    )


def lvmcache_new(
    inv: Inventory,
    hdd_path: str,
    ssd_path: str | Sequence[str],
    vg: str,
    lv: str,
    spec: CacheSpec,
    *,
    wipe: bool = False,
) -> Plan:
    """A new cached LV on empty disks: all become PVs of a new VG, the LV fills the HDD, and the
    cache pool on the SSD (or mirrored on two) is attached as in :func:`lvmcache_attach`."""
    from advisor.disks.discovery import find_device

    _check_name("VG", vg)
    _check_name("LV", lv)
    if any(d.lvm is not None and d.lvm.vg == vg for d in inv.devices):
        raise RecipeError(f"a VG named {vg} already exists; choose another name, or use lvmcache-attach. {NOTHING}")
    ssd_paths = [ssd_path] if isinstance(ssd_path, str) else list(ssd_path)
    if not 1 <= len(ssd_paths) <= 2:
        raise RecipeError(
            f"name one SSD, or two to mirror the cache (LVM raid1); {len(ssd_paths)} were given. {NOTHING}"
        )
    named = [(hdd_path, find_device(inv, hdd_path))] + [(p, find_device(inv, p)) for p in ssd_paths]
    for path, dev in named:
        if dev is None:
            raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
    devs = [d for _, d in named if d is not None]
    hdd, ssds = devs[0], devs[1:]
    if len({d.name for d in devs}) != len(devs):
        raise RecipeError(f"{' and '.join(p for p, _ in named)} name the same device twice. {NOTHING}")
    destroys = []
    for dev in devs:
        _fast_device(inv, dev, ssds[0] if dev is hdd else hdd, allow_partition=True)
        if dev.signature and not wipe:
            raise RecipeError(f"{dev.display_path} holds data ({dev.signature}); pass --wipe if it can go. {NOTHING}")
        if dev.signature:
            destroys.append(f"{dev.display_path}: {dev.signature}")
    hp, sps = hdd.display_path, [d.display_path for d in ssds]
    create = [
        Step(
            f"pvcreate-{i}",
            f"make {p} an LVM physical volume",
            ("pvcreate", "--yes", *(["--force"] if destroys else []), p),
            pre=(NotMounted(device=p),) + (() if destroys else (NoSignature(device=p),)),
            post=(Pv(device=p),),
            undo=(("pvremove", "--yes", p),),
            destructive=True,
        )
        for i, p in enumerate((hp, *sps), 1)
    ]
    create.append(
        Step(
            "vgcreate",
            f"create VG {vg} on {hp}",
            ("vgcreate", vg, hp),
            post=(PvInVg(device=hp, vg=vg),),
            undo=(("vgremove", "--yes", vg),),
        )
    )
    for n, sp in enumerate(sps, 1):
        create.append(
            Step(
                "vgextend" if len(sps) == 1 else f"vgextend-{n}",
                f"add {sp} to VG {vg}",
                ("vgextend", vg, sp),
                post=(PvInVg(device=sp, vg=vg),),
                undo=(("vgreduce", vg, sp),),
            )
        )
    create.append(
        Step(
            "lvcreate-origin",
            f"create {vg}/{lv} on all of {hp}",
            ("lvcreate", "--yes", "--wipesignatures", "y", "-n", lv, "-l", "100%PVS", vg, hp),
            post=(LvExists(lv=f"{vg}/{lv}"),),
            undo=(("lvremove", "--yes", f"{vg}/{lv}"),),
        )
    )
    # The cache steps of an attach, planned against the inventory as it will be.
    future_ssds = {
        d.name: replace(d, lvm=LvmInfo("pv", vg), fs_type=None, partition_table=None, partitions=()) for d in ssds
    }
    origin = replace(
        hdd,
        name=f"{vg}-{lv}",
        kind="lvm",
        devnode=f"/dev/{vg}/{lv}",
        stable_path=f"/dev/{vg}/{lv}",
        lvm=LvmInfo("lv", vg, lv, "linear"),
        fs_type=None,
        partition_table=None,
        partitions=(),
        slaves=(hdd.name,),
    )
    future = replace(inv, devices=tuple(future_ssds.get(d.name, d) for d in inv.devices) + (origin,))
    attach = lvmcache_attach(future, f"{vg}/{lv}", sps, spec)
    state = "empty" if not destroys else "has data"
    return replace(
        attach,
        kind="lvmcache-new",
        title=f"New cached LV {vg}/{lv}: {hp} cached by {' and '.join(sps)}" + (" (mirrored)" if len(sps) == 2 else ""),
        devices=(bind(hdd, "origin"), *(bind(d, role) for d, role in zip(ssds, FAST_ROLES, strict=False))),
        steps=tuple(create) + attach.steps,
        destroys=tuple(destroys),
        layout_before=tuple(f"{p}: {state}" for p in (hp, *sps)),
        notes=(
            f"Make the file system on /dev/{vg}/{lv} after the cache is attached only if you accept "
            "that mkfs fills it with cold data (D-WARM-1); otherwise make it before step "
            f"{len(create) + 1} by applying the plan in two runs.",
        )
        + attach.notes[2:],
    )
