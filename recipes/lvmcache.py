"""lvmcache recipes: attach a cache pool to an LV in place, change its mode, uncache.

Recipes read an inventory and build a :class:`~advisor.plan.model.Plan`; they run nothing. Every
refusal is a :class:`RecipeError` whose message says what is wrong, that nothing was changed,
and what to do.
"""

from __future__ import annotations

import re
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
from advisor.plan.model import Plan, Step
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
        if d.lvm is not None and d.lvm.role == "lv" and (f"{d.lvm.vg}/{d.lvm.lv}" == text or d.display_path == name
                                                         or d.devnode == name or name in d.links):
            return d
    raise RecipeError(f"{name} is not a logical volume on this machine (give it as VG/LV; see `cachewise scan`). "
                      f"{NOTHING}")


def _check_name(kind: str, name: str) -> None:
    if not NAME_RE.fullmatch(name) or len(name) > 100:
        raise RecipeError(f"the {kind} name {name!r} has characters lvm2 does not allow (only letters, digits, "
                          f"+ _ . -). {NOTHING}")


def _fast_device(inv: Inventory, ssd: Device, origin: Device, allow_partition: bool) -> None:
    if ssd.name == origin.name or ssd.name in origin.slaves:
        raise RecipeError(f"{ssd.display_path} is the slow device itself; name a different SSD. {NOTHING}")
    if ssd.kind not in ("disk", "partition"):
        raise RecipeError(f"{ssd.display_path} is a {ssd.kind} device, not a disk; give the SSD's whole disk. {NOTHING}")
    if ssd.kind == "partition" and not allow_partition:
        raise RecipeError(f"{ssd.display_path} is a partition, and a whole disk is expected for the cache; give the "
                          f"disk (/dev/{ssd.parent}) or pass --allow-partition to use just this partition. {NOTHING}")
    if ssd.mountpoints or ssd.swap:
        where = ", ".join(ssd.mountpoints) or "swap"
        raise RecipeError(f"{ssd.display_path} is mounted ({where}); unmount it first if its data can go. {NOTHING}")
    for part in ssd.partitions:
        p = inv.by_name(part)
        if p is not None and (p.mountpoints or p.holders or p.lvm is not None):
            raise RecipeError(f"{ssd.display_path} has a partition in use ({p.display_path}: {p.in_use_reason or 'in use'}). "
                              f"{NOTHING}")
    if ssd.read_only:
        raise RecipeError(f"{ssd.display_path} is read-only. {NOTHING}")


