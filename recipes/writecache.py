"""dm-writecache recipes (lvm2 ``--type writecache``): attach a cache volume to an LV in place,
detach it with the flush shown.

dm-writecache caches writes only: reads of data not just written go to the slow device. lvm2
attaches it from a "cachevol", an ordinary LV on the SSD that must be inactive when attached
(lvconvert refuses an active one: "LV vg/fast must be inactive to attach"). With two SSDs the
cachevol is LVM raid1 across both (lvmcache(7), "RAID1 cache device").

The writecache block size (512 or 4096) must not exceed the file system's: an XFS made with
512-byte sectors fails to mount through a 4096-byte writecache (lvmcache(7)). It is chosen
from the file system's block size as blkid reports it (XFS: its sector size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.advice.config import CacheConfig
from advisor.advice.lvmrules import LVM_EXTENT
from advisor.backends import WRITECACHE
from advisor.disks.devices import Device, Inventory
from advisor.disks.gate import WRITECACHE_HIGH_WATERMARK, writecache_memory
from advisor.errors import codes, next_step
from advisor.plan.checks import NotSegtype, Segtype
from advisor.plan.language import Use
from advisor.plan.model import Plan, Step
from advisor.units import human_size
from recipes.common import ACCEPT_LOSS, RecipeError, check_backend
from recipes.lvm import RAID_META, fast_side, remove_cache, too_small, uncached_lv
from recipes.lvmcache import UNDO
from recipes.registry import Recipe, option, register

ATTACH, DETACH = "writecache-attach", WRITECACHE.remover

codes(
    {
        "bad-writecache-block": "writecache block size {block} is not 512 or 4096",
        "writecache-block-too-big": "a {block}-byte writecache block would stop {lv} from mounting: {why} "
        "(lvmcache(7))",
        "bad-setting": "{name} {value} is not between 0 and {top}",
        "watermarks-inverted": "low_watermark ({low}) is above high_watermark ({high})",
        "bad-size": "the cache size must be above 0",
    }
)

BLOCK_SIZES = (512, 4096)


@dataclass(frozen=True)
class WritecacheSpec:
    size_bytes: int
    block_size: int | None = None  # default: from the file system (block_size_for)
    high_watermark: int | None = None  # percent; lvm2's default (50) when None
    low_watermark: int | None = None  # percent; lvm2's default (45) when None
    writeback_jobs: int | None = None

    def settings(self, block_size: int) -> str:
        """The --cachesettings string."""
        parts = [f"block_size={block_size}"]
        for name in ("high_watermark", "low_watermark", "writeback_jobs"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        return " ".join(parts)


def block_size_for(origin: Device) -> tuple[int, str]:
    """The writecache block size for this LV and why: 512 when its file system uses blocks (XFS:
    sectors) smaller than 4 KiB or the LV has 512-byte logical sectors and a file system whose
    block size is unknown; else 4096, lvm2's default and the faster one."""
    fs_block = origin.fs_block_size
    if origin.fs_type and fs_block:
        if fs_block < 4096:
            return (
                512,
                f"its {origin.fs_type} uses {fs_block}-byte {'sectors' if origin.fs_type == 'xfs' else 'blocks'}",
            )
        return 4096, f"its {origin.fs_type} uses {fs_block}-byte {'sectors' if origin.fs_type == 'xfs' else 'blocks'}"
    if origin.fs_type:
        return 512, f"the block size of its {origin.fs_type} is unknown, and 512 mounts whatever it is"
    return 4096, "it holds no file system yet (make it after attaching)"


