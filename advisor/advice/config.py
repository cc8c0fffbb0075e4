"""What a recommendation sets up: the cache's configuration and what it predicts of its warm-up.

Plain data, apart from the recommendation's model (advisor/advice/model.py), so that the
recipes take a recommendation without loading the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.backends import BackendId as Backend
from advisor.backends import Mode, backend

BLOCK = 4096  # the modelled workload's block


# What a "can't judge yet" asks to record before asking again.
RECORD_LONGER = (
    "a longer window that covers the workload's whole cycle: a day, or a week with its nightly and weekly jobs"
)


@dataclass(frozen=True)
class Warmup:
    hot_blocks: int  # 4 KiB blocks of hot data the cache will hold
    reads_63: int  # read requests of the device until 63% of them are cached
    reads_95: int
    seconds_63: float | None  # at the measured (or declared) read rate
    seconds_95: float | None
    promotion_probability: float
    findings: tuple[str, ...]
    block_bytes: int = BLOCK  # what hot_blocks counts: 4 KiB blocks, or dm-cache's chunks
    # The same from a cache full of older data, which promotes more slowly (dm-cache) or not.
    promotion_probability_full: float | None = None
    reads_63_full: int | None = None
    seconds_63_full: float | None = None
    # The trace replayed through dm-cache's smq policy from an empty cache of this size: seconds
    # until its read hit ratio reached 63% of what it settled at (K-SMQ-1; None: not replayed).
    simulated_seconds_63: float | None = None


@dataclass(frozen=True)
class CacheConfig:
    backend: Backend
    mode: Mode
    size_bytes: int  # the cache's data area on the SSD
    effective_bytes: int  # hot data it holds, after the backend's overhead (T-SIZE-1)
    fast_space_bytes: int  # all SSD space used: data, metadata, spare metadata, PV label
    chunk_size_bytes: int | None = None
    metadata_size_bytes: int | None = None
    spare_metadata_bytes: int | None = None
    policy: str | None = None
    sequential_cutoff_bytes: int | None = None
    writeback_percent: int | None = None
    writecache_block_size: int | None = None
    # Of the reads (read hits over reads, as dm-cache's read_hits/read_misses and bcache's read
    # counters count them), from the trace's read curve; writes fill the cache as reads do.
    predicted_hit_ratio: float | None = None
    expected_speedup: float | None = None
    speedup_basis: str = ""
    warmup: Warmup | None = None
    needs_reformat: bool = False
    bounded_by_ssd: bool = False
    # The plan mirrors the cache on the two fast devices (LVM raid1): what makes writeback safe
    # on two SSDs that nothing mirrors yet (lvmcache and writecache only; bcache cannot).
    mirrored_pool: bool = False
    # Of the writes: writes to blocks the cache holds (None for dm-writecache, which takes every
    # write, and for a workload without writes).
    predicted_write_hit_ratio: float | None = None

    @property
    def label(self) -> str:
        return f"{backend(self.backend).label} {self.mode}"
