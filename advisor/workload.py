"""What a block trace says about caching it: footprint, mix, the LRU miss-ratio curve and the
hot-data ratio (L-SIZE-4: measure the real workload before sizing a cache)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from advisor import mrc
from advisor.traces import Requests, Trace

ANALYSIS_SCHEMA = "cachewise.analysis/1"
MIN_BLOCK = 4096
SIZE_BUCKETS = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20)


def to_blocks(requests: Requests, block_size: int) -> mrc.Blocks:
    """Split each request into the cache blocks it touches, in order."""
    offset = requests["offset"].astype(np.int64)
    length = np.maximum(requests["length"].astype(np.int64), 1)
    first = offset // block_size
    last = (offset + length - 1) // block_size
    counts = last - first + 1
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    blocks: mrc.Blocks = np.repeat(first, counts) + (np.arange(int(counts.sum()), dtype=np.int64) - starts)
    return blocks


@dataclass(frozen=True)
class Analysis:
    source: str
    source_format: str
    block_size: int
    requests: int
    block_accesses: int
    read_requests: int
    write_requests: int
    read_bytes: int
    write_bytes: int
    duration_s: float
    iops: float
    sequential_share: float
    size_histogram: dict[str, int]
    footprint_blocks: int
    footprint_bytes: int
    curve_mode: str
    curve_sample_rate: float
    curve_sizes_blocks: list[int]
    curve_hit_ratio: list[float]
    hot_shares: list[float]
    hot_footprint_fraction: list[float]
    hot_blocks: list[int]
    zipf_alpha: float | None
    lines: int
    skipped_lines: int
    bad_lines: int
    bad_examples: list[str]
    schema: str = ANALYSIS_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def hit_ratio_at(self, size_blocks: int) -> float:
        sizes = np.asarray(self.curve_sizes_blocks)
        i = int(np.searchsorted(sizes, size_blocks, side="right")) - 1
        return float(self.curve_hit_ratio[i]) if i >= 0 else 0.0


def _size_histogram(lengths: np.ndarray) -> dict[str, int]:
    edges = np.asarray(SIZE_BUCKETS)
    index = np.searchsorted(edges, lengths, side="left")
    counts = np.bincount(index, minlength=len(edges) + 1)
    labels = [f"<= {e // 1024} KiB" for e in SIZE_BUCKETS] + [f"> {SIZE_BUCKETS[-1] // 1024} KiB"]
    return {label: int(c) for label, c in zip(labels, counts, strict=True) if c}


def analyze(trace: Trace, block_size: int = MIN_BLOCK, mode: Literal["auto", "exact", "shards"] = "auto") -> Analysis:
    if block_size < 512 or block_size & (block_size - 1):
        raise ValueError(f"block size must be a power of two of at least 512 bytes, not {block_size}")
    req = trace.requests
    writes = req["write"].astype(bool)
    lengths = req["length"].astype(np.int64)
    offsets = req["offset"].astype(np.int64)
    sequential = float(np.mean(offsets[1:] == offsets[:-1] + lengths[:-1])) if len(req) > 1 else 0.0
    times = req["t"]
    duration = float(times.max() - times.min()) if len(req) else 0.0
    blocks = to_blocks(req, block_size)
    counts = mrc.block_counts(blocks)
    footprint = len(counts)
    curve = mrc.lru_curve(blocks, mrc.default_sizes(footprint), mode)
    hot = mrc.hot_data(counts)
    return Analysis(
        source=trace.path,
        source_format=trace.source_format,
        block_size=block_size,
        requests=len(req),
        block_accesses=len(blocks),
        read_requests=int((~writes).sum()),
        write_requests=int(writes.sum()),
        read_bytes=int(lengths[~writes].sum()),
        write_bytes=int(lengths[writes].sum()),
        duration_s=round(duration, 6),
        iops=round(len(req) / duration, 1) if duration > 0 else 0.0,
        sequential_share=round(sequential, 4),
        size_histogram=_size_histogram(lengths),
        footprint_blocks=footprint,
        footprint_bytes=footprint * block_size,
        curve_mode=curve.mode,
        curve_sample_rate=curve.rate,
        curve_sizes_blocks=[int(s) for s in curve.sizes],
        curve_hit_ratio=[round(float(h), 6) for h in curve.hit_ratio],
        hot_shares=list(hot.shares),
        hot_footprint_fraction=[round(f, 6) for f in hot.footprint_fraction],
        hot_blocks=list(hot.blocks_needed),
        zipf_alpha=mrc.zipf_exponent(counts),
        lines=trace.stats.lines,
        skipped_lines=trace.stats.skipped,
        bad_lines=trace.stats.bad,
        bad_examples=list(trace.stats.examples),
    )
