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
from dataclasses import dataclass

from advisor.advice.lvmrules import LVM_EXTENT
from advisor.disks.devices import Device, Inventory
from advisor.plan.checks import NotSegtype, Segtype
from advisor.plan.model import Plan, Step
from advisor.units import human_size
from recipes.common import NOTHING, RecipeError
from recipes.lvmcache import RAID_META, fast_side, remove_cache, uncached_lv

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
        raise RecipeError(f"writecache block size {block} is not 512 or 4096. {NOTHING}")
    if block > chosen and origin.fs_type:
        raise RecipeError(
            f"a {block}-byte writecache block would stop {vg}/{lv} from mounting: {why} "
            f"(lvmcache(7)). Use --block-size 512. {NOTHING}"
        )
    for name, value, top in (
        ("high_watermark", spec.high_watermark, 100),
        ("low_watermark", spec.low_watermark, 100),
        ("writeback_jobs", spec.writeback_jobs, 1 << 20),
    ):
        if value is not None and not 0 <= value <= top:
            raise RecipeError(f"{name} {value} is not between 0 and {top}. {NOTHING}")
    if spec.high_watermark is not None and spec.low_watermark is not None and spec.low_watermark > spec.high_watermark:
        raise RecipeError(
            f"low_watermark ({spec.low_watermark}) is above high_watermark ({spec.high_watermark}). {NOTHING}"
        )
    fast = fast_side(inv, ssd_path, origin, vg, wipe=wipe, allow_partition=allow_partition)
    size = -(-spec.size_bytes // LVM_EXTENT) * LVM_EXTENT
    if size <= 0:
        raise RecipeError(f"the writecache size must be above 0. {NOTHING}")
    need = size + fast.header_bytes() + (RAID_META if fast.mirrored else 0)
    if need > fast.size_bytes:
        which = "each SSD" if fast.mirrored else fast.paths[0]
        raise RecipeError(
            f"{which} ({human_size(fast.size_bytes)}) is too small for a {human_size(size)} writecache "
            f"({human_size(need)} with LVM's own space); choose a smaller --size. {NOTHING}"
        )

    vglv, cvol = f"{vg}/{lv}", f"{lv}_wcache"
    settings = spec.settings(block)
    steps = fast.join_steps(vg)
    steps.append(fast.lvcreate("lvcreate-cachevol", "cache volume", vg, cvol, size))
    steps.append(
        Step(
            "deactivate",
            f"deactivate {vg}/{cvol} (lvm2 attaches only an inactive cache volume)",
            ("lvchange", "--yes", "-an", f"{vg}/{cvol}"),
            pre=(NotSegtype(lv=vglv, segtype="writecache"),),
            seconds=1.0,
        )
    )
    steps.append(
        Step(
            "attach",
            f"attach it to {vglv} as a writecache ({settings}; in place, the data stays where it is)",
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
    release = " ".join(f"--release-ssd {p}" for p in fast.paths)
    notes = [
        f"dm-writecache caches writes only; reads of data not recently written still go to {vglv}'s disk.",
        f"Block size {block}: {why}.",
        f"Undo with `cachewise plan writecache-detach --lv {vglv} {release}` (flushes dirty blocks first).",
    ]
    if fast.mirrored:
        notes.append("The cache volume is LVM raid1 on both SSDs: either can fail without losing written blocks.")
    else:
        notes.append(
            "Every write waits on this SSD until written back: an SSD failure loses those blocks "
            "(T-MODE-1). Two SSDs (--ssd twice) mirror it."
        )
    return fast.attach_plan(
        "writecache-attach",
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
    inv: Inventory, lv_name: str, *, keep_cachevol: bool = False, release: str | Sequence[str] | None = None
) -> Plan:
    """Flush and remove the writecache of an LV (lvconvert --uncache; --splitcache keeps the
    cache volume), then release the SSD(s) named."""
    return remove_cache(inv, lv_name, "writecache", keep=keep_cachevol, release=release)
