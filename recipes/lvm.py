"""What the LVM recipes share: finding and checking the LV, the SSD(s) a cache goes on (one, or
two mirrored as LVM raid1), and the removal of an LVM cache (lvmcache or dm-writecache).

Recipes read an inventory and build a :class:`~advisor.plan.model.Plan`; they run nothing. Every
refusal is a :class:`~recipes.common.RecipeError` with a code and its facts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.advice.lvmrules import LVM_EXTENT, LVM_PV_METADATA
from advisor.backends import Backend, by_segtype
from advisor.disks.devices import Caching, Device, InactiveLv, Inventory
from advisor.disks.discovery import find_device, inactive_failure
from advisor.disks.failure import Failure
from advisor.errors import codes, next_step
from advisor.plan.checks import (
    Check,
    LvExists,
    LvPartial,
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
from recipes.common import RecipeError, bind
from recipes.registry import remover

NAME_RE = re.compile(r"[A-Za-z0-9+_.][A-Za-z0-9+_.-]*")
PV_HEADER = LVM_PV_METADATA
FAST_ROLES = ("ssd", "ssd2")
# The names lvm2 gives its own sub-LVs (a thin pool's data and metadata, a cache pool's, a cache's
# origin, raid images, the spare metadata LV)
SUB_LV = re.compile(r"_(tdata|tmeta|cdata|cmeta|corig|wcorig|cvol|cpool|rimage_\d+|rmeta_\d+|pmspare)$")
RAID_META = LVM_EXTENT  # the rmeta sub-LV lvm2 adds to each leg of a raid1 LV

codes(
    {
        "not-an-lv": "{name} is not a logical volume on this machine",
        "lv-is-part": "{name} is one of LVM's own sub-LVs (a part of a pool or cache), not an LV to name",
        "bad-lvm-name": "the {what} name {name!r} has characters lvm2 does not allow (only letters, digits, + _ . -)",
        "lv-already-cached": "{lv} is already cached ({segtype})",
        "lv-name-too-long": "the LV name {lv!r} is too long to name its cache after",
        "ssd-is-slow-device": "{device} is the slow device itself",
        "ssd-not-a-disk": "{device} is a {kind} device, not a disk; the cache goes on the SSD's whole disk (or an md "
        "array of two SSDs)",
        "ssd-is-partition": "{device} is a partition, and a whole disk is expected for the cache (its disk: {disk})",
        "ssd-mounted": "{device} is mounted ({where}); unmount it first if its data can go",
        "partition-in-use": "{device} has a partition in use ({partition}: {why})",
        "read-only": "{device} is read-only",
        "ssd-count": "a cache goes on one SSD, or two to mirror it (LVM raid1); {count} were given",
        "ssd-named-twice": "{path} is named twice; a mirror needs two different SSDs",
        "sector-size-mismatch": "{device} has {ssd_sector}-byte logical sectors and {lv} {lv_sector}-byte ones: a "
        "file system made with 512-byte sectors may not work through a 4 KiB-sector cache (lvmcache(7))",
        "pv-of-other-vg": "{device} is a physical volume of another VG ({other}); a cache must be in the same VG as "
        "the LV ({vg}) (lvmcache(7))",
        "holds-data": "{device} holds data ({signature}); {use} destroys that",
        "ssd-too-small": "{which} ({ssd_size}) is too small for {what} ({need} in all, with LVM's own space)",
        "not-cached-with": "{lv} is not cached with {backend} (segment type {segtype}){instead}",
        "release-count": "a cache is on one SSD or a mirrored pair; {count} were named to release",
        "keep-and-release": "keeping the {keeps} leaves the cache on the SSD, so the SSD cannot be released too",
        "not-a-pv-of-vg": "{path} is not a physical volume of VG {vg}",
        "named-twice": "{path} is named twice",
        "rescue-loses-data": "{trouble}; taking the cache off leaves out what only the dead SSD held",
        "mirror-degraded": "{trouble}; removing the cache now would flush it from its last copy",
        "keep-dead-cache": "the cache of {lv} has failed ({state}), so its {keeps} cannot be kept; it is taken off",
        "lv-inactive": "{lv} is a cached LV that is not active; its cache is removed (flushed) while it is active",
        "origin-missing": "a part of the origin of {lv} (the slow device) is on a PV lvm2 cannot find, not only its "
        "cache: removing the cache would not bring it back; bring that disk back first",
        "release-missing": "the SSD of {lv}'s cache is missing, so there is none to release; the rescue takes it out "
        "of the VG itself",
    }
)


def find_lv(inv: Inventory, name: str) -> Device:
    """An LV by any name scan prints for it (VG/LV, /dev/VG/LV, /dev/mapper/VG-LV, dm-N, a by-id link)."""
    d = find_device(inv, name)
    if d is not None and d.lvm is not None and d.lvm.role == "lv":
        if d.hidden and SUB_LV.search(d.lvm.lv or ""):  # named by hand: lvm2 refuses most commands on these
            raise RecipeError("lv-is-part", name=name, next=[next_step("see-devices")])
        return d
    raise RecipeError("not-an-lv", name=name, next=[next_step("name-lv"), next_step("see-devices")])


def check_name(what: str, name: str) -> None:
    if not NAME_RE.fullmatch(name) or len(name) > 100:
        raise RecipeError("bad-lvm-name", what=what, name=name)


def uncached_lv(inv: Inventory, lv_name: str) -> tuple[Device, str, str]:
    """The LV a cache is to be attached to, with its VG and LV names, checked: names lvm2 takes
    and short enough to name the cache after, and no cache on it yet."""
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    check_name("VG", vg)
    check_name("LV", lv)
    cached = by_segtype(origin.lvm.segtype)
    if cached is not None:
        raise RecipeError(
            "lv-already-cached",
            lv=f"{vg}/{lv}",
            segtype=origin.lvm.segtype,
            next=[next_step("remove-cache", device=f"{vg}/{lv}", recipe=cached.remover)],
        )
    if len(lv) > 80:
        raise RecipeError("lv-name-too-long", lv=lv)
    return origin, vg, lv


def check_fast_device(inv: Inventory, ssd: Device, origin: Device, allow_partition: bool) -> None:
    """Refused unless ``ssd`` can hold a cache of ``origin``: another device, a whole disk (or an
    allowed partition, or an md array), unmounted, nothing on it in use, writable."""
    if ssd.name == origin.name or ssd.name in origin.slaves:
        raise RecipeError("ssd-is-slow-device", device=ssd.display_path, next=[next_step("free-ssd")])
    if ssd.kind not in ("disk", "partition") and not (ssd.md is not None and ssd.md.role == "array"):
        raise RecipeError("ssd-not-a-disk", device=ssd.display_path, kind=ssd.kind)
    if ssd.kind == "partition" and not allow_partition:
        raise RecipeError(
            "ssd-is-partition",
            device=ssd.display_path,
            disk=f"/dev/{ssd.parent}",
            next=[next_step("allow-partition", device=ssd.display_path)],
        )
    if ssd.mountpoints or ssd.swap:
        raise RecipeError("ssd-mounted", device=ssd.display_path, where=", ".join(ssd.mountpoints) or "swap")
    for part in ssd.partitions:
        p = inv.by_name(part)
        if p is not None and (p.mountpoints or p.holders or p.lvm is not None):
            raise RecipeError(
                "partition-in-use", device=ssd.display_path, partition=p.display_path, why=p.in_use_reason or "in use"
            )
    if ssd.read_only:
        raise RecipeError("read-only", device=ssd.display_path)


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
                    ("pvcreate", "--yes", *(["--force"] if wiped else []), pv),
                    pre=(NotMounted(device=pv),) + (() if wiped else (NoSignature(device=pv),)),
                    post=(Pv(device=pv),),
                    undo=(("pvremove", "--yes", pv),),
                )
            )
            steps.append(
                Step(
                    f"vgextend{suffix}",
                    ("vgextend", vg, pv),
                    pre=(Pv(device=pv),),
                    post=(PvInVg(device=pv, vg=vg),),
                    undo=(("vgreduce", vg, pv),),
                )
            )
        return steps

    def lvcreate(self, step_id: str, vg: str, name: str, size: int) -> Step:
        """A step that makes LV ``name`` of ``size`` bytes on the SSD, or as raid1 across both."""
        raid = ("--type", "raid1", "-m", "1") if self.mirrored else ()
        return Step(
            step_id,
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


def fast_side(
    inv: Inventory, paths: str | Sequence[str], origin: Device, vg: str, *, wipe: bool, allow_partition: bool
) -> FastSide:
    """The SSD(s) named for a cache of ``origin`` in VG ``vg``, checked: each exists, is not the
    slow device, is a whole disk (or an allowed partition), unmounted, writable, in no other VG,
    without data unless ``wipe``; two must be different devices."""
    names = [paths] if isinstance(paths, str) else list(paths)
    if not 1 <= len(names) <= 2:
        raise RecipeError("ssd-count", count=len(names))
    devices: list[Device] = []
    for path in names:
        ssd = find_device(inv, path)
        if ssd is None:
            raise RecipeError("no-such-device", path=path, next=[next_step("see-devices")])
        if any(d.name == ssd.name for d in devices):
            raise RecipeError("ssd-named-twice", path=path)
        check_fast_device(inv, ssd, origin, allow_partition)
        devices.append(ssd)
    ssd_lss, origin_lss = max(d.logical_sector_size or 512 for d in devices), origin.logical_sector_size or 512
    if ssd_lss > origin_lss:
        worst = max(devices, key=lambda d: d.logical_sector_size or 512)
        raise RecipeError(
            "sector-size-mismatch",
            device=worst.display_path,
            ssd_sector=ssd_lss,
            lv=f"{vg}/{origin.lvm.lv if origin.lvm else origin.name}",
            lv_sector=origin_lss,
        )
    in_vg: list[bool] = []
    destroys: list[str] = []
    for ssd in devices:
        member = ssd.lvm is not None and ssd.lvm.role == "pv"
        if member and ssd.lvm is not None and ssd.lvm.vg not in (vg, None):
            raise RecipeError(
                "pv-of-other-vg",
                device=ssd.display_path,
                other=ssd.lvm.vg,
                vg=vg,
                next=[next_step("free-pv", device=ssd.display_path, vg=ssd.lvm.vg)],
            )
        in_vg.append(member)
        if not member and ssd.signature:
            if not wipe:
                raise RecipeError(
                    "holds-data",
                    device=ssd.display_path,
                    signature=ssd.signature,
                    use="making it a cache",
                    next=[next_step("allow-wipe", device=ssd.display_path)],
                )
            destroys.append(f"{ssd.display_path}: {ssd.signature}")
    return FastSide(tuple(devices), tuple(in_vg), tuple(destroys))


def too_small(fast: FastSide, what: str, need: int) -> RecipeError:
    """The SSD(s) cannot hold ``what`` (a cache of ``need`` bytes with LVM's own space)."""
    return RecipeError(
        "ssd-too-small",
        which="each SSD" if fast.mirrored else fast.paths[0],
        ssd_size=human_size(fast.size_bytes),
        what=what,
        need=human_size(need),
        next=[next_step("smaller-size")],
    )


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


def pool_parts(inv: Inventory, origin: Device) -> list[Device]:
    """The LVs that make the cache pool (or cache volume) of the cached LV ``origin``: lvm2 names
    them after it (``data_cache_cpool_cdata``, ``..._cmeta``, their raid images)."""
    if origin.lvm is None or not origin.lvm.pool:
        return []
    vg, pool = origin.lvm.vg, origin.lvm.pool
    return [
        d
        for d in inv.devices
        if d.lvm is not None
        and d.lvm.role == "lv"
        and d.lvm.vg == vg
        and d.lvm.lv is not None
        and (d.lvm.lv == pool or d.lvm.lv.startswith(f"{pool}_"))
    ]


def free_after_uncache(inv: Inventory, origin: Device) -> dict[str, int]:
    """Each PV (kernel name) the cache pool of ``origin`` is on, with the bytes it has for a new
    pool once that one is taken off: its size less what the other LVs on it take and LVM's label
    and metadata area."""
    parts = {d.name for d in pool_parts(inv, origin)}
    free = {}
    for pv in inv.devices:
        if pv.lvm is None or pv.lvm.role != "pv" or not set(pv.holders) & parts:
            continue
        others = [inv.by_name(h) for h in pv.holders if h not in parts]
        free[pv.name] = pv.size_bytes - sum(o.size_bytes for o in others if o is not None) - PV_HEADER
    return free


def remove_cache(
    inv: Inventory,
    lv_name: str,
    backend: Backend,
    kind: str,
    *,
    keep: bool = False,
    release: str | Sequence[str] | None = None,
    accept_loss: bool = False,
) -> Plan:
    """The plan of kind ``kind`` that flushes and removes the LVM cache of ``backend`` from an
    LV, then releases the SSD(s) named. A cache that failed (its SSD dead or gone) is rescued
    instead (:func:`rescue_steps`); one that loses data so only with ``accept_loss``. A mirrored
    cache that lost one SSD is refused: its mirror is to be repaired first (recipes/lvmcache.py)."""
    inactive = inv.inactive_lv(lv_name) if find_device(inv, lv_name) is None else None
    if inactive is not None:
        return rescue_inactive(inv, inactive, backend, kind, keep=keep, release=release, accept_loss=accept_loss)
    segtype = backend.lvm_segtype or ""
    what = backend.keeps
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    vglv = f"{vg}/{lv}"
    _cached_with(vglv, origin.lvm.segtype, backend)
    caching = origin.caching
    if caching is not None and caching.degraded and not caching.failed:
        raise RecipeError("mirror-degraded", trouble=caching.trouble, next=[next_step("repair-mirror", target=vglv)])
    if caching is not None and caching.failed:
        if keep:
            raise RecipeError("keep-dead-cache", lv=vglv, state=caching.state, keeps=what)
        # lvm2 refuses `vgreduce --removemissing` while another LV still has a part on the missing
        # SSD (one SSD caching several LVs of the VG): those are rescued first, the last one drops it
        others = sorted(
            f"{d.lvm.vg}/{d.lvm.lv}"
            for d in inv.devices
            if d.name != origin.name
            and d.lvm is not None
            and d.lvm.vg == vg
            and d.caching is not None
            and d.caching.missing
            and set(d.caching.missing) & set(caching.missing)
        ) + sorted(o.name for o in inv.inactive if o.vg == vg and o.partial)
        steps = rescue_steps(origin, caching, segtype, accept_loss, drop_missing=not others)
        notes = _rescue_notes(caching.trouble, vg, others)
    else:
        flag = "--splitcache" if keep else "--uncache"
        steps = [
            Step(
                "uncache",
                ("lvconvert", "--yes", flag, vglv),
                pre=(Segtype(lv=vglv, segtype=segtype),),
                post=(NotSegtype(lv=vglv, segtype=segtype),),
                seconds=5.0,
                progress=backend.progress,
            )
        ]
        notes = (
            "Dirty blocks are written back before the cache goes; this can take a while with a big writeback cache.",
        )
    devices = [bind(origin, "origin")]
    names = [] if release is None else ([release] if isinstance(release, str) else list(release))
    if len(names) > 2:
        raise RecipeError("release-count", count=len(names))
    if names and keep:
        raise RecipeError("keep-and-release", keeps=what)
    released: list[Device] = []
    for path in names:
        ssd = find_device(inv, path)
        if ssd is None or ssd.lvm is None or ssd.lvm.role != "pv" or ssd.lvm.vg != vg:
            raise RecipeError("not-a-pv-of-vg", path=path, vg=vg)
        if any(d.name == ssd.name for d in released):
            raise RecipeError("named-twice", path=path)
        released.append(ssd)
    devices += [bind(ssd, role) for ssd, role in zip(released, FAST_ROLES, strict=False)]
    steps += release_steps(vg, released, pre=(NotSegtype(lv=vglv, segtype=segtype),))
    label = "cache" if segtype == "cache" else "writecache"
    title, before, after = f"Remove the {label} from {vglv}", f"{vglv}: {label} LV", f"{vglv}: plain LV, same data"
    if caching is not None and caching.failed:  # a rescue: what the origin has and lacks, said before it runs
        title = f"Rescue {vglv}: take off its failed {label}"
        before = f"{vglv}: {label} LV whose cache failed ({caching.state})"
        after = f"{vglv}: plain LV on its origin; {failure_of(origin, caching).origin()}"
    return Plan(
        kind=kind,
        title=title,
        devices=tuple(devices),
        steps=tuple(steps),
        layout_before=(before,),
        layout_after=(after,) + tuple(f"{d.display_path}: free" for d in released),
        notes=notes,
    )


def release_steps(vg: str, pvs: Sequence[Device], *, pre: tuple[Check, ...]) -> list[Step]:
    """vgreduce and pvremove for each PV of ``pvs`` once ``pre`` holds (the cache it held is off
    them): the SSD leaves the VG blank, to be pulled or used again."""
    steps: list[Step] = []
    for n, ssd in enumerate(pvs, 1):
        pv, suffix = ssd.display_path, ("" if len(pvs) == 1 else f"-{n}")
        steps.append(
            Step(
                f"vgreduce{suffix}",
                ("vgreduce", vg, pv),
                pre=pre,
                post=(NotPvInVg(device=pv, vg=vg),),
                undo=(("vgextend", vg, pv),),
            )
        )
        steps.append(
            Step(
                f"pvremove{suffix}",
                ("pvremove", "--yes", pv),
                post=(NotPv(device=pv),),
                undo=(("pvcreate", "--yes", pv),),
            )
        )
    return steps


def _cached_with(vglv: str, segtype: str | None, backend: Backend) -> None:
    """Refused unless the LV's segment type is the one ``backend`` removes, naming the right remover."""
    if segtype == backend.lvm_segtype:
        return
    other = by_segtype(segtype)
    instead = remover(other) if other is not None else None
    raise RecipeError(
        "not-cached-with",
        lv=vglv,
        backend=backend.family,
        segtype=segtype or "unknown",
        instead=f" (it is {other.family}: use {instead.kind})" if other and instead else "",
    )


def _rescue_notes(trouble: str, vg: str, others: Sequence[str]) -> tuple[str, ...]:
    """A rescue's notes: what went wrong, and (lvm2 refuses `vgreduce --removemissing` while
    another LV still has a part on the missing SSD) why the SSD stays in the VG for now."""
    notes: tuple[str, ...] = (f"{trouble[0].upper()}{trouble[1:]}.",)
    if others:
        notes += (
            f"The missing SSD stays in VG {vg} while {', '.join(others)} still use it: rescue "
            f"{'it' if len(others) == 1 else 'them'} too, and the last rescue takes it out of the VG.",
        )
    return notes


def failure_of(origin: Device, caching: Caching) -> Failure:
    """What discovery found wrong with the cache of ``origin``, as a Failure again."""
    assert origin.lvm is not None
    return Failure(
        "dm-writecache" if origin.lvm.segtype == "writecache" else "dm-cache",
        f"{origin.lvm.vg}/{origin.lvm.lv}",
        caching.mode,
        failed=caching.failed,
        missing=caching.missing,
    )


def rescue_steps(
    origin: Device, caching: Caching, segtype: str, accept_loss: bool, drop_missing: bool = True
) -> list[Step]:
    """The steps that take a failed cache (its SSD dead or gone) off the active LV ``origin``
    (:func:`_rescue`)."""
    assert origin.lvm is not None
    return _rescue(
        f"{origin.lvm.vg}/{origin.lvm.lv}",
        failure_of(origin, caching),
        caching.trouble,
        segtype,
        accept_loss,
        drop_missing=drop_missing and bool(caching.missing),
        mounted=origin.display_path,
    )


def _rescue(
    vglv: str,
    failure: Failure,
    trouble: str,
    segtype: str,
    accept_loss: bool,
    *,
    drop_missing: bool,
    mounted: str | None = None,
) -> list[Step]:
    """The steps that take a failed cache (its SSD dead or gone) off an LV, measured on lvm2
    2.03.16 (docs/dead-ssd.md). dm-cache: ``lvconvert --uncache`` skips the flush of a failed
    cache while the LV stays active and mounted; in writeback lvm2 asks for ``--force``, which
    leaves out the blocks that were dirty on the SSD (so the user must have accepted that).
    dm-writecache: its flush at suspend fails and left the LV suspended when it was taken off
    active, so it is taken off inactive (the file system at ``mounted`` unmounted), with ``--force``
    (whatever it had not written back is lost), and activated again. An LV lvm2 would not activate
    (``mounted`` None: it is no block device) is taken off as it is, then activated before anything
    else (lvm2 activates a complete LV in a VG that lacks a PV). Then the PVs lvm2 cannot find leave
    the VG (``drop_missing``)."""
    vg = vglv.split("/")[0]
    if failure.writeback and not accept_loss:
        raise RecipeError("rescue-loses-data", trouble=trouble, next=[next_step("accept-data-loss", target=vglv)])
    uncache = ("lvconvert", "--yes", "--force", "--uncache", vglv) if failure.writeback else None
    steps: list[Step] = []
    if segtype == "writecache" and mounted is not None:
        steps.append(Step("deactivate", ("lvchange", "--yes", "-an", vglv), pre=(NotMounted(device=mounted),)))
    steps.append(
        Step(
            "uncache",
            uncache or ("lvconvert", "--yes", "--uncache", vglv),
            pre=(Segtype(lv=vglv, segtype=segtype), *((LvPartial(lv=vglv),) if uncache else ())),
            post=(NotSegtype(lv=vglv, segtype=segtype),),
            seconds=5.0,
        )
    )
    activation = Step("activate", ("lvchange", "--yes", "-ay", vglv))
    if mounted is None:  # an LV lvm2 would not activate: up first, whatever else the VG still lacks
        steps.append(activation)
    if drop_missing:
        steps.append(Step("vgreduce-missing", ("vgreduce", "--removemissing", vg), seconds=2.0))
    if segtype == "writecache" and mounted is not None:
        steps.append(activation)
    return steps


def rescue_inactive(
    inv: Inventory,
    lv: InactiveLv,
    backend: Backend,
    kind: str,
    *,
    keep: bool,
    release: str | Sequence[str] | None,
    accept_loss: bool,
) -> Plan:
    """The plan that gets back a cached LV lvm2 will not activate because its cache's SSD is
    missing (after a reboot with the SSD dead: discovery's :class:`InactiveLv`): the cache taken
    off the inactive LV (lvm2 does so without activating it), the LV activated on its origin, the
    missing PV out of the VG. Refused for an inactive LV whose parts are all there (it is to be
    activated first, then its cache removed as any other, flushed) and for one whose origin is
    the missing part (taking the cache off would bring nothing back)."""
    segtype = backend.lvm_segtype or ""
    _cached_with(lv.name, lv.segtype, backend)
    if not lv.partial:
        raise RecipeError("lv-inactive", lv=lv.name, next=[next_step("activate-lv", target=lv.name)])
    if lv.origin_missing:  # taking the cache off would lose its dirty blocks and bring nothing back
        raise RecipeError("origin-missing", lv=lv.name)
    failure = inactive_failure(lv)
    if keep:
        raise RecipeError("keep-dead-cache", lv=lv.name, state="its SSD is missing", keeps=backend.keeps)
    if release:
        raise RecipeError("release-missing", lv=lv.name)
    others = sorted(o.name for o in inv.inactive if o.vg == lv.vg and o.partial and o.name != lv.name)
    others += sorted(
        f"{d.lvm.vg}/{d.lvm.lv}"
        for d in inv.devices
        if d.lvm is not None and d.lvm.vg == lv.vg and d.caching is not None and d.caching.missing
    )
    steps = _rescue(lv.name, failure, failure.sentence(), segtype, accept_loss, drop_missing=not others)
    notes = _rescue_notes(failure.sentence(), lv.vg, others)
    label = "cache" if segtype == "cache" else "writecache"
    origin = BoundDevice(
        role="origin",
        path=lv.path,
        devnode="",
        identity=lv.identity,
        serial=None,
        wwn=None,
        size_bytes=lv.size_bytes,
    )
    return Plan(
        kind=kind,
        title=f"Rescue {lv.name}: take off its {label}, whose SSD is missing",
        devices=(origin,),
        steps=tuple(steps),
        layout_before=(f"{lv.name}: {label} LV, not active (lvm2 will not activate it: its SSD is missing)",),
        layout_after=(f"{lv.name}: plain LV on its origin, active; {failure.origin()}",),
        notes=notes,
    )
