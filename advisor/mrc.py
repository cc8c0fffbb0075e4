"""Miss-ratio curves, hot-data ratios and Zipf fits from a sequence of cache-block accesses.

Pure domain code over numpy arrays of block numbers:
- exact LRU stack distances (Mattson) with a Fenwick tree over time positions, O(n log n),
  compiled with numba;
- SHARDS spatial sampling (Waldspurger et al., FAST '15) with its count correction
  (SHARDS_adj): blocks whose hash falls under a threshold are kept, their distances scaled by
  1/rate, and the first bucket corrected by the difference between the expected and the
  actual number of sampled references;
- the hot-data ratio counted exactly from per-block access counts (sampling the hottest
  blocks by hash is badly wrong for skewed workloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from numba import njit

Blocks = npt.NDArray[np.int64]
Mode = Literal["exact", "shards"]

HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads adjacent blocks
HASH_BITS = 24
SHARDS_TARGET_SAMPLES = 400_000
SHARDS_MIN_RATE = 0.001
EXACT_LIMIT = 20_000_000  # block accesses; beyond this, auto mode samples


@njit(cache=True, nogil=True)
def _stack_distances(dense: npt.NDArray[np.int64], distinct: int) -> npt.NDArray[np.int64]:  # pragma: no cover - compiled
    n = dense.shape[0]
    last = np.full(distinct, -1, np.int64)
    tree = np.zeros(n + 1, np.int32)
    out = np.empty(n, np.int64)
    for t in range(n):
        b = dense[t]
        p = last[b]
        if p < 0:
            out[t] = -1
        else:
            # Distinct blocks touched since p = marks (one per block, at its last access) in (p, t).
            s = 0
            i = t
            while i > 0:
                s += tree[i]
                i -= i & -i
            i = p + 1
            while i > 0:
                s -= tree[i]
                i -= i & -i
            out[t] = s
            i = p + 1
            while i <= n:
                tree[i] -= 1
                i += i & -i
        i = t + 1
        while i <= n:
            tree[i] += 1
            i += i & -i
        last[b] = t
    return out


def stack_distances(blocks: Blocks) -> npt.NDArray[np.int64]:
    """LRU stack distance of every access (-1 for a first access)."""
    _, dense = np.unique(blocks, return_inverse=True)
    return _stack_distances(dense.astype(np.int64), int(dense.max()) + 1 if dense.size else 0)


def shards_hash(blocks: Blocks) -> npt.NDArray[np.uint64]:
    return (blocks.astype(np.uint64) * HASH_MULTIPLIER) >> np.uint64(64 - HASH_BITS)


def shards_threshold(rate: float) -> int:
    return max(1, round(rate * (1 << HASH_BITS)))


@dataclass(frozen=True)
class Curve:
    """Hit ratio at each cache size (in blocks) for LRU."""

    mode: Mode
    sizes: npt.NDArray[np.int64]
    hit_ratio: npt.NDArray[np.float64]
    accesses: int
    rate: float = 1.0

    def at(self, size_blocks: int) -> float:
        i = int(np.searchsorted(self.sizes, size_blocks, side="right")) - 1
        return float(self.hit_ratio[i]) if i >= 0 else 0.0


def _curve_from_distances(distances: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], total: float,
                          scale: float = 1.0, first_bucket_adjust: float = 0.0) -> npt.NDArray[np.float64]:
    reused = np.sort(distances[distances >= 0])
    if scale != 1.0:
        reused = np.floor(reused * scale).astype(np.int64)
    # An access with stack distance d hits in every LRU cache of more than d blocks.
    hits = np.searchsorted(reused, sizes, side="left").astype(np.float64)
    hits = np.where(sizes > 0, hits + first_bucket_adjust, 0.0)
    return np.clip(hits / total, 0.0, 1.0) if total > 0 else np.zeros(len(sizes))


def exact_curve(blocks: Blocks, sizes: npt.NDArray[np.int64]) -> Curve:
    d = stack_distances(blocks)
    return Curve("exact", sizes, _curve_from_distances(d, sizes, float(len(blocks))), len(blocks))


def shards_rate(accesses: int) -> float:
    return float(min(1.0, max(SHARDS_MIN_RATE, SHARDS_TARGET_SAMPLES / max(accesses, 1))))


class ShardsSampler:
    """Streams chunks of block accesses and keeps the spatially sampled ones (bounded memory)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.threshold = np.uint64(shards_threshold(rate))
        self.total = 0
        self._kept: list[Blocks] = []

    def feed(self, blocks: Blocks) -> None:
        self.total += len(blocks)
        self._kept.append(blocks[shards_hash(blocks) < self.threshold])

    def curve(self, sizes: npt.NDArray[np.int64]) -> Curve:
        sampled = np.concatenate(self._kept) if self._kept else np.zeros(0, np.int64)
        real_rate = float(self.threshold) / (1 << HASH_BITS)
        d = stack_distances(sampled)
        expected = self.total * real_rate
        # SHARDS_adj: the sample holds more or fewer references than the rate promises; the
        # difference is credited to the smallest distances (where the paper puts it).
        adjust = expected - len(sampled)
        hit = _curve_from_distances(d, sizes, expected, scale=1.0 / real_rate, first_bucket_adjust=adjust)
        return Curve("shards", sizes, hit, self.total, real_rate)


