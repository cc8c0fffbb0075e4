"""lvmcache recipes: attach a cache pool to an LV in place, make a new cached LV on empty disks,
change a cache's mode or size, remove it.

Recipes read an inventory and build a :class:`~advisor.plan.model.Plan`; they run nothing. Every
refusal is a :class:`~recipes.common.RecipeError` with a code and its facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.advice.config import CacheConfig
from advisor.advice.lvmrules import CHUNK_UNIT, LVM_EXTENT, lvm_chunk_size, lvm_metadata_size, round_up
from advisor.backends import LVMCACHE, Mode
from advisor.disks.caches import mirror_legs
from advisor.disks.devices import Caching, Device, Inventory, LvmInfo
from advisor.disks.discovery import find_device
from advisor.errors import codes, next_step
from advisor.plan.checks import (
    CacheMode,
    CachePool,
    LvComplete,
    LvExists,
    NoSignature,
    NotMounted,
    NotSegtype,
    Pv,
    PvInVg,
    Segtype,
)
from advisor.plan.language import Use
from advisor.plan.model import BoundDevice, Plan, Step
from advisor.units import human_size
from recipes.common import ACCEPT_LOSS, RecipeError, bind, check_backend
from recipes.lvm import (
    FAST_ROLES,
    RAID_META,
    check_fast_device,
    check_name,
    fast_side,
    find_lv,
    free_after_uncache,
    pool_parts,
    release_steps,
    remove_cache,
    too_small,
    uncached_lv,
)
from recipes.registry import Recipe, option, register

ATTACH, UNCACHE, NEW, MODE, REPAIR, RESIZE, MOVE = (
    "lvmcache-attach",
    LVMCACHE.remover,
    "lvmcache-new",
    "lvmcache-mode",
    "cache-repair",
    "lvmcache-resize",
    "lvmcache-move",
)
OLD_ROLES = ("old-ssd", "old-ssd2")  # the SSD(s) a move takes the cache off
UNDO = "Undo it by removing the cache; dirty blocks are written back first."
MODES = LVMCACHE.modes

codes(
    {
        "bad-mode": "cache mode {mode!r} is not writethrough or writeback",
        "bad-policy": "cache policy {policy!r} is not smq, mq or cleaner",
        "bad-chunk": "chunk size {chunk} is not a multiple of 32 KiB between 32 KiB and 1 GiB",
        "not-cached": "{lv} is not cached (segment type {segtype})",
        "vg-exists": "a VG named {vg} already exists",
        "same-device-twice": "{paths} name the same device twice",
        "no-size": "the cache has no size",
        "mirror-needs-two": "the recommendation is writeback on a cache mirrored across two SSDs (LVM raid1), and "
        "{count} SSD was named",
        "not-degraded": "the cache of {lv} is not a mirror missing one SSD ({state}), so there is nothing to repair",
        "resize-unwell": "the cache of {lv} is not well ({state}), so it is not resized",
        "resize-same-size": "the cache of {lv} already holds {size}",
        "resize-where": "cachewise cannot tell which SSD the cache pool of {lv} is on",
        "move-unwell": "the cache of {lv} is not well ({state}), so it is not moved",
        "move-same-ssd": "the cache of {lv} is on {device} already",
        "move-mirror-needs-two": "the cache of {lv} is mirrored on two SSDs (LVM raid1), and {count} new SSD was "
        "named; a move keeps it mirrored",
    }
)


@dataclass(frozen=True)
class CacheSpec:
    size_bytes: int
    mode: str = "writethrough"
    chunk_bytes: int | None = None  # default: lvm2's rule
    metadata_bytes: int | None = None
    policy: str = "smq"


def lvmcache_attach(
    inv: Inventory,
    lv_name: str,
    ssd_path: str | Sequence[str],
    spec: CacheSpec,
    *,
    wipe: bool = False,
    allow_partition: bool = False,
    pool_name: str | None = None,
) -> Plan:
    """Attach a cache pool on ``ssd_path`` to the LV ``lv_name`` in place: the SSD becomes a PV
    of the LV's VG, a cache pool of the given size is made on it, and lvconvert attaches it.
    With two SSDs the pool's data and metadata are LVM raid1 across both (lvmcache(7), "RAID1
    cache device"): an SSD can fail without losing the dirty blocks of a writeback cache."""
    origin, vg, lv = uncached_lv(inv, lv_name)
    if spec.mode not in LVMCACHE.modes:
        raise RecipeError("bad-mode", mode=spec.mode)
    if spec.policy not in ("smq", "mq", "cleaner"):
        raise RecipeError("bad-policy", policy=spec.policy)
    fast = fast_side(inv, ssd_path, origin, vg, wipe=wipe, allow_partition=allow_partition)

    chunk = spec.chunk_bytes or lvm_chunk_size(spec.size_bytes)
    if chunk % CHUNK_UNIT or not CHUNK_UNIT <= chunk <= 1 << 30:
        raise RecipeError("bad-chunk", chunk=human_size(chunk))
    size = -(-spec.size_bytes // LVM_EXTENT) * LVM_EXTENT
    meta = spec.metadata_bytes or lvm_metadata_size(size, chunk)
    meta = -(-meta // LVM_EXTENT) * LVM_EXTENT
    need = size + 2 * meta + fast.header_bytes() + (2 * RAID_META if fast.mirrored else 0)
    if need > fast.size_bytes:
        raise too_small(fast, f"a {human_size(size)} cache with {human_size(meta)} of metadata and its spare", need)

    vglv = f"{vg}/{lv}"
    pool = pool_name or f"{lv}_cache"
    pool_meta = f"{pool}_meta"
    steps = fast.join_steps(vg)
    steps.append(fast.lvcreate("lvcreate-data", vg, pool, size))
    steps.append(fast.lvcreate("lvcreate-meta", vg, pool_meta, meta))
    steps.append(
        Step(
            "cache-pool",
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
    notes = [
        "The cached LV keeps its name and device path; its file system stays mounted.",
        UNDO,
    ]
    if fast.mirrored:
        notes.append(
            "The cache pool's data and metadata are LVM raid1 on both SSDs: either SSD can fail and the "
            "cached LV stays readable, dirty blocks included; discovery reports a degraded mirror "
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
    inv: Inventory,
    lv_name: str,
    *,
    keep_pool: bool = False,
    release: str | Sequence[str] | None = None,
    accept_loss: bool = False,
) -> Plan:
    """Remove the cache from an LV: lvconvert flushes dirty blocks (cleaner policy), then drops
    the cache pool (--uncache) or keeps it as an LV (--splitcache); ``release`` names the SSD(s)
    to take out of the VG afterwards (both, for a mirrored pool). A cache whose SSD is gone is
    rescued (recipes/lvm.py), a writeback one only with ``accept_loss``."""
    return remove_cache(inv, lv_name, LVMCACHE, UNCACHE, keep=keep_pool, release=release, accept_loss=accept_loss)


def cache_repair(
    inv: Inventory, lv_name: str, ssd_path: str, *, wipe: bool = False, allow_partition: bool = False
) -> Plan:
    """Rebuild the lost leg of a mirrored cache (lvmcache pool or writecache volume, LVM raid1 on
    two SSDs) onto a new SSD: it joins the VG, ``lvconvert --repair`` replaces the missing image of
    each raid1 LV with one on it (lvm2 then copies the surviving leg over, in the background),
    and the PV that is gone leaves the VG. The cache keeps serving meanwhile."""
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vg, vglv = origin.lvm.vg or "", f"{origin.lvm.vg}/{origin.lvm.lv}"
    caching = origin.caching
    if caching is None or not caching.degraded or caching.failed:
        raise RecipeError(
            "not-degraded",
            lv=vglv,
            state=caching.state if caching is not None else "not cached",
            next=[next_step("remove", target=vglv)] if caching is not None and caching.failed else [],
        )
    legs = mirror_legs(inv, origin)
    if not legs:
        raise RecipeError("not-degraded", lv=vglv, state=caching.state)
    fast = fast_side(inv, ssd_path, origin, vg, wipe=wipe, allow_partition=allow_partition)
    need = sum(d.size_bytes + RAID_META for d in legs) + fast.header_bytes()
    if need > fast.size_bytes:
        raise too_small(fast, f"a new leg of the mirror of {vglv}", need)
    ssd = fast.paths[0]
    steps = fast.join_steps(vg)
    for leg in legs:
        assert leg.lvm is not None and leg.lvm.lv
        sub = f"{vg}/{leg.lvm.lv.strip('[]')}"
        steps.append(
            Step(
                f"repair-{sub.rsplit('_', 1)[-1]}",
                ("lvconvert", "--yes", "--repair", sub, ssd),
                pre=(PvInVg(device=ssd, vg=vg),),
                post=(LvComplete(lv=sub),),
                seconds=10.0,
            )
        )
    steps.append(Step("vgreduce-missing", ("vgreduce", "--removemissing", vg), seconds=2.0))
    return Plan(
        kind=REPAIR,
        title=f"Repair the mirrored cache of {vglv} onto {ssd}",
        devices=(bind(origin, "origin"), *fast.bound()),
        steps=tuple(steps),
        layout_before=(f"{vglv}: {caching.state}", fast.describe(vg)),
        layout_after=(
            f"{vglv}: its cache mirrored again, on the SSD that was left and {ssd} (lvm2 copies the surviving leg "
            "onto it in the background)",
        ),
        space={"ssd_bytes_used": need, "ssd_bytes": fast.size_bytes},
        notes=(
            f"{caching.trouble[0].upper()}{caching.trouble[1:]}.",
            "The cache keeps serving while lvm2 copies the surviving leg; nothing is flushed or lost.",
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
        raise RecipeError("not-cached", lv=vglv, segtype=origin.lvm.segtype or "unknown")
    if mode not in LVMCACHE.modes:
        raise RecipeError("bad-mode", mode=mode)
    other = "writeback" if mode == "writethrough" else "writethrough"
    step = Step(
        "cache-mode",
        ("lvchange", "--yes", "--cachemode", mode, vglv),
        pre=(Segtype(lv=vglv, segtype="cache"),),
        post=(CacheMode(lv=vglv, mode=mode),),
        undo=(("lvchange", "--yes", "--cachemode", other, vglv),),
        seconds=5.0,
        progress=LVMCACHE.progress if mode == "writethrough" else "",
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


@dataclass(frozen=True)
class _Remade:
    """A cached LV's cache taken off and a new pool attached: what a resize and a move share."""

    origin: Device
    vglv: str
    current: int | None  # the size of the cache it has now
    caching: Caching | None
    spec: CacheSpec
    attach: Plan  # lvmcache_attach's plan on the inventory as it will be once the old cache is off
    steps: tuple[Step, ...]  # the uncache, the new pool's steps, the attach naming the new pool
    pool: str  # VG/POOL of the new pool

    def devices(self, inv: Inventory) -> tuple[BoundDevice, ...]:
        real = [find_device(inv, b.path) for b in self.attach.devices[1:]]
        return (
            bind(self.origin, "origin"),
            *(bind(d, b.role) for d, b in zip(real, self.attach.devices[1:], strict=True) if d),
        )

    def ssd_bytes(self, inv: Inventory) -> int:
        real = [find_device(inv, b.path) for b in self.attach.devices[1:]]
        return min((d.size_bytes for d in real if d is not None), default=self.attach.space.get("ssd_bytes", 0))

    def before(self) -> str:
        return f"{self.vglv}: cache LV, {human_size(self.origin.size_bytes)}" + (
            f"; its cache {human_size(self.current)}, {self.caching.state}"
            if self.current is not None and self.caching
            else ""
        )


def _cached(inv: Inventory, lv_name: str, unwell: str) -> tuple[Device, Caching | None, int | None]:
    """A cached LV that is well (code ``unwell`` otherwise), its caching, and its cache's size."""
    origin = find_lv(inv, lv_name)
    assert origin.lvm is not None
    vglv = f"{origin.lvm.vg}/{origin.lvm.lv}"
    if origin.lvm.segtype != "cache":
        raise RecipeError("not-cached", lv=vglv, segtype=origin.lvm.segtype or "unknown")
    caching = origin.caching
    if caching is not None and (caching.failed or caching.degraded or caching.read_only or caching.needs_check):
        raise RecipeError(unwell, lv=vglv, state=caching.state, next=[next_step("see-devices")])
    current = next(
        (d.size_bytes for d in pool_parts(inv, origin) if d.lvm and d.lvm.lv and d.lvm.lv.endswith("_cdata")), None
    )
    return origin, caching, current


def _remake(
    inv: Inventory,
    origin: Device,
    caching: Caching | None,
    current: int | None,
    size: int,
    ssd_path: str | Sequence[str],
    *,
    mode: str | None,
    policy: str | None,
    wipe: bool = False,
    allow_partition: bool = True,
) -> _Remade:
    """Take the cache of ``origin`` off (lvconvert --uncache: lvm2 writes the dirty blocks back,
    the executor counts them down) and attach a new pool of ``size`` on ``ssd_path``, in the
    cache's own mode unless ``mode`` is named."""
    assert origin.lvm is not None
    vg, vglv = origin.lvm.vg or "", f"{origin.lvm.vg}/{origin.lvm.lv}"
    free = free_after_uncache(inv, origin)
    # The inventory once the old cache is gone: the LV plain again on its origin's PVs (so the
    # cache cannot go on one of them), each PV its pool was on as big as the space it will have.
    corig = next((d for d in inv.devices if d.lvm and d.lvm.vg == vg and d.lvm.lv == f"{origin.lvm.lv}_corig"), None)
    plain = replace(
        origin,
        lvm=replace(origin.lvm, segtype="linear", pool=None),
        caching=None,
        slaves=corig.slaves if corig is not None else origin.slaves,
    )
    future = replace(
        inv,
        devices=tuple(
            plain if d.name == origin.name else replace(d, size_bytes=free[d.name]) if d.name in free else d
            for d in inv.devices
        ),
    )
    spec = CacheSpec(
        size, mode or (caching.mode if caching is not None else None) or "writethrough", policy=policy or "smq"
    )
    # A pool named apart from the one it replaces: the attach step's postcondition names it, so a
    # run (or a resume) can tell the new cache from the old one, which is in the same mode.
    old_pool = (origin.lvm.pool or "").removesuffix("_cpool")
    taken = {d.lvm.lv for d in inv.devices if d.lvm is not None and d.lvm.vg == vg and d.lvm.lv}
    pool = next(
        name
        for n in range(1, 100)
        if (name := f"{origin.lvm.lv}_cache" + (str(n) if n > 1 else "")) != old_pool
        and not any(t == name or t.startswith(f"{name}_") for t in taken)
    )
    attach = lvmcache_attach(future, vglv, ssd_path, spec, pool_name=pool, wipe=wipe, allow_partition=allow_partition)
    *pool_steps, attach_step = attach.steps
    attach_step = replace(attach_step, post=(*attach_step.post, CachePool(lv=vglv, pool=f"{vg}/{pool}")))
    uncache = remove_cache(inv, vglv, LVMCACHE, UNCACHE)
    return _Remade(
        origin, vglv, current, caching, spec, attach, (*uncache.steps, *pool_steps, attach_step), f"{vg}/{pool}"
    )


def lvmcache_resize(
    inv: Inventory,
    lv_name: str,
    size_bytes: int,
    *,
    ssd_path: str | Sequence[str] | None = None,
    mode: str | None = None,
    policy: str | None = None,
) -> Plan:
    """Give a cached LV a cache of another size. lvm2 cannot resize a cache pool in place
    (lvmcache(7)), so the plan takes the cache off and attaches a new pool of the new size on the
    same SSD(s), in the same mode (:func:`_remake`). The new cache starts cold: it warms up again."""
    origin, caching, current = _cached(inv, lv_name, "resize-unwell")
    assert origin.lvm is not None
    vglv = f"{origin.lvm.vg}/{origin.lvm.lv}"
    size = round_up(size_bytes, LVM_EXTENT)
    if current is not None and current == size:
        raise RecipeError("resize-same-size", lv=vglv, size=human_size(size))
    if ssd_path is None:  # the SSD(s) the pool is on now: two only as the legs of a raid1 pool
        free = free_after_uncache(inv, origin)
        if not free or len(free) > (2 if mirror_legs(inv, origin) else 1):
            raise RecipeError("resize-where", lv=vglv, next=[next_step("name-ssd")])
        ssd_path = [d.display_path for d in inv.devices if d.name in free]
    r = _remake(inv, origin, caching, current, size, ssd_path, mode=mode, policy=policy)
    return replace(
        r.attach,
        kind=RESIZE,
        space={**r.attach.space, "ssd_bytes": r.ssd_bytes(inv)},
        title=f"Resize the cache of {vglv}"
        + (f" from {human_size(current)}" if current is not None else "")
        + f" to {human_size(size)} ({r.spec.mode})",
        devices=r.devices(inv),
        steps=r.steps,
        layout_before=(r.before(),),
        notes=(
            "lvm2 cannot resize a cache pool in place: the cache is taken off (dirty blocks are written back first, "
            "which can take a while with a big writeback cache) and a new pool of the new size is attached on the "
            "same SSD.",
            "The new cache starts empty and warms up again (D-WARM-1); the LV stays mounted and in use throughout.",
            "A roll back after step 1 leaves the LV without a cache (its data whole: the dirty blocks were written "
            "back); make one again with lvmcache-attach. lvm2's --cachesettings set on the old pool (such as "
            "migration_threshold) are not carried over.",
        )
        + r.attach.notes[2:],
    )


def lvmcache_move(
    inv: Inventory,
    lv_name: str,
    ssd_path: str | Sequence[str],
    *,
    size_bytes: int | None = None,
    mode: str | None = None,
    wipe: bool = False,
    allow_partition: bool = False,
) -> Plan:
    """Move the cache of a cached LV onto another SSD (or a mirrored pair), to replace a worn or
    too small one: the cache is taken off (its dirty blocks written back), a pool of the same size
    (or ``size_bytes``) is made on the new SSD and attached, and only then does each SSD the old
    pool alone was on leave the VG (vgreduce, pvremove), blank, to be pulled. An old SSD that
    also holds other LVs stays in the VG."""
    origin, caching, current = _cached(inv, lv_name, "move-unwell")
    assert origin.lvm is not None
    vg, vglv = origin.lvm.vg or "", f"{origin.lvm.vg}/{origin.lvm.lv}"
    parts = {d.name for d in pool_parts(inv, origin)}
    old = [pv for pv in inv.devices if pv.lvm is not None and pv.lvm.role == "pv" and set(pv.holders) & parts]
    named = [ssd_path] if isinstance(ssd_path, str) else list(ssd_path)
    if mirror_legs(inv, origin) and len(named) != 2:  # its mirror would be lost without a word
        raise RecipeError("move-mirror-needs-two", lv=vglv, count=len(named), next=[next_step("name-both-ssds")])
    for path in named:
        dev = find_device(inv, path)
        if dev is not None and any(pv.name == dev.name for pv in old):
            raise RecipeError("move-same-ssd", lv=vglv, device=path, next=[next_step("plan-instead", recipe=RESIZE)])
    size = round_up(size_bytes, LVM_EXTENT) if size_bytes is not None else current
    if not size:
        raise RecipeError("no-size")
    r = _remake(
        inv, origin, caching, current, size, named, mode=mode, policy=None, wipe=wipe, allow_partition=allow_partition
    )
    # The SSDs the old pool alone was on leave the VG once the new pool is attached.
    alone = [pv for pv in old if all(h in parts for h in pv.holders)]
    steps = (*r.steps, *release_steps(vg, alone, pre=(CachePool(lv=vglv, pool=r.pool),)))
    kept = [pv.display_path for pv in old if pv not in alone]
    to = " and ".join(r.attach.devices[n].path for n in range(1, len(r.attach.devices)))
    return replace(
        r.attach,
        kind=MOVE,
        space={**r.attach.space, "ssd_bytes": r.ssd_bytes(inv)},
        title=f"Move the cache of {vglv} to {to}" + (f" ({human_size(size)}, {r.spec.mode})"),
        devices=(*r.devices(inv), *(bind(pv, role) for pv, role in zip(alone, OLD_ROLES, strict=False))),
        steps=steps,
        layout_before=(r.before() + " on " + " and ".join(pv.display_path for pv in old),),
        layout_after=r.attach.layout_after + tuple(f"{pv.display_path}: free (out of VG {vg})" for pv in alone),
        notes=(
            "The cache is taken off first (dirty blocks are written back, which can take a while with a big "
            "writeback cache), then a pool on the new SSD is attached"
            + (", and only then does the old SSD leave the VG." if alone else "."),
            "The new cache starts empty and warms up again (D-WARM-1); the LV stays mounted and in use throughout.",
            "A roll back after step 1 leaves the LV without a cache (its data whole: the dirty blocks were written "
            "back); make one again with lvmcache-attach. lvm2's --cachesettings set on the old pool (such as "
            "migration_threshold) are not carried over.",
        )
        + tuple(f"{p} also holds other LVs of {vg}, so it stays in the VG." for p in kept)
        + (
            (
                "The new pool uses the smq policy. If lvm2 keeps its spare metadata LV (lvol0_pmspare) on the old "
                "SSD, vgreduce refuses to take it out and the plan stops there, the new cache attached: move the "
                "spare off with pvmove, then run vgreduce and pvremove.",
            )
            if alone
            else ("The new pool uses the smq policy.",)
        )
        + r.attach.notes[2:],
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
    check_name("VG", vg)
    check_name("LV", lv)
    if any(d.lvm is not None and d.lvm.vg == vg for d in inv.devices):
        raise RecipeError("vg-exists", vg=vg, next=[next_step("other-name"), next_step("plan-instead", recipe=ATTACH)])
    ssd_paths = [ssd_path] if isinstance(ssd_path, str) else list(ssd_path)
    if not 1 <= len(ssd_paths) <= 2:
        raise RecipeError("ssd-count", count=len(ssd_paths))
    named = [(hdd_path, find_device(inv, hdd_path))] + [(p, find_device(inv, p)) for p in ssd_paths]
    for path, dev in named:
        if dev is None:
            raise RecipeError("no-such-device", path=path, next=[next_step("see-devices")])
    devs = [d for _, d in named if d is not None]
    hdd, ssds = devs[0], devs[1:]
    if len({d.name for d in devs}) != len(devs):
        raise RecipeError("same-device-twice", paths=" and ".join(p for p, _ in named))
    destroys = []
    for dev in devs:
        check_fast_device(inv, dev, ssds[0] if dev is hdd else hdd, allow_partition=True)
        if dev.signature and not wipe:
            raise RecipeError(
                "holds-data",
                device=dev.display_path,
                signature=dev.signature,
                use="making it an LVM physical volume",
                next=[next_step("allow-wipe", device=dev.display_path)],
            )
        if dev.signature:
            destroys.append(f"{dev.display_path}: {dev.signature}")
    hp, sps = hdd.display_path, [d.display_path for d in ssds]
    create = [
        Step(
            f"pvcreate-{i}",
            ("pvcreate", "--yes", *(["--force"] if destroys else []), p),
            pre=(NotMounted(device=p),) + (() if destroys else (NoSignature(device=p),)),
            post=(Pv(device=p),),
            undo=(("pvremove", "--yes", p),),
        )
        for i, p in enumerate((hp, *sps), 1)
    ]
    create.append(
        Step(
            "vgcreate",
            ("vgcreate", vg, hp),
            post=(PvInVg(device=hp, vg=vg),),
            undo=(("vgremove", "--yes", vg),),
        )
    )
    for n, sp in enumerate(sps, 1):
        create.append(
            Step(
                "vgextend" if len(sps) == 1 else f"vgextend-{n}",
                ("vgextend", vg, sp),
                post=(PvInVg(device=sp, vg=vg),),
                undo=(("vgreduce", vg, sp),),
            )
        )
    create.append(
        Step(
            "lvcreate-origin",
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
        kind=NEW,
        title=f"New cached LV {vg}/{lv}: {hp} cached by {' and '.join(sps)}" + (" (mirrored)" if len(sps) == 2 else ""),
        devices=(bind(hdd, "origin"), *(bind(d, role) for d, role in zip(ssds, FAST_ROLES, strict=False))),
        steps=tuple(create) + attach.steps,
        layout_before=tuple(f"{p}: {state}" for p in (hp, *sps)),
        notes=(
            f"Make the file system on /dev/{vg}/{lv} after the cache is attached only if you accept "
            "that mkfs fills it with cold data (D-WARM-1); otherwise make it before step "
            f"{len(create) + 1} by applying the plan in two runs.",
        )
        + attach.notes[2:],
    )


# --- the recipes, as the registry knows them ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AttachOptions:
    lv: str = option("the LV to cache, as VG/LV", "lv")
    ssd: tuple[str, ...] = option(
        "the SSD (a whole disk, or a PV of the same VG); twice to mirror the cache pool (raid1)",
        "device",
        metavar="DEV",
        repeat=True,
    )
    size: int | None = option("cache size, e.g. 40g (or the recommendation's)", "size", default=None)
    mode: Mode | None = option("cache mode (default writethrough)", "choice", choices=MODES, default=None)
    chunk: int | None = option("chunk size, a multiple of 32k (default: lvm2's rule)", "size", default=None)
    metadata: int | None = option("metadata size (default: lvm2's rule)", "size", default=None)
    policy: str | None = option("dm-cache policy (default smq)", "choice", choices=("smq", "mq"), default=None)
    allow_partition: bool = option("use a partition of the SSD, not the whole disk", "flag")
    wipe: bool = option("the SSD holds data that may be destroyed", "flag")


def _attach(inv: Inventory, o: AttachOptions) -> Plan:
    if o.size is None:
        raise RecipeError("no-size", next=[next_step("give-size")])
    spec = CacheSpec(o.size, o.mode or "writethrough", o.chunk, o.metadata, o.policy or "smq")
    return lvmcache_attach(inv, o.lv, o.ssd, spec, wipe=o.wipe, allow_partition=o.allow_partition)


def _adopt(o: AttachOptions, cfg: CacheConfig) -> AttachOptions:
    """The recommendation's size, chunk, metadata and mode where the options give none."""
    check_backend(cfg, LVMCACHE)
    if cfg.mirrored_pool and len(o.ssd) != 2 and (o.mode or cfg.mode) == "writeback":
        raise RecipeError(
            "mirror-needs-two", count=len(o.ssd), next=[next_step("name-both-ssds"), next_step("writethrough")]
        )
    return replace(
        o,
        size=o.size or cfg.size_bytes,
        mode=o.mode or cfg.mode,
        chunk=o.chunk or cfg.chunk_size_bytes,
        metadata=o.metadata or cfg.metadata_size_bytes,
        policy=o.policy or cfg.policy,
    )


@dataclass(frozen=True, kw_only=True)
class UncacheOptions:
    lv: str = option("the cached LV, as VG/LV", "lv")
    keep_pool: bool = option("split the cache off but keep the cache pool LV", "flag")
    release_ssd: tuple[str, ...] = option(
        "then take this SSD out of the VG and remove its label (twice for a mirrored pool)",
        "device",
        metavar="DEV",
        repeat=True,
        default=(),
    )
    accept_data_loss: bool = option(ACCEPT_LOSS, "flag")


@dataclass(frozen=True, kw_only=True)
class NewOptions:
    hdd: str = option("the empty HDD for the new LV", "device", metavar="DEV")
    vg: str = option("the new VG's name", "name")
    lv: str = option("the new LV's name", "name")
    ssd: tuple[str, ...] = option("the SSD; twice to mirror the cache pool", "device", metavar="DEV", repeat=True)
    size: int = option("cache size", "size")
    mode: Mode = option("cache mode", "choice", choices=MODES, default="writethrough")
    wipe: bool = option("the disks hold data that may be destroyed", "flag")


@dataclass(frozen=True, kw_only=True)
class ModeOptions:
    lv: str = option("the cached LV, as VG/LV", "lv")
    mode: Mode = option("the mode to switch to", "choice", choices=MODES)


_JOIN = (
    Use("pvcreate", "ssd|ssd2"),
    Use("pvremove", "ssd|ssd2"),
    Use("vgextend", "ssd|ssd2"),
    Use("vgreduce", "ssd|ssd2"),
)
_POOL = (
    Use("lvcreate", "ssd"),
    Use("lvcreate-raid1", "ssd", "ssd2"),
    Use("lvremove"),
    Use("cache-pool"),
    Use("cache-attach"),
    Use("uncache"),
)
register(
    Recipe(
        ATTACH,
        "attach an lvmcache to an LV in place",
        "Attach a cache pool on an SSD to an existing LV: pvcreate, vgextend, lvcreate (data and metadata), "
        "lvconvert --type cache-pool, lvconvert --type cache.",
        AttachOptions,
        _attach,
        "makes",
        LVMCACHE,
        uses=_JOIN + _POOL,
        slow="lv",
        fast="ssd",
        adopt=_adopt,
        adopts="size, chunk, metadata, mode and policy",
    )
)
register(
    Recipe(
        UNCACHE,
        "remove an lvmcache (dirty blocks are flushed first)",
        "Flush and remove the cache of an LV (lvconvert --uncache), or keep the cache pool as an LV "
        "(lvconvert --splitcache).",
        UncacheOptions,
        lambda inv, o: lvmcache_uncache(
            inv, o.lv, keep_pool=o.keep_pool, release=o.release_ssd or None, accept_loss=o.accept_data_loss
        ),
        "removes",
        LVMCACHE,
        uses=(
            Use("uncache"),
            Use("splitcache"),
            Use("uncache-force"),
            Use("vgreduce-missing"),
            Use("activate"),
            *_JOIN,
        ),
    )
)
register(
    Recipe(
        NEW,
        "a new cached LV on an empty HDD and SSD",
        "Make both disks PVs of a new VG, an LV on all of the HDD, and attach a cache pool on the SSD.",
        NewOptions,
        lambda inv, o: lvmcache_new(inv, o.hdd, o.ssd, o.vg, o.lv, CacheSpec(o.size, mode=o.mode), wipe=o.wipe),
        "makes",
        LVMCACHE,
        uses=(
            Use("pvcreate", "origin|ssd|ssd2"),
            Use("pvremove", "origin|ssd|ssd2"),
            Use("vgcreate", "origin"),
            Use("vgremove"),
            Use("vgextend", "ssd|ssd2"),
            Use("vgreduce", "ssd|ssd2"),
            Use("lvcreate-whole", "origin"),
            *_POOL,
        ),
    )
)


@dataclass(frozen=True, kw_only=True)
class RepairOptions:
    lv: str = option("the cached LV whose mirrored cache lost one SSD, as VG/LV", "lv")
    ssd: str = option("the new SSD to rebuild the lost leg on (a whole disk, or a PV of the same VG)", "device")
    allow_partition: bool = option("use a partition of the SSD, not the whole disk", "flag")
    wipe: bool = option("the SSD holds data that may be destroyed", "flag")


register(
    Recipe(
        REPAIR,
        "repair a mirrored cache that lost one SSD, onto a new SSD",
        "Put the new SSD in the VG (pvcreate, vgextend), rebuild the missing leg of each raid1 LV of the cache onto "
        "it (lvconvert --repair; lvm2 copies the surviving leg in the background), and drop the PV that is gone "
        "(vgreduce --removemissing). The cache keeps serving; nothing is flushed.",
        RepairOptions,
        lambda inv, o: cache_repair(inv, o.lv, o.ssd, wipe=o.wipe, allow_partition=o.allow_partition),
        "changes",
        LVMCACHE,
        uses=(*_JOIN, Use("repair-leg", "ssd"), Use("vgreduce-missing")),
    )
)
register(
    Recipe(
        MODE,
        "switch an lvmcache between writethrough and writeback",
        "Switch a cached LV's mode with lvchange --cachemode; leaving writeback, lvm2 writes the dirty blocks back "
        "first.",
        ModeOptions,
        lambda inv, o: lvmcache_mode(inv, o.lv, o.mode),
        "changes",
        LVMCACHE,
        uses=(Use("cachemode"),),
    )
)


@dataclass(frozen=True, kw_only=True)
class ResizeOptions:
    lv: str = option("the cached LV, as VG/LV", "lv")
    size: int = option("the new cache size, e.g. 96g", "size")
    ssd: tuple[str, ...] = option(
        "the SSD the new pool goes on (default: the one(s) its pool is on now); twice for a mirrored pool",
        "device",
        metavar="DEV",
        repeat=True,
        default=(),
    )
    mode: Mode | None = option("cache mode (default: the cache's own)", "choice", choices=MODES, default=None)


register(
    Recipe(
        RESIZE,
        "grow or shrink an lvmcache (taken off and attached again at the new size)",
        "lvm2 cannot resize a cache pool in place: lvconvert --uncache writes the dirty blocks back and drops the "
        "pool, then a pool of the new size is made on the same SSD (lvcreate, lvconvert --type cache-pool) and "
        "attached (lvconvert --type cache). The LV stays in use; the new cache warms up again.",
        ResizeOptions,
        lambda inv, o: lvmcache_resize(inv, o.lv, o.size, ssd_path=o.ssd or None, mode=o.mode),
        "changes",
        LVMCACHE,
        uses=(Use("uncache"), *_POOL),
        remakes=True,
    )
)


@dataclass(frozen=True, kw_only=True)
class MoveOptions:
    lv: str = option("the cached LV, as VG/LV", "lv")
    ssd: tuple[str, ...] = option(
        "the new SSD the cache goes on (a whole disk, or a PV of the same VG); twice for a mirrored pool",
        "device",
        metavar="DEV",
        repeat=True,
    )
    size: int | None = option("the new cache's size (default: the size it has now)", "size", default=None)
    mode: Mode | None = option("cache mode (default: the cache's own)", "choice", choices=MODES, default=None)
    allow_partition: bool = option("use a partition of the SSD, not the whole disk", "flag")
    wipe: bool = option("the new SSD holds data that may be destroyed", "flag")


register(
    Recipe(
        MOVE,
        "move an lvmcache to another SSD (replace a worn one)",
        "lvm2 cannot move a cache pool that is in use: lvconvert --uncache writes the dirty blocks back and drops "
        "the pool, the new SSD joins the VG (pvcreate, vgextend), a pool of the same size is made on it and "
        "attached (lvcreate, lvconvert --type cache-pool, --type cache), and only then does each SSD the old pool "
        "alone was on leave the VG (vgreduce, pvremove), blank, to be pulled. The LV stays in use; the new cache "
        "warms up again.",
        MoveOptions,
        lambda inv, o: lvmcache_move(
            inv, o.lv, o.ssd, size_bytes=o.size, mode=o.mode, wipe=o.wipe, allow_partition=o.allow_partition
        ),
        "changes",
        LVMCACHE,
        uses=(Use("uncache"), *(Use(u.shape, f"{u.roles[0]}|old-ssd|old-ssd2") for u in _JOIN), *_POOL),
        remakes=True,
    )
)
