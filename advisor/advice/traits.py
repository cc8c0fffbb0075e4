"""What the advice knows of each cache backend, extending the registry's descriptor
(advisor.backends): the SSD space it needs for the same hot data and how fast it promotes
(thesis.toml), whether it promotes whole chunks, how much of it may be dirty before writes wait
for the disk, whether it lets streams through, what it needs of the data (an LV, or the whole
device for its superblock), the tool and versions it needs, how lvm2 or make-bcache lays it out
on the SSD, and the tunables it is set up with. The choice reads these, never a backend's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from advisor.advice.config import BLOCK, CacheConfig
from advisor.advice.lvmrules import LVM_EXTENT, lvm_max_cache, lvm_space, round_down
from advisor.advice.thesis import Promotion, tables
from advisor.backends import BCACHE, LVMCACHE, WRITECACHE, Backend, BackendId
from advisor.disks.gate import BCACHE_BUCKET, BCACHE_MIN_CACHE, WRITECACHE_HIGH_WATERMARK
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF, KiB, MiB

DM_CACHE_CHUNK = 64 * KiB  # the unit dm-cache promotes, when the trace gave no chunk size
# bcache's defaults (T-SEQ-1) and its superblock, journal and bucket headroom on the cache device.
BCACHE_WRITEBACK_PERCENT = 10
BCACHE_WRITE_CUTOFF = 0.40  # bcache caches writes back only below 40% of its buckets in use (K-BC-2)
BCACHE_RESERVE = 0.02


def _bcache_limit(fast_bytes: int) -> int:
    return round_down(fast_bytes * (1 - BCACHE_RESERVE), MiB)


def _pool_space(size: int) -> int:
    return lvm_space(size)[2]  # data, metadata and its spare, the PV's label


def _cachevol_space(size: int) -> int:
    return size + LVM_EXTENT  # the cache volume and the PV's label and metadata area


def _same_space(size: int) -> int:
    return size


def _pool_tunables(cfg: CacheConfig, writecache_block: int) -> CacheConfig:
    chunk, meta, _ = lvm_space(cfg.size_bytes)
    return replace(cfg, chunk_size_bytes=chunk, metadata_size_bytes=meta, spare_metadata_bytes=meta, policy="smq")


def _writecache_tunables(cfg: CacheConfig, writecache_block: int) -> CacheConfig:
    return replace(cfg, writecache_block_size=writecache_block)


def _bcache_tunables(cfg: CacheConfig, writecache_block: int) -> CacheConfig:
    return replace(
        cfg,
        sequential_cutoff_bytes=BCACHE_SEQUENTIAL_CUTOFF,
        policy="lru",
        writeback_percent=BCACHE_WRITEBACK_PERCENT if cfg.mode == "writeback" else 0,
    )


@dataclass(frozen=True)
class Traits:
    backend: Backend  # the registry's descriptor these extend
    promotes_chunks: bool  # dm-cache caches whole chunks: its prediction follows the chunk curve
    # The share of the cache written data may hold before writes wait for the disk (bcache's 40%
    # cutoff, dm-writecache's high watermark); None: its writeback still writes every dirty
    # chunk to the disk, so writes count at the disk's speed (dm-cache, T-LVM-1, T-LVM-3).
    dirty_share: float | None
    dirty_findings: tuple[str, ...]
    bypasses_streams: bool  # streams go to the disk (bcache's sequential_cutoff; smq promotes nothing read once)
    on_lvm: bool  # the data must be an LV, and the plan can mirror the cache across two SSDs (raid1)
    own_superblock: bool  # it takes the whole backing device: data on it must be moved off and back
    tool: Literal["lvm2", "bcache_tools"]  # the package that sets it up (the Versions field; "" when missing)
    needs: tuple[tuple[Literal["lvm2", "kernel", "bcache_tools"], str], ...]  # (Versions field, least version)
    indexes_in_memory: bool  # dm-writecache keeps an entry per block in kernel memory
    size_unit: int  # sizes are whole units of this
    limit: Callable[[int], int]  # the largest cache a fast device of this size holds
    space: Callable[[int], int]  # the fast device's space a cache of this size takes
    tunables: Callable[[CacheConfig, int], CacheConfig]  # (config, dm-writecache block) -> set up
    living_with: str = ""  # what it costs to live with, for an alternative's trade-off
    # The kernel code a trace is replayed through for its prediction (advisor.workload.smq,
    # advisor.workload.bcachesim; Analysis.smq_*, Analysis.bcache_*), None: not replayed.
    replayed_by: Literal["smq", "bcachesim"] | None = None
    smallest: int = 0  # the smallest cache the kernel takes

    @property
    def id(self) -> BackendId:
        return self.backend.id

    @property
    def space_overhead(self) -> float:
        """SSD space per byte of hot data against bcache (T-SIZE-1, thesis.toml)."""
        return tables().space_overhead[self.id]

    @property
    def promotion(self) -> Promotion | None:
        """How read misses promote (thesis.toml); None: it caches no reads."""
        return tables().promotion.get(self.id) if self.backend.caches_reads else None


LVMCACHE_TRAITS = Traits(
    LVMCACHE,
    promotes_chunks=True,
    dirty_share=None,
    dirty_findings=("T-LVM-1", "T-LVM-3"),
    bypasses_streams=True,
    on_lvm=True,
    own_superblock=False,
    tool="lvm2",
    needs=(),
    indexes_in_memory=False,
    size_unit=LVM_EXTENT,
    limit=lvm_max_cache,
    space=_pool_space,
    tunables=_pool_tunables,
    living_with="in place, attached and removed with lvconvert",
    replayed_by="smq",
)
WRITECACHE_TRAITS = Traits(
    WRITECACHE,
    promotes_chunks=False,
    dirty_share=WRITECACHE_HIGH_WATERMARK / 100,
    dirty_findings=("K-WC-1",),
    bypasses_streams=False,
    on_lvm=True,
    own_superblock=False,
    tool="lvm2",
    needs=(("lvm2", "2.03"), ("kernel", "4.18")),
    indexes_in_memory=True,
    size_unit=LVM_EXTENT,
    limit=lvm_max_cache,
    space=_cachevol_space,
    tunables=_writecache_tunables,
)
BCACHE_TRAITS = Traits(
    BCACHE,
    promotes_chunks=False,
    dirty_share=BCACHE_WRITE_CUTOFF,
    dirty_findings=("K-BC-2",),
    bypasses_streams=True,
    on_lvm=False,
    own_superblock=True,
    tool="bcache_tools",
    needs=(),
    indexes_in_memory=False,
    size_unit=MiB,
    limit=_bcache_limit,
    space=_same_space,
    tunables=_bcache_tunables,
    living_with="bcache owns the whole backing device (its superblock); removal needs a detach",
    replayed_by="bcachesim",
    # more than 512 buckets of make-bcache's default bucket (super.c cache_alloc), in whole MiB
    smallest=-(-(BCACHE_MIN_CACHE + BCACHE_BUCKET) // MiB) * MiB,
)
# In the order the choice weighs them (of equal speed-ups, the first is chosen).
TRAITS: tuple[Traits, ...] = (LVMCACHE_TRAITS, BCACHE_TRAITS, WRITECACHE_TRAITS)


def traits(backend_id: str) -> Traits:
    """The advice's traits of this backend (KeyError for none)."""
    for t in TRAITS:
        if t.id == backend_id:
            return t
    raise KeyError(backend_id)


def warmup_unit(t: Traits, chunk: int | None) -> int:
    """What one promotion brings in: a dm-cache chunk (``chunk``, else its default), or a block."""
    return (chunk or DM_CACHE_CHUNK) if t.promotes_chunks else BLOCK