def lvmcache_attach(inv: Inventory, lv_name: str, ssd_path: str, spec: CacheSpec, *, wipe: bool = False,
                    allow_partition: bool = False) -> Plan:
    """Attach a cache pool on ``ssd_path`` to the LV ``lv_name`` in place: the SSD becomes a PV
    of the LV's VG, a cache pool of the given size is made on it, and lvconvert attaches it."""
    from advisor.disks.discovery import find_device

    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    _check_name("VG", vg)
    _check_name("LV", lv)
    if origin.lvm.segtype in ("cache", "writecache"):
        raise RecipeError(f"{vg}/{lv} is already cached ({origin.lvm.segtype}); uncache it first. {NOTHING}")
    ssd = find_device(inv, ssd_path)
    if ssd is None:
        raise RecipeError(f"{ssd_path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
    _fast_device(inv, ssd, origin, allow_partition)
    if spec.mode not in ("writethrough", "writeback"):
        raise RecipeError(f"cache mode {spec.mode!r} is not writethrough or writeback. {NOTHING}")
    if spec.policy not in ("smq", "mq", "cleaner"):
        raise RecipeError(f"cache policy {spec.policy!r} is not smq, mq or cleaner. {NOTHING}")
    ssd_lss, origin_lss = ssd.logical_sector_size or 512, origin.logical_sector_size or 512
    if ssd_lss > origin_lss:
        raise RecipeError(f"{ssd.display_path} has {ssd_lss}-byte logical sectors and {vg}/{lv} {origin_lss}-byte "
                          "ones: a file system made with 512-byte sectors may not work through a 4 KiB-sector cache "
                          f"(lvmcache(7)). {NOTHING}")
    in_vg = ssd.lvm is not None and ssd.lvm.role == "pv"
    if in_vg and ssd.lvm is not None and ssd.lvm.vg not in (vg, None):
        raise RecipeError(f"{ssd.display_path} is a physical volume of another VG ({ssd.lvm.vg}); a cache must be in "
                          f"the same VG as the LV ({vg}) (lvmcache(7)). Free it from {ssd.lvm.vg} first. {NOTHING}")
    destroys: list[str] = []
    if not in_vg:
        if ssd.signature:
            if not wipe:
                raise RecipeError(f"{ssd.display_path} holds data ({ssd.signature}); making it a cache "
                                  "destroys that. If it can go, pass --wipe (and confirm). " + NOTHING)
            destroys.append(f"{ssd.display_path}: {ssd.signature}")

    chunk = spec.chunk_bytes or lvm_chunk_size(spec.size_bytes)
    if chunk % CHUNK_UNIT or not CHUNK_UNIT <= chunk <= 1 << 30:
        raise RecipeError(f"chunk size {human_size(chunk)} is not a multiple of 32 KiB between 32 KiB and 1 GiB. {NOTHING}")
    size = -(-spec.size_bytes // LVM_EXTENT) * LVM_EXTENT
    meta = spec.metadata_bytes or lvm_metadata_size(size, chunk)
    meta = -(-meta // LVM_EXTENT) * LVM_EXTENT
    need = size + 2 * meta + (0 if in_vg else PV_HEADER)
    if need > ssd.size_bytes:
        raise RecipeError(f"{ssd.display_path} ({human_size(ssd.size_bytes)}) is too small for a {human_size(size)} "
                          f"cache with {human_size(meta)} of metadata and its spare ({human_size(need)} in all); "
                          f"choose a smaller --size. {NOTHING}")

    pv = ssd.display_path
    vglv = f"{vg}/{lv}"
    pool, pool_meta = f"{lv}_cache", f"{lv}_cache_meta"
    if len(lv) > 80:
        raise RecipeError(f"the LV name {lv!r} is too long to name its cache pool after. {NOTHING}")
    steps: list[Step] = []
    common_pre = (NotMounted(device=pv),)
    if not in_vg:
        steps.append(Step("pvcreate", f"make {pv} an LVM physical volume",
                          ("pvcreate", "--yes", *(["--force"] if destroys else []), pv),
                          pre=common_pre + (() if destroys else (NoSignature(device=pv),)),
                          post=(Pv(device=pv),), undo=(("pvremove", "--yes", pv),),
                          destructive=True))
        steps.append(Step("vgextend", f"add {pv} to VG {vg}", ("vgextend", vg, pv),
                          pre=(Pv(device=pv),), post=(PvInVg(device=pv, vg=vg),),
                          undo=(("vgreduce", vg, pv),)))
    steps.append(Step("lvcreate-data", f"create the cache data LV {vg}/{pool} ({human_size(size)}) on {pv}",
                      ("lvcreate", "--yes", "--wipesignatures", "y", "-n", pool, "-L", f"{size // 1024}k", vg, pv),
                      pre=(PvInVg(device=pv, vg=vg), NoLv(lv=f"{vg}/{pool}")),
                      post=(LvExists(lv=f"{vg}/{pool}"),), undo=(("lvremove", "--yes", f"{vg}/{pool}"),)))
    steps.append(Step("lvcreate-meta", f"create the cache metadata LV {vg}/{pool_meta} ({human_size(meta)}) on {pv}",
                      ("lvcreate", "--yes", "--wipesignatures", "y", "-n", pool_meta, "-L", f"{meta // 1024}k", vg, pv),
                      pre=(NoLv(lv=f"{vg}/{pool_meta}"),),
                      post=(LvExists(lv=f"{vg}/{pool_meta}"),),
                      undo=(("lvremove", "--yes", f"{vg}/{pool_meta}"),)))
    steps.append(Step("cache-pool", f"combine them into a cache pool (chunk {human_size(chunk)}, {spec.mode}, "
                      f"{spec.policy})",
                      ("lvconvert", "--yes", "--type", "cache-pool", "--poolmetadata", f"{vg}/{pool_meta}",
                       "--chunksize", f"{chunk // 1024}k", "--cachemode", spec.mode, "--cachepolicy", spec.policy,
                       f"{vg}/{pool}"),
                      pre=(LvExists(lv=f"{vg}/{pool}"), LvExists(lv=f"{vg}/{pool_meta}")),
                      post=(Segtype(lv=f"{vg}/{pool}", segtype="cache-pool"),),
                      undo=(("lvremove", "--yes", f"{vg}/{pool}"),)))
    steps.append(Step("attach", f"attach the cache pool to {vglv} (in place; the data stays where it is)",
                      ("lvconvert", "--yes", "--type", "cache", "--cachepool", f"{vg}/{pool}", vglv),
                      pre=(Segtype(lv=f"{vg}/{pool}", segtype="cache-pool"),
                           NotSegtype(lv=vglv, segtype="cache")),
                      post=(Segtype(lv=vglv, segtype="cache"),
                            CacheMode(lv=vglv, mode=spec.mode)),
                      undo=(("lvconvert", "--yes", "--uncache", vglv),), seconds=3.0))
    space = {"cache_bytes": size, "metadata_bytes": meta, "spare_metadata_bytes": meta,
             "ssd_bytes_used": need, "ssd_bytes": ssd.size_bytes}
    notes = ["The cached LV keeps its name and device path; its file system stays mounted.",
             f"Undo with `cachewise plan lvmcache-uncache --lv {vglv}` (flushes dirty blocks first)."]
    if spec.mode == "writeback":
        notes.append("Writeback: blocks written are on the SSD only until flushed; an SSD failure loses them "
                     "(T-MODE-1).")
    return Plan(
        kind="lvmcache-attach", title=f"Attach a {human_size(size)} {spec.mode} lvmcache on {pv} to {vglv}",
        devices=(bind(origin, "origin"), bind(ssd, "ssd")), steps=tuple(steps), destroys=tuple(destroys),
        layout_before=(f"{vglv}: {origin.lvm.segtype or 'linear'} LV, {human_size(origin.size_bytes)}",
                       f"{pv}: {'PV of ' + vg if in_vg else (destroys[0] if destroys else 'empty')}"),
        layout_after=(f"{vglv}: cache LV, {human_size(origin.size_bytes)} (origin {vglv}_corig)",
                      f"{vg}/{pool}: cache pool {human_size(size)}, chunk {human_size(chunk)}, {spec.mode}, "
                      f"{spec.policy}, metadata {human_size(meta)} + spare on {pv}"),
        space=space, notes=tuple(notes))


def lvmcache_uncache(inv: Inventory, lv_name: str, *, keep_pool: bool = False, release: str | None = None) -> Plan:
    """Remove the cache from an LV: lvconvert flushes dirty blocks (cleaner policy), then drops
    the cache pool (--uncache) or keeps it as an LV (--splitcache); ``release`` names the SSD
    to take out of the VG afterwards."""
    from advisor.disks.discovery import find_device

    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, lv = origin.lvm.vg or "", origin.lvm.lv or ""
    vglv = f"{vg}/{lv}"
    if origin.lvm.segtype != "cache":
        raise RecipeError(f"{vglv} is not cached (segment type {origin.lvm.segtype or 'unknown'}). {NOTHING}")
    flag = "--splitcache" if keep_pool else "--uncache"
    steps = [Step("uncache", f"flush dirty blocks to the slow device and {'split off' if keep_pool else 'remove'} "
                  f"the cache of {vglv}", ("lvconvert", "--yes", flag, vglv),
                  pre=(Segtype(lv=vglv, segtype="cache"),),
                  post=(NotSegtype(lv=vglv, segtype="cache"),), seconds=5.0,
                  progress="cache_dirty")]
    devices = [bind(origin, "origin")]
    if release is not None:
        if keep_pool:
            raise RecipeError(f"--keep-pool keeps the cache on the SSD, so it cannot be released too. {NOTHING}")
        ssd = find_device(inv, release)
        if ssd is None or ssd.lvm is None or ssd.lvm.role != "pv" or ssd.lvm.vg != vg:
            raise RecipeError(f"{release} is not a physical volume of VG {vg}. {NOTHING}")
        pv = ssd.display_path
        devices.append(bind(ssd, "ssd"))
        steps.append(Step("vgreduce", f"take {pv} out of VG {vg}", ("vgreduce", vg, pv),
                          pre=(NotSegtype(lv=vglv, segtype="cache"),),
                          post=(NotPvInVg(device=pv, vg=vg),), undo=(("vgextend", vg, pv),)))
        steps.append(Step("pvremove", f"remove the LVM label from {pv}", ("pvremove", "--yes", pv),
                          post=(NotPv(device=pv),), undo=(("pvcreate", "--yes", pv),)))
    return Plan(kind="lvmcache-uncache", title=f"Remove the cache from {vglv}", devices=tuple(devices),
                steps=tuple(steps), layout_before=(f"{vglv}: cache LV",),
                layout_after=(f"{vglv}: plain LV, same data",) + ((f"{release}: free",) if release else ()),
                notes=("Dirty blocks are written back before the cache goes; this can take a while with a big "
                       "writeback cache.",))


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
    step = Step("cache-mode", f"switch {vglv} to {mode}" + (" (dirty blocks are written back first)"
                                                            if mode == "writethrough" else ""),
                ("lvchange", "--yes", "--cachemode", mode, vglv),
                pre=(Segtype(lv=vglv, segtype="cache"),),
                post=(CacheMode(lv=vglv, mode=mode),),
                undo=(("lvchange", "--yes", "--cachemode", other, vglv),), seconds=5.0,
                progress="cache_dirty" if mode == "writethrough" else "")
    notes = ("Writeback: blocks written are on the SSD only until flushed; an SSD failure loses them (T-MODE-1).",) \
        if mode == "writeback" else ()
    return Plan(kind="lvmcache-mode", title=f"Switch the cache of {vglv} to {mode}", devices=(bind(origin, "origin"),),
                steps=(step,), layout_before=(f"{vglv}: cache LV",), layout_after=(f"{vglv}: cache LV in {mode}",),
                notes=notes)


def lvmcache_new(inv: Inventory, hdd_path: str, ssd_path: str, vg: str, lv: str, spec: CacheSpec, *,
                 wipe: bool = False) -> Plan:
    """A new cached LV on two empty disks: both become PVs of a new VG, the LV fills the HDD,
    and the cache pool on the SSD is attached as in :func:`lvmcache_attach`."""
    from advisor.disks.discovery import find_device

    _check_name("VG", vg)
    _check_name("LV", lv)
    if any(d.lvm is not None and d.lvm.vg == vg for d in inv.devices):
        raise RecipeError(f"a VG named {vg} already exists; choose another name, or use lvmcache-attach. {NOTHING}")
    hdd, ssd = find_device(inv, hdd_path), find_device(inv, ssd_path)
    for path, dev in ((hdd_path, hdd), (ssd_path, ssd)):
        if dev is None:
            raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
    assert hdd is not None and ssd is not None
    if hdd.name == ssd.name:
        raise RecipeError(f"{hdd_path} and {ssd_path} are the same device. {NOTHING}")
    destroys = []
    for dev in (hdd, ssd):
        _fast_device(inv, dev, hdd if dev is ssd else ssd, allow_partition=True)
        if dev.signature and not wipe:
            raise RecipeError(f"{dev.display_path} holds data ({dev.signature}); pass --wipe if it can go. {NOTHING}")
        if dev.signature:
            destroys.append(f"{dev.display_path}: {dev.signature}")
    hp, sp = hdd.display_path, ssd.display_path
    create = [
        Step(f"pvcreate-{i}", f"make {p} an LVM physical volume", ("pvcreate", "--yes", *(["--force"] if destroys else []), p),
             pre=(NotMounted(device=p),) + (() if destroys else (NoSignature(device=p),)),
             post=(Pv(device=p),), undo=(("pvremove", "--yes", p),), destructive=True)
        for i, p in enumerate((hp, sp), 1)]
    create.append(Step("vgcreate", f"create VG {vg} on {hp}", ("vgcreate", vg, hp),
                       post=(PvInVg(device=hp, vg=vg),), undo=(("vgremove", "--yes", vg),)))
    create.append(Step("vgextend", f"add {sp} to VG {vg}", ("vgextend", vg, sp),
                       post=(PvInVg(device=sp, vg=vg),), undo=(("vgreduce", vg, sp),)))
    create.append(Step("lvcreate-origin", f"create {vg}/{lv} on all of {hp}",
                       ("lvcreate", "--yes", "--wipesignatures", "y", "-n", lv, "-l", "100%PVS", vg, hp),
                       post=(LvExists(lv=f"{vg}/{lv}"),), undo=(("lvremove", "--yes", f"{vg}/{lv}"),)))
    # The cache steps of an attach, planned against the inventory as it will be.
    future_ssd = replace(ssd, lvm=LvmInfo("pv", vg), fs_type=None, partition_table=None, partitions=())
    origin = replace(hdd, name=f"{vg}-{lv}", kind="lvm", devnode=f"/dev/{vg}/{lv}", stable_path=f"/dev/{vg}/{lv}",
                     lvm=LvmInfo("lv", vg, lv, "linear"), fs_type=None, partition_table=None, partitions=(), slaves=(hdd.name,))
    future = replace(inv, devices=tuple(future_ssd if d.name == ssd.name else d for d in inv.devices) + (origin,))
    attach = lvmcache_attach(future, f"{vg}/{lv}", sp, spec)
    return replace(attach, kind="lvmcache-new", title=f"New cached LV {vg}/{lv}: {hp} cached by {sp}",
                   devices=(bind(hdd, "origin"), bind(ssd, "ssd")), steps=tuple(create) + attach.steps,
                   destroys=tuple(destroys), layout_before=(f"{hp}: {'empty' if not destroys else 'has data'}",
                                                            f"{sp}: {'empty' if not destroys else 'has data'}"),
                   notes=(f"Make the file system on /dev/{vg}/{lv} after the cache is attached only if you accept "
                          "that mkfs fills it with cold data (D-WARM-1); otherwise make it before step "
                          f"{len(create) + 1} by applying the plan in two runs.",))