def default_sizes(footprint_blocks: int, points: int = 60) -> npt.NDArray[np.int64]:
    """Cache sizes from 0.1% to 100% of the footprint, spaced evenly on a log scale."""
    if footprint_blocks <= 0:
        return np.zeros(0, np.int64)
    raw = np.geomspace(max(footprint_blocks * 0.001, 1), footprint_blocks, points)
    return np.unique(np.maximum(1, np.round(raw)).astype(np.int64))


def lru_curve(blocks: Blocks, sizes: npt.NDArray[np.int64], mode: Literal["auto", "exact", "shards"] = "auto",
              rate: float | None = None) -> Curve:
    if mode == "auto":
        mode = "exact" if len(blocks) <= EXACT_LIMIT else "shards"
    if mode == "exact":
        return exact_curve(blocks, sizes)
    sampler = ShardsSampler(rate or shards_rate(len(blocks)))
    sampler.feed(blocks)
    return sampler.curve(sizes)


@dataclass(frozen=True)
class HotData:
    """The fraction of the footprint that serves each share of the accesses."""

    shares: tuple[float, ...]
    footprint_fraction: tuple[float, ...]
    blocks_needed: tuple[int, ...]


def block_counts(blocks: Blocks) -> npt.NDArray[np.int64]:
    _, counts = np.unique(blocks, return_counts=True)
    return counts.astype(np.int64)


def hot_data(counts: npt.NDArray[np.int64], shares: tuple[float, ...] = (0.8, 0.9, 0.95, 0.99)) -> HotData:
    ordered = np.sort(counts)[::-1]
    cumulative = np.cumsum(ordered)
    total = cumulative[-1] if len(cumulative) else 0
    needed = tuple(int(np.searchsorted(cumulative, share * total, side="left")) + 1 if total else 0 for share in shares)
    unique = len(ordered)
    return HotData(shares, tuple(n / unique if unique else 0.0 for n in needed), needed)


def zipf_exponent(counts: npt.NDArray[np.int64], min_count: int = 5, max_ranks: int = 10_000) -> float | None:
    """Least-squares slope of log(frequency) against log(rank) over the well-sampled head."""
    ordered = np.sort(counts)[::-1]
    head = ordered[(ordered >= min_count)][:max_ranks]
    if len(head) < 10:
        return None
    ranks = np.arange(1, len(head) + 1, dtype=np.float64)
    slope = np.polyfit(np.log(ranks), np.log(head.astype(np.float64)), 1)[0]
    return float(-slope)
