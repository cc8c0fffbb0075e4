"""What a block trace says about caching it: footprint, mix, the LRU miss-ratio curve and the
hot-data ratio (L-SIZE-4: measure the real workload before sizing a cache)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from advisor.workload import mrc
from advisor.workload.traces import (
    MSR,
    CsvLayout,
    Format,
    ImportStats,
    Requests,
    Trace,
    TraceError,
    cachewise_records,
    detect_format,
    iter_cachewise,
    load_trace,
    read_cachewise_meta,
)

ANALYSIS_SCHEMA = "cachewise.analysis/1"
MIN_BLOCK = 4096
STREAM_REQUESTS = 8_000_000  # longer cachewise traces are analysed in chunks, by SHARDS
SIZE_BUCKETS = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20)


# Block accesses analysed at once (8 bytes each, and a few arrays of them): a larger expansion
# means a trace of huge requests at a small block size.
MAX_ACCESSES = 200_000_000


def to_blocks(requests: Requests, block_size: int) -> mrc.Blocks:
    """Split each request into the cache blocks it touches, in order."""
    offset = requests["offset"].astype(np.int64)
    length = np.maximum(requests["length"].astype(np.int64), 1)
    first = offset // block_size
    last = (offset + length - 1) // block_size
    counts = last - first + 1
    if int(counts.sum()) > MAX_ACCESSES:
        raise TraceError(f"its {len(requests):,} requests make {int(counts.sum()):,} accesses of {block_size} bytes, "
                         f"more than the {MAX_ACCESSES:,} analysed at once; give a larger --block-size")
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


class _Summary:
    """Everything but the curve, accumulated chunk by chunk (bounded by the footprint)."""

    def __init__(self) -> None:
        self.requests = self.accesses = self.reads = self.writes = self.read_bytes = self.write_bytes = 0
        self.sequential = 0
        self.t_min, self.t_max = np.inf, -np.inf
        self.sizes = np.zeros(len(SIZE_BUCKETS) + 1, np.int64)
        self._ids = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._last_end: int | None = None

    def feed(self, req: Requests, blocks: mrc.Blocks) -> None:
        if not len(req):
            return
        writes = req["write"].astype(bool)
        lengths = req["length"].astype(np.int64)
        offsets = req["offset"].astype(np.int64)
        self.requests += len(req)
        self.accesses += len(blocks)
        self.writes += int(writes.sum())
        self.reads += int((~writes).sum())
        self.write_bytes += int(lengths[writes].sum())
        self.read_bytes += int(lengths[~writes].sum())
        ends = offsets + lengths
        self.sequential += int(np.count_nonzero(offsets[1:] == ends[:-1]))
        if self._last_end is not None and offsets[0] == self._last_end:
            self.sequential += 1
        self._last_end = int(ends[-1])
        self.t_min, self.t_max = min(self.t_min, float(req["t"].min())), max(self.t_max, float(req["t"].max()))
        self.sizes += np.bincount(np.searchsorted(np.asarray(SIZE_BUCKETS), lengths, side="left"),
                                  minlength=len(SIZE_BUCKETS) + 1)
        ids, counts = np.unique(blocks, return_counts=True)
        merged, index = np.unique(np.concatenate([self._ids, ids]), return_inverse=True)
        self._counts = np.bincount(index, weights=np.concatenate([self._counts, counts]),
                                   minlength=len(merged)).astype(np.int64)
        self._ids = merged

    def counts(self) -> npt.NDArray[np.int64]:
        return self._counts

    def histogram(self) -> dict[str, int]:
        labels = [f"<= {e // 1024} KiB" for e in SIZE_BUCKETS] + [f"> {SIZE_BUCKETS[-1] // 1024} KiB"]
        return {label: int(c) for label, c in zip(labels, self.sizes, strict=True) if c}


def _check_block_size(block_size: int) -> None:
    if block_size < 512 or block_size & (block_size - 1):
        raise ValueError(f"block size must be a power of two of at least 512 bytes, not {block_size}")


def _result(summary: _Summary, curve: mrc.Curve, block_size: int, source: str, source_format: str,
            stats: ImportStats) -> Analysis:
    counts = summary.counts()
    hot = mrc.hot_data(counts)
    duration = summary.t_max - summary.t_min if summary.requests else 0.0
    return Analysis(
        source=source,
        source_format=source_format,
        block_size=block_size,
        requests=summary.requests,
        block_accesses=summary.accesses,
        read_requests=summary.reads,
        write_requests=summary.writes,
        read_bytes=summary.read_bytes,
        write_bytes=summary.write_bytes,
        duration_s=round(duration, 6),
        iops=round(summary.requests / duration, 1) if duration > 0 else 0.0,
        sequential_share=round(summary.sequential / max(summary.requests - 1, 1), 4),
        size_histogram=summary.histogram(),
        footprint_blocks=len(counts),
        footprint_bytes=len(counts) * block_size,
        curve_mode=curve.mode,
        curve_sample_rate=curve.rate,
        curve_sizes_blocks=[int(s) for s in curve.sizes],
        curve_hit_ratio=[round(float(h), 6) for h in curve.hit_ratio],
        hot_shares=list(hot.shares),
        hot_footprint_fraction=[round(f, 6) for f in hot.footprint_fraction],
        hot_blocks=list(hot.blocks_needed),
        zipf_alpha=mrc.zipf_exponent(counts),
        lines=stats.lines,
        skipped_lines=stats.skipped,
        bad_lines=stats.bad,
        bad_examples=list(stats.examples),
    )


def analyze(trace: Trace, block_size: int = MIN_BLOCK, mode: Literal["auto", "exact", "shards"] = "auto") -> Analysis:
    """Analyse a trace held in memory."""
    _check_block_size(block_size)
    blocks = to_blocks(trace.requests, block_size)
    summary = _Summary()
    summary.feed(trace.requests, blocks)
    curve = mrc.lru_curve(blocks, mrc.default_sizes(len(summary.counts())), mode)
    return _result(summary, curve, block_size, trace.path, trace.source_format, trace.stats)


def analyze_stream(chunks: Iterable[Requests], expected_requests: int, block_size: int, source: str,
                   source_format: str, stats: ImportStats) -> Analysis:
    """Analyse a trace too long to hold, chunk by chunk, with a SHARDS curve: memory follows
    the footprint and the sample, not the trace."""
    _check_block_size(block_size)
    summary = _Summary()
    sampler: mrc.ShardsSampler | None = None
    for chunk in chunks:
        blocks = to_blocks(chunk, block_size)
        if sampler is None:
            per_request = len(blocks) / max(len(chunk), 1)
            sampler = mrc.ShardsSampler(mrc.shards_rate(int(expected_requests * per_request)))
        summary.feed(chunk, blocks)
        sampler.feed(blocks)
    if sampler is None:
        raise ValueError("the trace holds no requests")
    curve = sampler.curve(mrc.default_sizes(len(summary.counts())))
    return _result(summary, curve, block_size, source, source_format, stats)


def analyze_path(path: Path, block_size: int = MIN_BLOCK, mode: Literal["auto", "exact", "shards"] = "auto",
                 fmt: Format = "auto", layout: CsvLayout = MSR) -> tuple[Analysis, dict[str, Any]]:
    """Analyse a trace file of any supported format: (analysis, the trace's own metadata).
    Long cachewise traces are read in chunks with a SHARDS curve, in bounded memory."""
    if fmt == "auto" and path.is_file():
        fmt = detect_format(path)
    records = cachewise_records(path) if fmt == "cachewise" else 0
    if records > STREAM_REQUESTS and mode != "exact":
        stats = ImportStats(lines=records, requests=records)
        return (analyze_stream(iter_cachewise(path), records, block_size, str(path), fmt, stats),
                read_cachewise_meta(path))
    trace = load_trace(path, fmt, layout)
    return analyze(trace, block_size, mode), trace.meta