def writecache_attach(
    inv: Inventory,
    lv_name: str,
    ssd_path: str | Sequence[str],
    spec: WritecacheSpec,
    *,
    wipe: bool = False,
    allow_partition: bool = False,
) -> Plan:
    """Attach a dm-writecache on ``ssd_path`` (one SSD, or two mirrored) to the LV ``lv_name``."""
    origin, vg, lv = uncached_lv(inv, lv_name)
    chosen, why = block_size_for(origin)
    block = spec.block_size or chosen
    if block not in BLOCK_SIZES:
        raise RecipeError("bad-writecache-block", block=block)
    if block > chosen and origin.fs_type:
        raise RecipeError(
            "writecache-block-too-big", block=block, lv=f"{vg}/{lv}", why=why, next=[next_step("writecache-block-512")]
        )
    for name, value, top in (
        ("high_watermark", spec.high_watermark, 100),
        ("low_watermark", spec.low_watermark, 100),
        ("writeback_jobs", spec.writeback_jobs, 1 << 20),
    ):
        if value is not None and not 0 <= value <= top:
            raise RecipeError("bad-setting", name=name, value=value, top=top)
    if spec.high_watermark is not None and spec.low_watermark is not None and spec.low_watermark > spec.high_watermark:
        raise RecipeError("watermarks-inverted", low=spec.low_watermark, high=spec.high_watermark)
    fast = fast_side(inv, ssd_path, origin, vg, wipe=wipe, allow_partition=allow_partition)
    size = -(-spec.size_bytes // LVM_EXTENT) * LVM_EXTENT
    if size <= 0:
        raise RecipeError("bad-size")
    need = size + fast.header_bytes() + (RAID_META if fast.mirrored else 0)
    if need > fast.size_bytes:
        raise too_small(fast, f"a {human_size(size)} writecache", need)

    high = spec.high_watermark if spec.high_watermark is not None else WRITECACHE_HIGH_WATERMARK
    vglv, cvol = f"{vg}/{lv}", f"{lv}_wcache"
    settings = spec.settings(block)
    steps = fast.join_steps(vg)
    steps.append(fast.lvcreate("lvcreate-cachevol", vg, cvol, size))
    steps.append(
        Step(
            "deactivate",
            ("lvchange", "--yes", "-an", f"{vg}/{cvol}"),
            pre=(NotSegtype(lv=vglv, segtype="writecache"),),
            seconds=1.0,
        )
    )
    steps.append(
        Step(
            "attach",
            (
                "lvconvert",
                "--yes",
                "--type",
                "writecache",
                "--cachevol",
                f"{vg}/{cvol}",
                "--cachesettings",
                settings,
                vglv,
            ),
            pre=(NotSegtype(lv=vglv, segtype="writecache"),),
            post=(Segtype(lv=vglv, segtype="writecache"),),
            undo=(("lvconvert", "--yes", "--splitcache", vglv),),
            seconds=3.0,
        )
    )
    notes = [
        f"dm-writecache caches writes only; reads of data not recently written still go to {vglv}'s disk.",
        f"Block size {block}: {why}.",
        f"It starts writing back when {high}% of its blocks are in use, so up to "
        f"{human_size(size * high // 100)} of written data may wait on the SSD before the disk has it; its "
        f"entries take about {human_size(writecache_memory(size, block))} of kernel memory.",
        UNDO,
    ]
    if fast.mirrored:
        notes.append("The cache volume is LVM raid1 on both SSDs: either can fail without losing written blocks.")
    else:
        notes.append(
            "Every write waits on this SSD until written back: an SSD failure loses those blocks "
            "(T-MODE-1). A second SSD would mirror it."
        )
    return fast.attach_plan(
        ATTACH,
        f"{human_size(size)}{{mirror}} dm-writecache",
        origin,
        steps,
        (
            f"{vglv}: writecache LV, {human_size(origin.size_bytes)}",
            f"{vg}/{cvol}: cache volume {human_size(size)}, block {block}",
        ),
        {"cache_bytes": size, "ssd_bytes_used": need, "ssd_bytes": fast.size_bytes},
        notes,
    )


def writecache_detach(
    inv: Inventory,
    lv_name: str,
    *,
    keep_cachevol: bool = False,
    release: str | Sequence[str] | None = None,
    accept_loss: bool = False,
) -> Plan:
    """Flush and remove the writecache of an LV (lvconvert --uncache; --splitcache keeps the
    cache volume), then release the SSD(s) named. A writecache whose SSD is gone is taken off
    without what it held (recipes/lvm.py), only with ``accept_loss``."""
    return remove_cache(inv, lv_name, WRITECACHE, DETACH, keep=keep_cachevol, release=release, accept_loss=accept_loss)


# --- the recipes, as the registry knows them ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AttachOptions:
    lv: str = option("the LV to cache, as VG/LV", "lv")
    ssd: tuple[str, ...] = option(
        "the SSD (a whole disk, or a PV of the same VG); twice to mirror the cache volume (raid1)",
        "device",
        metavar="DEV",
        repeat=True,
    )
    size: int | None = option("cache size, e.g. 40g (or the recommendation's)", "size", default=None)
    block_size: int | None = option(
        "writecache block size (default: from the file system)", "number", choices=BLOCK_SIZES, default=None
    )
    high_watermark: int | None = option("start writeback at this fill", "number", metavar="PERCENT", default=None)
    low_watermark: int | None = option("stop writeback at this fill", "number", metavar="PERCENT", default=None)
    writeback_jobs: int | None = option("blocks in flight during writeback", "number", metavar="N", default=None)
    allow_partition: bool = option("use a partition of the SSD, not the whole disk", "flag")
    wipe: bool = option("the SSD holds data that may be destroyed", "flag")


def _attach(inv: Inventory, o: AttachOptions) -> Plan:
    if o.size is None:
        raise RecipeError("no-size", next=[next_step("give-size")])
    spec = WritecacheSpec(o.size, o.block_size, o.high_watermark, o.low_watermark, o.writeback_jobs)
    return writecache_attach(inv, o.lv, o.ssd, spec, wipe=o.wipe, allow_partition=o.allow_partition)


def _adopt(o: AttachOptions, cfg: CacheConfig) -> AttachOptions:
    """The recommendation's size and block size where the options give none."""
    check_backend(cfg, WRITECACHE)
    return replace(o, size=o.size or cfg.size_bytes, block_size=o.block_size or cfg.writecache_block_size)


@dataclass(frozen=True, kw_only=True)
class DetachOptions:
    lv: str = option("the LV with the writecache, as VG/LV", "lv")
    keep_cachevol: bool = option("split the cache off but keep its volume", "flag")
    release_ssd: tuple[str, ...] = option(
        "then take this SSD out of the VG and remove its label (twice for a mirrored one)",
        "device",
        metavar="DEV",
        repeat=True,
        default=(),
    )
    accept_data_loss: bool = option(ACCEPT_LOSS, "flag")


_JOIN = (
    Use("pvcreate", "ssd|ssd2"),
    Use("pvremove", "ssd|ssd2"),
    Use("vgextend", "ssd|ssd2"),
    Use("vgreduce", "ssd|ssd2"),
)
register(
    Recipe(
        ATTACH,
        "attach a dm-writecache (caches writes only) to an LV",
        "Attach a dm-writecache on an SSD (or mirrored on two) to an existing LV in place: pvcreate, vgextend, "
        "lvcreate (the cache volume, raid1 on two SSDs), lvchange -an, lvconvert --type writecache --cachevol. The "
        "block size (512 or 4096) follows the file system's, so that it still mounts.",
        AttachOptions,
        _attach,
        "makes",
        WRITECACHE,
        uses=(
            *_JOIN,
            Use("lvcreate", "ssd"),
            Use("lvcreate-raid1", "ssd", "ssd2"),
            Use("lvremove"),
            Use("deactivate"),
            Use("writecache-attach"),
            Use("splitcache"),
        ),
        slow="lv",
        fast="ssd",
        adopt=_adopt,
        adopts="size and block size",
        reads_fs_block_size=True,
    )
)
register(
    Recipe(
        DETACH,
        "remove a dm-writecache (dirty blocks are flushed first)",
        "Flush and remove the writecache of an LV (lvconvert --uncache), or keep the cache volume as an LV "
        "(lvconvert --splitcache).",
        DetachOptions,
        lambda inv, o: writecache_detach(
            inv, o.lv, keep_cachevol=o.keep_cachevol, release=o.release_ssd or None, accept_loss=o.accept_data_loss
        ),
        "removes",
        WRITECACHE,
        uses=(
            Use("uncache"),
            Use("splitcache"),
            Use("uncache-force"),
            Use("vgreduce-missing"),
            Use("deactivate"),
            Use("activate"),
            *_JOIN,
        ),
    )
)
